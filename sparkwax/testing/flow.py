"""Several stateful steps in one streaming query, offline: each step's
emits, re-keyed, are the next step's items in the same micro-batch.

On Spark (4.0+), ``sw.stateful`` on the output of another step runs in the
same query (docs/semantics.md, "Re-keyed steps in one query"); between the
two, the DataFrame code picks the next key and value. ``run_flow`` takes that
code as a function ``(key, emit) -> (next key, next value)`` (or None: the
row is filtered out), Bytewax's ``key_on`` and ``map`` between two stateful
operators. Every step runs in its own ``Runner`` with Spark's schedule for
one query:

- a micro-batch of the script is one micro-batch of every step, and a step
  whose upstream emitted nothing in a batch still runs its due timers in it;
- the query has **one** watermark: each ``EventTime`` step's input is one of
  Spark's watermark inputs (its max event time minus its delay, 0 until rows
  reach it), and after each micro-batch the watermark is the smallest of
  them, never moving back (``QueryWatermark``); every ``EventTime`` step
  runs on it, so a later step whose input is still empty holds every step's
  watermark at 0;
- when the watermark moved and the script has no further batch, Spark runs
  a no-data micro-batch through every step, and again while it moves (the
  end of the script, a ``Crash``: the harness and ``sw.start`` catch up
  before a stop, and an ``Eof``);
- a ``Crash`` restarts every step; the watermark survives, each input's max
  does not.

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

from ..errors import CallbackError, ConfigError, ReturnValueError
from ..logic import Builder
from ..step import Restore, Step
from ..timers import EventTime
from .result import RunResult
from .runner import Runner
from .script import Crash, Eof, ScriptStep, Tick

Rekey = Callable[[Any, Any], Optional[Tuple[Any, Any]]]
"""What the DataFrame code between two steps does to one output row."""

REKEY = "rekey (the code between two steps)"
"""How an error of a ``Rekey`` names the callback that failed."""


def run_flow(script: Sequence[ScriptStep], first: Union[Builder, Step],
             *then: Union[Rekey, Builder, Step], restore: Restore = "always"
             ) -> List[RunResult]:
    """Run ``script`` through ``first``, then through each ``(rekey, step)``
    pair of ``then`` in turn; one ``RunResult`` per step. A step is a
    ``sparkwax.Step`` or a builder (default options)."""
    if len(then) % 2:
        raise ConfigError("run_flow takes a first step, then (rekey, step) pairs: "
                          f"got {len(then)} more arguments")
    runners = [Runner(first, restore=restore, no_data_batches=False)]
    rekeys: List[Rekey] = []
    for rekey, following in zip(then[::2], then[1::2]):
        if not callable(rekey) or isinstance(rekey, (Step, type)):
            raise ConfigError(f"run_flow: {rekey!r} stands where a rekey function "
                              "(key, emit) -> (key, value) or None belongs")
        rekeys.append(rekey)  # type: ignore[arg-type]
        runners.append(Runner(following, restore=restore,  # type: ignore[arg-type]
                              no_data_batches=False))
    query = Query(runners, rekeys)
    for step in script:
        query.play(step)
    if not runners[0].ended:
        query.catch_up()
    return [runner.process_all_available() for runner in runners]


class QueryWatermark:
    """Spark's one watermark of a query over its ``EventTime`` steps: the
    smallest of their inputs' watermarks (``Watermark.candidate``: 0 for an
    input without rows yet), monotonic, given to every such step after each
    micro-batch (``Runner.set_watermark``)."""

    def __init__(self, runners: Sequence[Runner]) -> None:
        self.timed = [runner for runner in runners if isinstance(runner.time, EventTime)]
        self.value_ms = 0

    def advance(self) -> bool:
        """The watermark after a micro-batch; whether it moved (then Spark
        runs a no-data micro-batch when no data waits)."""
        candidate = min((runner.clock.candidate() for runner in self.timed), default=0)
        moved = candidate > self.value_ms
        if moved:
            self.value_ms = candidate
        for runner in self.timed:  # each step's own advance is not the query's
            runner.set_watermark(self.value_ms)
        return moved


class Query:
    """The steps of one query, played one micro-batch at a time."""

    def __init__(self, runners: Sequence[Runner], rekeys: Sequence[Rekey]) -> None:
        self.runners, self.rekeys = runners, rekeys
        self.watermark = QueryWatermark(runners)
        self.moved = False  # the last micro-batch moved the watermark

    def play(self, step: ScriptStep) -> None:
        """One script step: a micro-batch through every step (``Batch``,
        ``Tick``), a restart of them all (``Crash``), or EOF (``Eof``)."""
        if isinstance(step, Crash):
            self.catch_up()
            for runner in self.runners:
                runner.crash()
            return
        if isinstance(step, Eof):
            self.catch_up()
        self._through(step)
        self.moved = self.watermark.advance()

    def catch_up(self) -> None:
        """Spark's no-data micro-batches while the watermark moves."""
        while self.moved:
            self._through(Tick())
            self.moved = self.watermark.advance()

    def _through(self, step: ScriptStep) -> None:
        """One script step through every runner: the first plays it; each next
        one gets what the previous emitted in it, as a Batch (a Tick if
        nothing, when the previous ran a micro-batch), then ``Eof()`` at EOF."""
        now = getattr(step, "now", None)
        upstream = self.runners[0]
        before = (len(upstream.result.outputs), len(upstream.result.batch_metrics))
        upstream.play(step)
        for rekey, runner in zip(self.rekeys, self.runners[1:]):
            emitted, ran = before
            fresh = upstream.result.outputs[emitted:]
            before = (len(runner.result.outputs), len(runner.result.batch_metrics))
            items = rekeyed(fresh, rekey, upstream.step_id, runner.step_id)
            if items:
                runner.batch(items, now=now)
            elif len(upstream.result.batch_metrics) > ran:
                runner.tick(now=now)
            if isinstance(step, Eof):
                runner.eof()
            upstream = runner


def rekeyed(rows: Sequence[Tuple[Any, Any]], rekey: Rekey, upstream: str, downstream: str
            ) -> List[Tuple[Any, Any]]:
    """``rekey`` over an upstream step's output rows: the next step's
    ``(key, value)`` items. A rekey that raises is a ``CallbackError``, one
    that returns neither None nor a pair a ``ReturnValueError``, each naming
    the upstream step and key, the emit and the next step."""
    items = []
    for key, emit in rows:
        try:
            pair = rekey(key, emit)
        except Exception as error:
            raise CallbackError(
                upstream, key, REKEY, emit,
                f"the rekey between steps {upstream!r} and {downstream!r} raised "
                f"{type(error).__name__}: {error}, on this emit") from error
        if pair is None:
            continue
        if type(pair) is not tuple or len(pair) != 2:
            raise ReturnValueError(
                upstream, key, REKEY, pair,
                f"the rekey between steps {upstream!r} and {downstream!r} must return "
                f"(next key, next value) or None for each emit (here for {emit!r})")
        items.append(pair)
    return items


__all__ = ["QueryWatermark", "Rekey", "run_flow"]
