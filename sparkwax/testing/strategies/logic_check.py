"""check_logic: one call that property-tests a user's logic.

>>> from sparkwax.testing import check_logic
>>> from sparkwax.testing.reference import Counter
>>> check_logic(Counter, max_examples=20)

A logic whose snapshot forgets something fails with a report that shows the
shrunk script and the keys whose outputs differ:

>>> from sparkwax import StatefulLogic, RETAIN
>>> class Forgetful(StatefulLogic):
...     def __init__(self, resume=None):
...         self.total, self.count = resume or 0, 0
...     def on_item(self, value):
...         self.total += value; self.count += 1
...         return [(self.total, self.count)], RETAIN
...     def snapshot(self):
...         return self.total              # forgets self.count
>>> from hypothesis import settings
>>> same_examples_every_run = settings(max_examples=50, derandomize=True, deadline=None)
>>> check_logic(Forgetful, settings=same_examples_every_run)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sparkwax.testing.strategies.logic_check.LogicCheckFailed: ...
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any, Dict, List, NoReturn, Optional, Union

from hypothesis import HealthCheck, given, settings as hypothesis_settings
from hypothesis.strategies import SearchStrategy

from ...errors import SparkwaxError
from ...logic import Builder
from ...step import Step, StepOptions, as_step
from ..result import RunResult, output_checker
from ..runner import run
from ..script import Crash, Script, describe
from . import scripts as scripts_strategy

if TYPE_CHECKING:
    from typing_extensions import Unpack

_HINTS = {
    "restore": (
        "A run that restores every key from its snapshot (what Spark does at every "
        "micro-batch, and after a crash) differs from a run that keeps the live objects. "
        "Usually snapshot() leaves out a field that on_item/on_notify use, or __init__ "
        "does not read back everything snapshot() returns."),
    "roundtrip": (
        "builder(snapshot).snapshot() does not give the snapshot back: __init__ and "
        "snapshot() disagree about the state's shape."),
    "lost_state": (
        "A logic rebuilt from its snapshot has another notify_at() than the logic that "
        "committed the snapshot: it keeps state (say its next timer) outside snapshot(). "
        "A Bytewax worker keeps live objects, so this works there; Spark and sparkwax "
        "rebuild the logic at every activation, so the state is lost. Put it in "
        "snapshot()."),
    "determinism": (
        "Two identical runs gave different results: the logic depends on something "
        "outside its state (wall clock, randomness, set/dict order of unhashable "
        "data, a global)."),
}


class LogicCheckFailed(AssertionError, SparkwaxError):
    """check_logic found a script on which the logic breaks a property."""


def check_logic(builder: Union[Builder, Step], *, items: Optional[SearchStrategy[Any]] = None,
                max_examples: int = 100, eof: bool = True,
                settings: Optional[hypothesis_settings] = None,
                **options: Unpack[StepOptions]) -> None:
    """Property-test ``builder``'s logic on generated scripts; raise
    LogicCheckFailed with the shrunk script on the first broken property:

    (a) restore-every-activation and crashes change nothing: outputs and final
        snapshots equal those of a run that keeps live objects;
    (b) every final snapshot pickles and ``builder(snapshot).snapshot()``
        returns it;
    (c) runs are deterministic;
    (d) a logic rebuilt from its snapshot has the same ``notify_at()`` as the
        logic that committed it (no LostStateWarning).

    A logic with processing deadlines (``processing_notify_at``, EventTime
    mode) gets scripts whose batches and ticks also advance the processing
    clock, so both kinds of timer fire.

    ``items`` is a strategy of ``(key, value)`` lists (see ``keyed_items`` and
    ``timestamped_items``). The step options as for run() (docs/guide.md,
    "Step options"; ``output_schema``: every emit checked as on Spark, a
    ``SchemaError`` with the shrunk script), or ``builder`` a ready
    ``sparkwax.Step``.
    """
    step = as_step(builder, **options)
    output_checker(step)  # a bad schema fails here, not inside every example
    strategy = scripts_strategy(items=items, time=step.time, eof=eof,
                                two_clocks=bool(step.knowing_deadlines().two_clocks))
    chosen = settings or hypothesis_settings(
        max_examples=max_examples, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

    @chosen
    @given(strategy)
    def property_test(script: Script) -> None:
        _check_script(step, script)

    property_test()


def _check_script(step: Step, script: Script) -> None:
    calm = [action for action in script if not isinstance(action, Crash)]
    live = run(step, calm, restore="on_crash")
    spark_like = run(step, script, restore="always")
    crashed_live = run(step, script, restore="on_crash")
    if spark_like.lost_state:
        _fail("lost_state", script, "\n".join(spark_like.lost_state))
    _compare("restore", script, live, spark_like, "restored every activation (as on Spark)")
    _compare("restore", script, live, crashed_live, "live objects, crashing where the script says")
    again = run(step, script, restore="always")
    if again.outputs != spark_like.outputs or not _same(again.snapshots, spark_like.snapshots):
        _fail("determinism", script, _diff(spark_like, again, "second identical run"))
    for key, snapshot in spark_like.snapshots.items():
        _check_roundtrip(step.logic_builder(), script, key, snapshot)


def _compare(prop: str, script: Script, expected: RunResult, actual: RunResult,
             label: str) -> None:
    if expected.by_key != actual.by_key or not _same(expected.snapshots, actual.snapshots):
        _fail(prop, script, _diff(expected, actual, label))


def _check_roundtrip(builder: Builder, script: Script, key: Any, snapshot: Any) -> None:
    try:
        restored = pickle.loads(pickle.dumps(snapshot, protocol=5))
        again = builder(restored).snapshot()
    except Exception as error:
        _fail("roundtrip", script, f"key {key!r}: snapshot {snapshot!r} failed to "
                                   f"round-trip: {error!r}")
    if not _same({key: again}, {key: snapshot}):
        _fail("roundtrip", script,
              f"key {key!r}: snapshot()          = {snapshot!r}\n"
              f"          builder(it).snapshot() = {again!r}")


def _same(left: Dict[Any, Any], right: Dict[Any, Any]) -> bool:
    try:
        return left == right
    except Exception:  # e.g. numpy arrays in snapshots: compare their pickles
        return pickle.dumps(left) == pickle.dumps(right)


def _diff(expected: RunResult, actual: RunResult, label: str) -> str:
    lines: List[str] = [f"reference: live objects, no crashes  vs  {label}"]
    want, got = expected.by_key, actual.by_key
    for key in sorted(set(want) | set(got), key=repr):
        if want.get(key, []) != got.get(key, []):
            lines.append(f"  key {key!r} outputs:\n    reference: {want.get(key, [])!r}\n"
                         f"    actual:    {got.get(key, [])!r}")
    for key in sorted(set(expected.snapshots) | set(actual.snapshots), key=repr):
        a, b = expected.snapshots.get(key, "<no state>"), actual.snapshots.get(key, "<no state>")
        if not _same({0: a}, {0: b}):
            lines.append(f"  key {key!r} final snapshot:\n    reference: {a!r}\n"
                         f"    actual:    {b!r}")
    return "\n".join(lines)


def _fail(prop: str, script: Script, details: str) -> NoReturn:
    raise LogicCheckFailed(
        f"check_logic: property '{prop}' failed.\n{_HINTS[prop]}\n\n"
        f"Script (shrunk):\n{describe(script)}\n\n{details}")
