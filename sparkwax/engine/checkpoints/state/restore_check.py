"""``check_state``: does every snapshot a checkpoint holds restore through a
new version of the logic? Run it before restarting a query with changed code.

On the executors (``mapInArrow`` over the state rows; a packed step's
buckets are opened into their keys), every stored snapshot goes through
what a restart and its next commit do, with the driver's own code
(``Driver.restore_check``): decode, ``builder(snapshot)``,
``snapshot()`` encoded again (picklable), ``notify_at()`` and, when the
logic has it, ``processing_notify_at()`` validated. Spark then counts the
failures per error class, with a few example keys and the first message;
only those counts come back to the driver.

>>> result = check_state(spark, "/data/ck", SessionV2)             # doctest: +SKIP
>>> result.keys_failed, result.failures[0].error_class            # doctest: +SKIP
(812, 'BuilderError')
>>> print(result)                                                  # doctest: +SKIP
"""

from __future__ import annotations

import time as wall_clock
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

import pyarrow as pa
from pyspark.sql import functions as F

from ...._driver import Driver
from ....errors import short_repr
from ....logic import Builder
from ..format.files import STEPS_FILE, recorded_buckets
from ....errors import CheckpointError
from ....step import Host, Step, StepOptions, as_step
from ....timers import EventTime, ProcessingTime, TimeMode
from ..snapshots import last_watermark_ms
from ..diagnose import explained, read_steps
from ..storage import storage_for
from ...deploy.shipping import ship_function
from .frame import checked_request, flat_state, recorded_step
from .rows import Layout, entries

if TYPE_CHECKING:
    from typing_extensions import Unpack

_SCHEMA = "key string, error_class string, message string"


class Failure(NamedTuple):
    """The keys that failed with one error class."""

    error_class: str
    count: int  # type: ignore[assignment]  # (shadows tuple.count, on purpose)
    example_keys: List[str]   # reprs of the first keys (sorted), at most ``examples``
    first_message: str        # the error of the first example key


@dataclass
class CheckResult:
    """What ``check_state`` found: ``keys_ok``, ``keys_failed`` and the
    ``failures`` per error class (most keys first)."""

    checkpoint: str
    step_id: str
    logic: str
    keys_ok: int
    keys_failed: int
    failures: List[Failure] = field(default_factory=list)
    shape_changes: List[str] = field(default_factory=list)  # what sw.start would refuse
    shape_note: Optional[str] = None  # why the step's shape was not compared

    @property
    def ok(self) -> bool:
        return self.keys_failed == 0 and not self.shape_changes

    def __str__(self) -> str:
        if self.shape_changes:  # sw.start's own error: no snapshot was restored
            from ..step_changes import refusal

            return refusal(self.checkpoint, self.shape_changes)
        report = self._keys_report()
        return f"{report}\n{self.shape_note}" if self.shape_note else report

    def _keys_report(self) -> str:
        total = self.keys_ok + self.keys_failed
        head = (f"step {self.step_id!r} in {self.checkpoint}: {total} stored key(s) checked "
                f"with {self.logic}")
        if self.ok:
            return f"{head}: every key restores, snapshots again and has valid timers"
        lines = [f"{head}: {self.keys_failed} fail, {self.keys_ok} restore"]
        for failure in self.failures:
            lines.append(f"  {failure.error_class}: {failure.count} key(s), e.g. "
                         f"{', '.join(failure.example_keys)}")
            lines.append(f"    {failure.first_message}")
        return "\n".join(lines)


def check_state(spark: Any, checkpoint: str, builder: Union[Builder, Step], *,
                operator_id: int = 0, examples: int = 3, key_schema: Optional[str] = None,
                **options: Unpack[StepOptions]) -> CheckResult:
    """Restore every stored snapshot of the step through ``builder`` on the
    executors and report what fails (see the module docstring). The step
    options as for ``sparkwax.stateful`` (docs/guide.md, "Step options"), or
    ``builder`` a ready ``sparkwax.Step``; ``step_id`` and ``time`` default
    to what ``sw.start`` recorded in the checkpoint; a step started with
    ``ttl=``/``max_state_bytes=`` needs them here too (they wrap the
    snapshots). ``now`` is the watermark the next batch would have
    (EventTime) or the wall clock, as for ``finish``.

    First the step's shape (time mode, timers, deadlines, state layout) is
    compared with the checkpoint's record as ``sw.start`` compares it
    (``compare_shape``): a change it would refuse is the result (not ok,
    its error as the report), and no snapshot is restored. A checkpoint with
    nothing to check (no committed batch, or not a sparkwax step's state: a
    plain Spark aggregation's) is a ``ConfigError`` saying so, as for
    ``read_state``."""
    if isinstance(builder, Step):
        step = as_step(builder, **options)
    else:  # the recorded step id and time mode are defaults ({} for no record)
        recorded = recorded_step(spark, checkpoint)
        defaults: StepOptions = {
            **options, "step_id": options.get("step_id") or recorded.get("step_id"),
            "time": options.get("time") or recorded_time(recorded)}
        step = as_step(builder, **defaults)  # every option checked before any Spark job
    checked_request(spark, checkpoint, operator_id, None)
    logic = step.builder
    name = getattr(logic, "__qualname__", None) or repr(logic)
    changes, note = compare_shape(spark, checkpoint, step)
    if changes:
        return CheckResult(checkpoint, step.step_id, name, 0, 0, shape_changes=changes)
    driver = Driver(step)
    wall_ms = int(wall_clock.time() * 1000)
    now_ms = driver.now_ms(lambda: last_watermark_ms(spark, checkpoint), lambda: wall_ms)
    flat, layout, _ = flat_state(spark, checkpoint, operator_id=operator_id,
                                 key_schema=key_schema or "key string", step_id=step.step_id)
    checker = CheckRows(layout, driver, now_ms, wall_ms)

    def check_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return checker(batches)  # a plain function for pyspark

    checked = flat.mapInArrow(ship_function(spark, check_rows), _SCHEMA)
    first = F.min_by(F.struct("key", "message"), "key")
    counts = checked.groupBy("error_class").agg(
        F.count(F.lit(1)).alias("n"),
        F.slice(F.array_sort(F.collect_list("key")), 1, max(examples, 1)).alias("examples"),
        first["message"].alias("message"))
    with explained(spark, checkpoint, operator=operator_id):
        rows = counts.collect()  # one row per error class
    failures = sorted((Failure(r["error_class"], r["n"], list(r["examples"]), r["message"])
                       for r in rows if r["error_class"] is not None),
                      key=lambda f: (-f.count, f.error_class))
    ok = sum(r["n"] for r in rows if r["error_class"] is None)
    return CheckResult(checkpoint, step.step_id, name, ok, sum(f.count for f in failures),
                       failures, shape_note=note)


def compare_shape(spark: Any, checkpoint: str, step: Step) -> Tuple[List[str], Optional[str]]:
    """What ``sw.start`` would refuse in restarting ``checkpoint`` with
    ``step`` (``describe_changes`` between the record and
    ``logic_description``; the key and output columns, which the restart's
    DataFrame decides, are the record's), or why that could not be
    compared (one line: no record, a damaged one, another step's)."""
    from ...planning.description import logic_description
    from ..step_changes import describe_changes

    try:
        saved = read_steps(storage_for(spark), checkpoint)
    except CheckpointError as error:
        return [], f"{_NOT_COMPARED}: {str(error).splitlines()[0]}"
    recorded = (saved or {}).get("steps", {})
    if not recorded:
        return [], (f"{_NOT_COMPARED}: {checkpoint} has no {STEPS_FILE} (the query was not "
                    "started with sw.start, which records it)")
    old = ({step.step_id: recorded[step.step_id]} if step.step_id in recorded
           else recorded if len(recorded) == 1 else None)
    if old is None:
        return [], (f"{_NOT_COMPARED}: {STEPS_FILE} records steps {sorted(recorded)}, not "
                    f"{step.step_id!r} (give its step id)")
    before = next(iter(old.values()))
    host, buckets = recorded_host(before.get("state"))
    new = {**logic_description(step, host, buckets),
           "key": before.get("key"), "output": before.get("output")}
    return describe_changes({"steps": old}, {"steps": {step.step_id: new}}), None


_NOT_COMPARED = "the step's shape (time mode, timers, deadlines, state) could not be compared"


def recorded_host(state: Any) -> Tuple[Host, Optional[int]]:
    """The host and bucket count of a recorded state layout.

    >>> recorded_host("packed/1 buckets=8 two-clock"), recorded_host("per_key/1 ttl")
    (('packed', 8), ('per_key', None))
    """
    buckets = recorded_buckets(state)
    if str(state or "").startswith("packed/") and buckets is not None:
        return "packed", buckets
    return "per_key", None


def recorded_time(recorded: Dict[str, Any]) -> Optional[TimeMode]:
    """The time mode ``sw.start`` recorded (``"ts - 120000 ms"``), if any.

    >>> recorded_time({"time": "event", "event_time": "ts - 120000 ms"}).column
    'ts'
    >>> recorded_time({})
    """
    if recorded.get("time") == "event" and recorded.get("event_time"):
        column, _, delay = str(recorded["event_time"]).rpartition(" - ")
        return EventTime(column, watermark=delay)
    if recorded.get("time") == "processing":
        return ProcessingTime()
    return None


class CheckRows:
    """The executors' half: ``(key repr, error class, message)`` per stored
    key (class and message null when it restores)."""

    def __init__(self, layout: Layout, driver: Driver, now_ms: int, wall_ms: int):
        self.layout, self.driver, self.now_ms, self.wall_ms = layout, driver, now_ms, wall_ms

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys: List[str] = []
            classes: List[Optional[str]] = []
            messages: List[Optional[str]] = []
            for entry, partition, _ in entries(batch, self.layout):
                found = self.check(entry.key, entry.blob or b"") if entry.error is None \
                    else tuple(entry.error.split(": ", 1))
                keys.append(short_repr(entry.key) if entry.error is None
                            else f"<a bucket of partition {partition}>")
                classes.append(found[0] if found else None)
                messages.append(found[1] if found else None)
            yield pa.RecordBatch.from_pydict({"key": keys, "error_class": classes,
                                              "message": messages})

    def check(self, key: Any, blob: bytes) -> Optional[Tuple[str, str]]:
        try:
            self.driver.restore_check(key, blob, self.now_ms, self.wall_ms)
        except Exception as error:
            return type(error).__name__, str(error)
        return None


__all__ = ["CheckResult", "Failure", "check_state", "compare_shape", "recorded_host",
           "recorded_time"]
