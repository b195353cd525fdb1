"""Several stateful steps in one streaming query, offline: each step's
emits, re-keyed, are the next step's items in the same micro-batch.

On Spark (4.0+), ``sw.stateful`` on the output of another step runs in the
same query (docs/semantics.md, "Re-keyed steps in one query"); between the
two, the DataFrame code picks the next key and value. ``run_flow`` takes that
code as a function ``(key, emit) -> (next key, next value)`` (or None: the
row is filtered out), Bytewax's ``key_on`` and ``map`` between two stateful
operators. Every step runs in its own ``Runner`` with Spark's schedule: a
micro-batch of the script is one micro-batch of every step, a ``Crash``
restarts them all, and a step whose upstream emitted nothing in a batch
still runs its due timers in it.

>>> from sparkwax.testing import Batch, Crash, run_flow
>>> from sparkwax.testing.reference import Counter
>>> first, second = run_flow([Batch([("u1", "eu"), ("u2", "eu")]), Crash(),
...                           Batch([("u1", "us")])],
...                          Counter, lambda user, n: (n, user), Counter)
>>> first.by_key, second.by_key
({'u1': [1, 2], 'u2': [1]}, {1: [1, 2], 2: [1]})
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from ..errors import ConfigError
from ..logic import Builder
from ..step import Restore, Step
from .result import RunResult
from .runner import Runner
from .script import Crash, Eof, ScriptStep

Rekey = Callable[[Any, Any], Optional[Tuple[Any, Any]]]
"""What the DataFrame code between two steps does to one output row."""


def run_flow(script: Sequence[ScriptStep], first: Union[Builder, Step],
             *then: Union[Rekey, Builder, Step], restore: Restore = "always"
             ) -> List[RunResult]:
    """Run ``script`` through ``first``, then through each ``(rekey, step)``
    pair of ``then`` in turn; one ``RunResult`` per step. A step is a
    ``sparkwax.Step`` or a builder (default options)."""
    if len(then) % 2:
        raise ConfigError("run_flow takes a first step, then (rekey, step) pairs: "
                          f"got {len(then)} more arguments")
    runners = [Runner(first, restore=restore)]
    rekeys: List[Rekey] = []
    for rekey, following in zip(then[::2], then[1::2]):
        if not callable(rekey) or isinstance(rekey, (Step, type)):
            raise ConfigError(f"run_flow: {rekey!r} stands where a rekey function "
                              "(key, emit) -> (key, value) or None belongs")
        rekeys.append(rekey)  # type: ignore[arg-type]
        runners.append(Runner(following, restore=restore))  # type: ignore[arg-type]
    for step in script:
        if isinstance(step, Crash):
            for runner in runners:
                runner.crash()
        else:
            _through(runners, rekeys, step)
    if not runners[0].ended:
        _through(runners, rekeys, None)
    return [runner.process_all_available() for runner in runners]


def _through(runners: Sequence[Runner], rekeys: Sequence[Rekey],
             step: Optional[ScriptStep]) -> None:
    """One script step through every runner: the first plays it (None: the
    trailing batch of ``process_all_available``); each next one gets what
    the previous emitted in it, as a Batch (a Tick if nothing, when the
    previous ran a micro-batch), then ``Eof()`` at EOF."""
    now = getattr(step, "now", None)
    upstream = runners[0]
    before = (len(upstream.result.outputs), len(upstream.result.batch_metrics))
    if step is None:
        upstream.process_all_available()
    else:
        upstream.play(step)
    for rekey, runner in zip(rekeys, runners[1:]):
        emitted, ran = before
        fresh = upstream.result.outputs[emitted:]
        before = (len(runner.result.outputs), len(runner.result.batch_metrics))
        items = [pair for pair in (rekey(key, emit) for key, emit in fresh) if pair is not None]
        if items:
            runner.batch(items, now=now)
        elif len(upstream.result.batch_metrics) > ran:
            runner.tick(now=now)
        if isinstance(step, Eof):
            runner.eof()
        upstream = runner


__all__ = ["Rekey", "run_flow"]
