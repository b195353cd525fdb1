"""sparkwax: Bytewax-style per-key stateful logic, tested offline, run on Spark.

>>> import sparkwax as sw
>>> sw.RETAIN, sw.DISCARD
(False, True)

The Spark entry points (``stateful``, ``stateful_batch``, ``connect``, ``join``,
``split_late``, ``value_fields``, ``value_struct``, ``local_session``, ``start``,
``finish``, ``follow``, ``read_state``, ``rescale``, ``seed_frame``) import pyspark on first use, so ``import sparkwax`` works
without it; type checkers and IDEs see them through ``TYPE_CHECKING`` imports.
"""

from .errors import (BuilderError, CallbackError, CheckpointError, CheckpointInUseError,
                     ConfigError, InputError,
                     LogicError, LostStateWarning, NotifyAtError, RescaleError,
                     ReturnValueError, SchemaError, SnapshotError, SparkwaxError)
from .clock import Clock, current_clock, now, processing_now
from .logic import DISCARD, RETAIN, Builder, StatefulBatchLogic, StatefulLogic
from ._ops.rebuild import task_errors
from .step import Step, StepOptions
from ._driver.chain import chain
from .timers import EventTime, ProcessingTime
from .recovery import encode_snapshot

__version__ = "0.1.0"

import os as _os

if _os.environ.get("SPARKWAX_FAILURE_FILE"):  # under `sparkwax submit`: its short failure block
    from ._ops.failure import install_hook as _install_hook
    _install_hook()

_ENGINE_NAMES = ("connect", "finish", "follow", "local_session", "read_state", "rescale",
                 "seed_frame", "split_late", "start", "stateful", "stateful_batch",
                 "value_fields", "value_struct")
_FRAME_NAMES = ("join",)

from typing import TYPE_CHECKING as _TYPE_CHECKING, Any as _Any, Callable as _Callable
from typing import List as _List, NoReturn as _NoReturn

if _TYPE_CHECKING:  # IDEs and type checkers see the real functions; at run time,
    # __getattr__ below imports them (and pyspark) on first use.
    from .engine import (connect as connect, finish as finish, follow as follow,
                         local_session as local_session, read_state as read_state,
                         rescale as rescale, seed_frame as seed_frame,
                         split_late as split_late, start as start,
                         stateful as stateful, stateful_batch as stateful_batch,
                         value_fields as value_fields, value_struct as value_struct)
    from .frames import join as join

__all__ = [  # a literal list (sorted), so that type checkers read it (test_exports pins it)
    "Builder", "BuilderError", "CallbackError", "CheckpointError", "CheckpointInUseError",
    "Clock", "ConfigError",
    "DISCARD", "EventTime", "InputError", "LogicError", "LostStateWarning", "NotifyAtError",
    "ProcessingTime", "RETAIN", "RescaleError", "ReturnValueError", "SchemaError",
    "SnapshotError", "SparkwaxError", "StatefulBatchLogic", "StatefulLogic", "Step",
    "StepOptions", "chain", "connect", "current_clock", "encode_snapshot", "finish", "follow",
    "join", "local_session", "now", "processing_now", "read_state", "rescale", "seed_frame",
    "split_late", "start",
    "stateful", "stateful_batch", "task_errors", "value_fields", "value_struct",
]


def __getattr__(name: str) -> _Any:
    if name in _ENGINE_NAMES or name in _FRAME_NAMES:
        try:
            from . import engine, frames
        except ImportError as error:  # no pyspark: fail where the function is used
            return _needs_pyspark(name, error)
        return getattr(engine if name in _ENGINE_NAMES else frames, name)
    raise AttributeError(f"module 'sparkwax' has no attribute {name!r}")


def __dir__() -> _List[str]:
    return sorted({*globals(), *_ENGINE_NAMES, *_FRAME_NAMES})


def _needs_pyspark(name: str, error: ImportError) -> _Callable[..., _NoReturn]:
    """A stand-in for a Spark entry point where pyspark cannot be imported
    (``__all__`` is the same everywhere, so ``from sparkwax import *`` works)."""
    def unavailable(*args: _Any, **kwargs: _Any) -> _NoReturn:
        raise ConfigError(f"sparkwax.{name} needs pyspark, which cannot be imported here "
                          f"({error}); pip install 'sparkwax[spark]'") from error
    unavailable.__name__ = unavailable.__qualname__ = name
    return unavailable
