"""Replay a checkpoint: run the micro-batches Spark actually ran through the
offline runner, and compare each batch's outputs with what the sink committed.

``replay(checkpoint, builder, ...)`` rebuilds the batches from the
checkpoint's offset log and its file source's log (``sparkwax.engine.checkpoints.format.metadata_logs``),
reads each batch's input files with Spark (the query's reader options:
``source_format``, ``source_schema``, ``source_options``), runs them batch by
batch through a ``Runner`` with the step's settings (ProcessingTime: ``now``
is the batch's ``batchTimestampMs``; EventTime: the runner's own watermark,
checked against the log's ``batchWatermarkMs``, and ``batchTimestampMs`` as
the processing clock of a step with both timer kinds) and, given ``sink=``,
compares per batch and per key (never by global order) with the rows the sink
committed: Spark's file sink (its ``_spark_metadata`` log) or the test
harness's ``foreachBatch`` Parquet (``sparkwax.testing.spark``).

>>> result = replay("/data/ck", Session, key="user", sink="/data/out",   # doctest: +SKIP
...                 output_schema="start timestamp, `end` timestamp, events long",
...                 time=sw.EventTime("ts", watermark="10 minutes"),
...                 source_format="json", source_schema="user string, ts timestamp")
>>> print(result.report())                                             # doctest: +SKIP

The comparison is pure and runs without Spark:

>>> fields = [("n", "long")]
>>> compare_unit((0,), {"a": [(1,)], "b": [(1,)]}, [("a", (1,)), ("b", (2,))]).differences
[KeyDifference(key='b', only_offline=[(1,)], only_sink=[(2,)])]
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional,
                    Sequence, Tuple, Union)

from .._driver import sorted_keys
from ..engine.checkpoints.format.metadata_logs import batch_label
from ..errors import ConfigError, LogicError, short_repr
from ..builders import KeySpec
from ..logic import Builder
from ..step import Restore, Step, StepOptions, as_step, restore_mode
from .._ops.tables import format_table
from ..timers import EventTime, from_epoch_ms
from .result import RunResult
from .runner import Runner

if TYPE_CHECKING:
    from typing_extensions import Unpack

Fields = List[Tuple[str, Any]]  # (name, Spark type as JSON: "long", {"type": "struct"...})


@dataclass
class KeyDifference:
    """One key's rows that only one side has (as multisets, per batch)."""

    key: Any
    only_offline: List[Tuple[Any, ...]]
    only_sink: List[Tuple[Any, ...]]


@dataclass
class Comparison:
    """The offline outputs of one batch (or of a group of batches the sink's
    log no longer tells apart) against the rows the sink committed for it."""

    batch_ids: Tuple[int, ...]
    offline_rows: int
    sink_rows: int
    differences: List[KeyDifference] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.differences

    @property
    def label(self) -> str:
        return batch_label(self.batch_ids)


@dataclass
class BatchReplay:
    """One micro-batch: what Spark's logs say and what the replay did."""

    batch_id: int
    files: int
    rows: int
    keys: int                               # distinct keys among the batch's rows
    timestamp_ms: int                       # Spark's batchTimestampMs
    spark_watermark_ms: int                 # Spark's batchWatermarkMs
    offline_watermark_ms: Optional[int]     # the runner's (EventTime), None otherwise
    outputs: List[Tuple[Any, Any]] = field(default_factory=list)  # offline (key, value)
    late: int = 0

    @property
    def watermark_equal(self) -> bool:
        return self.offline_watermark_ms is None or \
            self.offline_watermark_ms == self.spark_watermark_ms


@dataclass
class ReplayResult:
    """What ``replay`` found. ``equal``: every batch's outputs match the sink
    and every watermark matches Spark's; ``first_difference`` names the first
    batch and key that do not."""

    checkpoint: str
    batches: List[BatchReplay]
    comparisons: List[Comparison]           # empty without a sink
    run: RunResult                          # the whole offline run
    pending: List[int] = field(default_factory=list)  # planned, not committed (yet)
    sink_only_batches: List[int] = field(default_factory=list)  # sink rows of unknown batches
    compared: bool = False
    error: Optional[Tuple[int, LogicError]] = None  # (batch id, what the logic raised offline)

    @property
    def watermark_mismatches(self) -> List[BatchReplay]:
        return [b for b in self.batches if not b.watermark_equal]

    @property
    def equal(self) -> bool:
        return (self.error is None and not self.watermark_mismatches
                and not self.sink_only_batches and all(c.equal for c in self.comparisons))

    @property
    def first_difference(self) -> Optional[Tuple[Comparison, KeyDifference]]:
        """The first batch (in batch order) whose outputs differ, and its first key."""
        for comparison in self.comparisons:
            if comparison.differences:
                return comparison, comparison.differences[0]
        return None

    def report(self) -> str:
        """A short table (batch, files, rows, keys, watermark, outputs) and the
        first difference."""
        return format_report(self)

    def __str__(self) -> str:
        return self.report()


def replay(checkpoint: str, builder: Union[Builder, Step], *, key: KeySpec,
           source_format: str, source_schema: Any = None,
           source_options: Optional[Mapping[str, str]] = None, sink: Optional[str] = None,
           sink_format: str = "parquet", sink_options: Optional[Mapping[str, str]] = None,
           spark: Any = None, transform: Optional[Callable[[Any], Any]] = None,
           path_map: Optional[Mapping[str, str]] = None, restore: Restore = "always",
           **options: Unpack[StepOptions]) -> ReplayResult:
    """Replay ``checkpoint``'s micro-batches offline and compare them with ``sink``.

    ``builder``, ``key`` and the step options (docs/guide.md, "Step
    options") are the ones the query's ``sw.stateful`` got (or ``builder`` is
    the query's ``sparkwax.Step``, and ``key`` the only one besides).
    ``source_format``/``source_schema``/``source_options``: how the query's
    ``readStream`` read its files (``transform``: a ``DataFrame -> DataFrame``
    function for what the query did between the source and the step).
    ``sink``: the query's file sink folder (or the test harness's output),
    read as ``sink_format``. ``path_map``: where the logged input and sink
    files are now, ``{"hdfs://nn/data": "/home/me/data"}`` (a copy on a
    laptop). ``spark``: the session that reads (default: the active one).

    A planned batch that did not commit (Spark runs it again at the next
    start) is replayed too and listed in ``pending``; it is compared only if
    the sink already committed its rows. A logic that raises offline (a
    ``LogicError``) ends the replay at that batch: ``result.error``.
    """
    step = as_step(builder, **options)  # checked before pyspark is imported
    restore = restore_mode(step.step_id, restore)
    from ..engine.checkpoints.snapshots import active_session
    from ..engine.checkpoints.batch_history import output_type, read_inputs, read_plan, read_sink

    spark = active_session(spark, "replay")
    from ..engine.checkpoints.state.asked import one_step_operator
    from ..engine.checkpoints.storage import storage_for

    one_step_operator(storage_for(spark), checkpoint, (
        "replay replays a one-step query (the sink holds the last step's rows, of the "
        "others' inputs); test its steps offline with sparkwax.testing.run_flow"))
    keys = [key] if isinstance(key, str) else list(key)
    if not keys:
        raise ConfigError("replay: key must name at least one column")
    fields = [(f["name"], f["type"]) for f in output_type(spark, step.output_schema).jsonValue()[
        "fields"]]
    plan = read_plan(spark, checkpoint)
    pending = [b.batch_id for b in plan.batches if not b.committed]
    inputs = read_inputs(spark, plan.batches, source_format=source_format,
                         source_schema=source_schema, source_options=source_options,
                         transform=transform, path_map=path_map)
    scripted = []
    for planned in plan.batches:
        found = inputs.get(planned.batch_id)
        items = [] if found is None else \
            items_of(found.columns, found.rows, keys, step.value, step.step_id)
        scripted.append((planned, items, len(planned.files)))
    units = None
    if sink is not None:
        units = [(u.batch_ids, u.rows) for u in read_sink(
            spark, sink, sink_format=sink_format, sink_options=sink_options,
            path_map=path_map)]
    return replay_batches(step, scripted, fields, len(keys), units, checkpoint=checkpoint,
                          pending=pending, restore=restore)


def items_of(columns: Sequence[str], rows: Iterable[Mapping[str, Any]], keys: Sequence[str],
             value: Optional[str], step_id: str) -> List[Tuple[Any, Any]]:
    """``(key, value)`` pairs as the Spark hosts hand them to the driver: one
    key column's value (a tuple for several), and a dict of the other columns
    (or ``value``'s scalar).

    >>> items_of(["user", "ts", "n"], [{"user": "a", "ts": 1, "n": 2}], ["user"], None, "s")
    [('a', {'ts': 1, 'n': 2})]
    """
    missing = [k for k in [*keys, *([value] if value else [])] if k not in columns]
    if missing:
        raise ConfigError(f"step {step_id!r}: replay: the input has no column(s) {missing}; "
                          f"it has {list(columns)} (give the query's transform=?)")
    names = [c for c in columns if c not in keys]
    single = len(keys) == 1
    items = []
    for row in rows:
        item_key = row[keys[0]] if single else tuple(row[k] for k in keys)
        items.append((item_key, row[value] if value else {n: row[n] for n in names}))
    return items


def replay_batches(step: Step, batches: Sequence[Tuple[Any, List[Tuple[Any, Any]], int]],
                   fields: Fields, key_width: int,
                   sink: Optional[Sequence[Tuple[Tuple[int, ...], List[Tuple[Any, ...]]]]],
                   *, checkpoint: str = "", pending: Sequence[int] = (),
                   restore: Restore = "always") -> ReplayResult:
    """The offline half of ``replay``, without Spark: ``batches`` are
    ``(PlannedBatch, items, files)`` in order; ``sink`` is ``[(batch ids,
    rows)]`` with rows as tuples, key columns first (None: no comparison)."""
    # The log says whether Spark ran a no-data batch: the runner never adds one.
    runner = Runner(step, restore=restore, no_data_batches=False)
    event = isinstance(step.time, EventTime)
    replayed: List[BatchReplay] = []
    error: Optional[Tuple[int, LogicError]] = None
    for planned, items, files in batches:
        before = len(runner.result.outputs)
        late = runner.result.late
        offline_watermark = runner.now_ms if event else None
        now = from_epoch_ms(planned.timestamp_ms)  # EventTime: the deadlines' clock
        try:
            if planned.has_data:
                runner.batch(items, now=now)
            else:
                runner.tick(now=now)
        except LogicError as raised:  # Spark ran this batch (or failed on it, if pending)
            error = (planned.batch_id, raised)
            break
        replayed.append(BatchReplay(
            planned.batch_id, files, len(items), len({k for k, _ in items}),
            planned.timestamp_ms, planned.watermark_ms, offline_watermark,
            runner.result.outputs[before:], runner.result.late - late))
    run = runner.process_all_available()
    result = ReplayResult(checkpoint, replayed, [], run, list(pending), error=error)
    if sink is None:
        return result
    result.compared = True
    by_batch = {b.batch_id: b for b in replayed}
    planned_ids = {planned.batch_id for planned, _, _ in batches}
    for ids, rows in sink:
        known = [i for i in ids if i in by_batch]
        if not known:
            if not planned_ids.intersection(ids):
                result.sink_only_batches.extend(ids)
            continue  # else: not replayed, after the batch whose logic raised
        offline: Dict[Any, List[Tuple[Any, ...]]] = {}
        for batch_id in known:
            for item_key, emitted in by_batch[batch_id].outputs:
                offline.setdefault(item_key, []).append(emit_row(emitted, fields))
        result.comparisons.append(compare_unit(
            tuple(known), offline, [_sink_pair(row, key_width, fields) for row in rows]))
    covered = {i for c in result.comparisons for i in c.batch_ids}
    for b in replayed:  # batches the sink has no rows for: compared with nothing
        if b.batch_id not in covered and b.batch_id not in pending:
            offline = {}
            for item_key, emitted in b.outputs:
                offline.setdefault(item_key, []).append(emit_row(emitted, fields))
            result.comparisons.append(compare_unit((b.batch_id,), offline, []))
    result.comparisons.sort(key=lambda c: c.batch_ids)
    return result


def compare_unit(batch_ids: Tuple[int, ...], offline: Mapping[Any, List[Tuple[Any, ...]]],
                 sink: Sequence[Tuple[Any, Tuple[Any, ...]]]) -> Comparison:
    """Compare per key, each key's rows as a multiset (Spark gives no order
    across keys, and a file sink none within a batch either)."""
    sink_by_key: Dict[Any, List[Tuple[Any, ...]]] = {}
    for item_key, row in sink:
        sink_by_key.setdefault(item_key, []).append(row)
    differences = []
    for item_key in sorted_keys(list(offline) + list(sink_by_key)):
        mine, theirs = Counter(offline.get(item_key, [])), Counter(sink_by_key.get(item_key, []))
        if mine != theirs:
            differences.append(KeyDifference(item_key, list((mine - theirs).elements()),
                                             list((theirs - mine).elements())))
    return Comparison(batch_ids, sum(len(v) for v in offline.values()), len(sink), differences)


def _sink_pair(row: Tuple[Any, ...], key_width: int, fields: Fields
               ) -> Tuple[Any, Tuple[Any, ...]]:
    key_part = row[:key_width]
    item_key = key_part[0] if key_width == 1 else tuple(key_part)
    return item_key, tuple(normal(v, t) for v, (_, t) in zip(row[key_width:], fields))


def emit_row(emitted: Any, fields: Fields) -> Tuple[Any, ...]:
    """An emitted value as the output row Spark would write, in comparable
    form (the rules of the Spark hosts: a tuple by position, a dict or a
    dataclass by field name, a scalar for a one-field schema).

    >>> emit_row({"b": 2, "a": 1}, [("a", "long"), ("b", "long")])
    (1, 2)
    """
    names = [name for name, _ in fields]
    if isinstance(emitted, tuple):
        values = list(emitted)
    elif isinstance(emitted, dict):
        values = [emitted.get(name) for name in names]
    elif dataclasses.is_dataclass(emitted) and not isinstance(emitted, type):
        values = [getattr(emitted, name, None) for name in names]
    else:  # a scalar for a one-field schema (anything else fails on Spark)
        values = [emitted]
    return tuple(normal(v, t) for v, (_, t) in zip(values, fields)) + tuple(
        values[len(fields):])


def normal(value: Any, data_type: Any) -> Any:
    """A value in one comparable, hashable form for its Spark type (``data_type``
    as in ``StructType.jsonValue()``): aware UTC datetimes, decimals at the
    type's scale, structs and arrays as tuples, maps as sorted tuples of pairs.

    >>> normal({"x": [1, 2]}, {"type": "struct", "fields": [
    ...     {"name": "x", "type": {"type": "array", "elementType": "long"}}]})
    ((1, 2),)
    """
    if value is None:
        return None
    if isinstance(data_type, dict):
        kind = data_type.get("type")
        if kind == "struct":
            inner = [(f["name"], f["type"]) for f in data_type["fields"]]
            return emit_row(value, inner) if not isinstance(value, list) else \
                tuple(normal(v, t) for v, (_, t) in zip(value, inner))
        if kind == "array":
            return tuple(normal(v, data_type["elementType"]) for v in value)
        if kind == "map":
            pairs = [(normal(k, data_type["keyType"]), normal(v, data_type["valueType"]))
                     for k, v in dict(value).items()]
            return tuple(sorted(pairs, key=repr))
        return value
    text = str(data_type)
    if text == "timestamp" and isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(timezone.utc)
    if text.startswith("decimal") and isinstance(value, (int, float, Decimal)):
        scale = int(text.rstrip(")").split(",")[-1]) if "," in text else 0
        try:
            return Decimal(str(value)).quantize(Decimal(1).scaleb(-scale))
        except InvalidOperation:
            return value
    if text in ("float", "double") and isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, list):
        return tuple(value)
    return value


# -- the report ---------------------------------------------------------------

def _moment(ms: Optional[int]) -> str:
    if ms is None:
        return "-"
    if ms <= 0:
        return "0"
    return from_epoch_ms(ms).strftime("%Y-%m-%d %H:%M:%S")


def format_report(result: ReplayResult, *, width: int = 100) -> str:
    """The table ``sparkwax replay`` prints."""
    by_last = {c.batch_ids[-1]: c for c in result.comparisons}
    header = ["batch", "files", "rows", "keys", "watermark", "outputs"]
    rows = []
    for b in result.batches:
        watermark = _moment(b.spark_watermark_ms)
        if not b.watermark_equal:
            watermark += f" (offline {_moment(b.offline_watermark_ms)})"
        comparison = by_last.get(b.batch_id)
        if not result.compared:
            outputs = f"{len(b.outputs)} offline"
        elif comparison is None and b.batch_id in result.pending:
            outputs = f"{len(b.outputs)} offline; not committed yet"
        elif comparison is None:
            outputs = "(compared with its group)"
        else:
            together = "" if len(comparison.batch_ids) == 1 else \
                f" (batches {comparison.label} together)"
            if comparison.equal:
                outputs = f"equal, {_count(comparison.sink_rows, 'row')}{together}"
            else:
                outputs = (f"DIFFERENT: {comparison.offline_rows} offline, "
                           f"{comparison.sink_rows} in the sink, "
                           f"{len(comparison.differences)} key(s){together}")
        rows.append([str(b.batch_id), str(b.files), str(b.rows), str(b.keys), watermark,
                     outputs])
    lines = [format_table(header, rows)]
    for batch_id in result.pending:
        lines.append(f"batch {batch_id}: planned but not committed (Spark runs it again "
                     "at the next start)")
    if result.sink_only_batches:
        lines.append(f"the sink has rows for batch(es) {result.sink_only_batches} that the "
                     "checkpoint's logs do not hold")
    for b in result.watermark_mismatches:
        lines.append(f"batch {b.batch_id}: Spark's watermark {_moment(b.spark_watermark_ms)} "
                     f"({b.spark_watermark_ms} ms), offline {_moment(b.offline_watermark_ms)} "
                     f"({b.offline_watermark_ms} ms)")
    if result.error is not None:
        batch_id, raised = result.error
        lines.append(f"batch {batch_id}: the logic raised offline ({type(raised).__name__}): "
                     f"{raised}")
    first = result.first_difference
    if first is not None:
        comparison, difference = first
        what = "batch" if len(comparison.batch_ids) == 1 else "batches"
        lines.append(f"first difference: {what} {comparison.label}, key "
                     f"{short_repr(difference.key)}")
        lines.append(f"  only offline:     {_rows(difference.only_offline, width)}")
        lines.append(f"  only in the sink: {_rows(difference.only_sink, width)}")
    if not result.compared:
        verdict = "not compared (no sink given)"
    elif result.equal:
        verdict = "equal: every replayed batch matches the sink"
    else:
        verdict = "DIFFERENT"
    lines.append(f"{_count(len(result.batches), 'batch')} replayed, "
                 f"{_count(len(result.run.outputs), 'output')}, "
                 f"{_count(result.run.late, 'late row')}: {verdict}")
    return "\n".join(lines)


def _count(number: int, noun: str) -> str:
    if number == 1:
        return f"1 {noun}"
    return f"{number} {noun}{'es' if noun.endswith('ch') else 's'}"


def _rows(rows: List[Tuple[Any, ...]], width: int) -> str:
    if not rows:
        return "(none)"
    text = ", ".join(short_repr(r) for r in rows[:5])
    more = f" ... ({len(rows)} rows)" if len(rows) > 5 else ""
    return (text[:width] + "..." if len(text) > width else text) + more


__all__ = ["BatchReplay", "Comparison", "KeyDifference", "ReplayResult", "compare_unit",
           "emit_row", "format_report", "items_of", "normal", "replay", "replay_batches"]
