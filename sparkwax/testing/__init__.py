"""Offline testing: run a logic in-process with Spark's semantics.

>>> from sparkwax.testing import Batch, Eof, run
>>> from sparkwax.testing.reference import Counter
>>> run(Counter, [Batch([("a", 1), ("a", 2)]), Eof()]).by_key
{'a': [1, 2]}

``check_logic`` and ``strategies`` need hypothesis (``pip install
sparkwax[test]``); they load on first use. ``replay`` (run the micro-batches
a checkpoint ran and compare them with its sink) needs Spark.
"""

from .checkpoint_replay import ReplayResult, replay
from .flow import run_flow
from .bounded import run_bounded
from .result import RunResult
from .runner import Runner, run
from .script import Batch, Crash, Eof, Script, ScriptStep, Tick, describe

from typing import TYPE_CHECKING as _TYPE_CHECKING, Any as _Any

if _TYPE_CHECKING:  # type checkers see check_logic; at run time __getattr__ loads it
    from .strategies.logic_check import check_logic as check_logic

__all__ = [  # a sorted list display, so that type checkers read it (test_exports)
    "Batch", "Crash", "Eof", "ReplayResult", "RunResult", "Runner", "Script", "ScriptStep",
    "Tick", "check_logic", "describe", "replay", "run", "run_bounded", "run_flow",
]


def __getattr__(name: str) -> _Any:
    if name == "check_logic":
        from .strategies.logic_check import check_logic

        return check_logic
    raise AttributeError(f"module 'sparkwax.testing' has no attribute {name!r}")
