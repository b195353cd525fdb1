"""Read what a checkpointed query ran: its micro-batches, their input rows and
the rows its sink committed for each of them (for ``sparkwax.testing.replay``),
and keep a file source's batch plan across a restart (for ``sw.start``).

Everything next to the checkpoint and the sink is read through Spark's file
system (``storage_for``); the input files and the sink's files are read with
Spark itself, with the reader options the query used. The log formats are in
``sparkwax.engine.checkpoints.format.metadata_logs``.

>>> plan = read_plan(spark, "/data/ck")                                    # doctest: +SKIP
>>> rows = read_inputs(spark, plan.batches, source_format="json",          # doctest: +SKIP
...                    source_schema="user string, ts timestamp")
"""

from __future__ import annotations

import math
import sys
import time as wall_clock
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from pyspark.sql import functions as F
from pyspark.sql import types as T

from .format.metadata_logs import (OffsetEntry, PlannedBatch, file_offset, log_number, normal_path,
                        orphaned_entries, parse_commit, parse_offsets, plan_batches,
                        planned_offsets, require_file_source, sink_units, source_files)
from ...errors import ConfigError
from ...timers import EPOCH
from ..planning.schemas import parse_ddl
from ..deploy.session_confs import is_connect
from .storage import join_path, storage_for

FILE_COLUMN = "__sw_file"
HARNESS_BATCH, HARNESS_POSITION = "__sw_batch", "__sw_position"  # testing/spark.py's sink
SUPPORTED_FORMATS = ("json", "csv", "parquet", "orc", "text", "avro", "xml")


@dataclass
class CheckpointPlan:
    """A checkpoint's micro-batches, as its logs say Spark ran them."""

    checkpoint: str
    batches: List[PlannedBatch]
    next_watermark_ms: int  # from the last commit: the next batch's watermark


@dataclass
class InputBatch:
    """The rows a micro-batch read: column names and one dict per row."""

    columns: List[str]
    rows: List[Dict[str, Any]]


@dataclass
class SinkUnit:
    """Rows a sink committed for one batch (or for a group of batches whose
    files the sink's log no longer tells apart): plain tuples, key columns first."""

    batch_ids: Tuple[int, ...]
    rows: List[Tuple[Any, ...]]
    files: int = 0


def log_files(store: Any, folder: str) -> Dict[Tuple[int, bool], str]:
    """``{(number, compact): path}`` of the log files in ``folder``."""
    found = {}
    for entry in store.list(folder):
        number = log_number(entry.name)
        if number is not None and not entry.is_dir:
            found[number] = entry.path
    return found


def read_offsets(store: Any, checkpoint: str) -> Dict[int, OffsetEntry]:
    return {number: parse_offsets(number, store.read_text(path), path)
            for (number, _), path in log_files(store, join_path(checkpoint, "offsets")).items()}


def read_commits(store: Any, checkpoint: str) -> Dict[int, int]:
    """``{batch id: next batch's watermark}`` from the commit log."""
    return {number: parse_commit(store.read_text(path), path)
            for (number, _), path in log_files(store, join_path(checkpoint, "commits")).items()}


def read_plan(spark: Any, checkpoint: str) -> CheckpointPlan:
    """The micro-batches of ``checkpoint`` (a query with one file source)."""
    from .snapshots import require_checkpoint

    store = storage_for(spark)
    require_checkpoint(store, checkpoint)
    offsets = read_offsets(store, checkpoint)
    require_file_source(offsets, checkpoint=checkpoint)
    commits = read_commits(store, checkpoint)
    where = join_path(checkpoint, "sources/0")
    logs = {number: store.read_text(path) for number, path in log_files(store, where).items()}
    batches = plan_batches(offsets, commits, source_files(logs, where), checkpoint=checkpoint)
    last = max(commits) if commits else None
    return CheckpointPlan(checkpoint, batches, commits[last] if last is not None else 0)


def _reader(spark: Any, source_format: str, source_schema: Any,
            options: Optional[Mapping[str, str]]) -> Any:
    if source_format.lower() not in SUPPORTED_FORMATS:
        raise ConfigError(
            f"replay reads the input files of Spark's file source (formats "
            f"{', '.join(SUPPORTED_FORMATS)}); {source_format!r} is not one (rate, socket, "
            f"Kafka... keep no record of the rows each batch read)")
    reader = spark.read.format(source_format)
    if source_schema is not None:
        reader = reader.schema(source_schema)
    for name, value in (options or {}).items():
        reader = reader.option(name, value)
    return reader


def path_mapper(path_map: Optional[Mapping[str, str]]) -> Callable[[str], str]:
    """A function moving logged paths: ``{"hdfs://nn/data": "/home/me/data"}``
    reads ``hdfs://nn/data/in/x.json`` as ``/home/me/data/in/x.json`` (the
    longest matching prefix wins; paths compare in ``normal_path`` form).

    >>> move = path_mapper({"hdfs://nn:8020/data": "/copy"})
    >>> move("hdfs://nn:8020/data/in/a%20b.json"), move("file:///elsewhere/x")
    ('file:/copy/in/a b.json', 'file:///elsewhere/x')
    """
    pairs = sorted(((normal_path(old).rstrip("/"), normal_path(new).rstrip("/"))
                    for old, new in (path_map or {}).items()), key=lambda p: -len(p[0]))

    def move(path: str) -> str:
        plain = normal_path(path)
        for old, new in pairs:
            if plain == old or plain.startswith(old + "/"):
                return new + plain[len(old):]
        return path
    return move


def read_inputs(spark: Any, batches: Sequence[PlannedBatch], *, source_format: str,
                source_schema: Any=None, source_options: Optional[Mapping[str, str]] = None,
                transform: Optional[Callable[[Any], Any]] = None,
                path_map: Optional[Mapping[str, str]] = None) -> Dict[int, InputBatch]:
    """Each data batch's rows, read with Spark from the files its log entries
    name (one read for all of them, or one per batch with ``transform``, a
    function ``DataFrame -> DataFrame`` standing for what the query did
    between its source and the step; ``path_map`` moves the logged paths,
    see ``path_mapper``). Timestamps become aware UTC datetimes, nested rows
    dicts, as the step's function receives them on Spark."""
    reader = _reader(spark, source_format, source_schema, source_options)
    move = path_mapper(path_map)
    wanted = [b for b in batches if b.files]
    found: Dict[int, InputBatch] = {}
    if not wanted:
        return found
    if transform is None:
        owner = {normal_path(move(path)): b.batch_id for b in wanted for path in b.files}
        frame = _load(reader, [move(p) for b in wanted for p in b.files])
        frame = frame.withColumn(FILE_COLUMN, F.col("_metadata.file_path"))
        columns, rows = _collect(frame)
        for row in rows:
            batch_id = owner.get(normal_path(row.pop(FILE_COLUMN)))
            if batch_id is not None:
                found.setdefault(batch_id, InputBatch(columns, [])).rows.append(row)
        for b in wanted:
            found.setdefault(b.batch_id, InputBatch(columns, []))
        return found
    for b in wanted:
        frame = transform(_load(reader, [move(p) for p in b.files]))
        columns, rows = _collect(frame)
        found[b.batch_id] = InputBatch(columns, rows)
    return found


def _load(reader: Any, paths: List[str]) -> Any:
    hadoop_paths = [_hadoop_path(p) for p in paths]
    try:
        return reader.load(hadoop_paths)
    except Exception as error:
        text = str(error)
        if "PATH_NOT_FOUND" in text or "does not exist" in text:
            raise ConfigError(f"an input file a micro-batch read is gone ({text.splitlines()[0]});"
                              f" replay needs the source's files as they were") from None
        raise


def _hadoop_path(logged: str) -> str:
    """A source log path (URL-encoded URI) as Spark's readers take it."""
    from urllib.parse import unquote

    return unquote(logged)


def _collect(frame: Any) -> Tuple[List[str], List[Dict[str, Any]]]:
    """``frame``'s columns and rows as plain Python values (top-level
    timestamps exactly, through epoch microseconds)."""
    fields = frame.schema.fields
    exact = [F.unix_micros(F.col(f"`{f.name}`")).alias(f.name)
             if isinstance(f.dataType, T.TimestampType) else F.col(f"`{f.name}`")
             for f in fields]
    rows = frame.select(*exact).collect()
    names = [f.name for f in fields]
    plain = []
    for row in rows:
        plain.append({f.name: (_micros(v) if isinstance(f.dataType, T.TimestampType)
                               else _value(v, f.dataType, top=True))
                      for f, v in zip(fields, row)})
    return [n for n in names if n != FILE_COLUMN], plain


def _micros(value: Any) -> Optional[datetime]:
    return None if value is None else EPOCH + timedelta(microseconds=int(value))


def _value(value: Any, data_type: Any, top: bool = False) -> Any:
    """A collected value as the step's function sees it (dicts for structs,
    bytes for binary, aware UTC datetimes, None for a top-level NaN)."""
    if value is None:
        return None
    if isinstance(data_type, T.StructType):
        return {f.name: _value(v, f.dataType) for f, v in zip(data_type.fields, value)}
    if isinstance(data_type, T.ArrayType):
        return [_value(v, data_type.elementType) for v in value]
    if isinstance(data_type, T.MapType):
        return {_value(k, data_type.keyType): _value(v, data_type.valueType)
                for k, v in value.items()}
    if isinstance(data_type, T.TimestampType):  # naive, in this process's zone (pyspark)
        return value.astimezone(timezone.utc)
    if isinstance(data_type, T.BinaryType):
        return bytes(value)
    if top and isinstance(value, float) and math.isnan(value):
        return None
    return value


def output_type(spark: Any, output_schema: Any) -> T.StructType:
    """The step's output schema as a StructType."""
    if isinstance(output_schema, T.StructType):
        return output_schema
    if isinstance(output_schema, str):
        try:
            parsed = parse_ddl(spark, output_schema)
        except Exception as error:
            raise ConfigError(f"cannot parse output_schema {output_schema!r}: {error}") from None
        if isinstance(parsed, T.StructType):
            return parsed
    raise ConfigError(f"output_schema must be a DDL string or a StructType, got "
                      f"{output_schema!r}")


def read_sink(spark: Any, sink: str, *, sink_format: str = "parquet", sink_schema: Any=None,
              sink_options: Optional[Mapping[str, str]] = None,
              path_map: Optional[Mapping[str, str]] = None) -> List[SinkUnit]:
    """The rows ``sink`` committed per micro-batch: Spark's file sink (its
    ``_spark_metadata`` log names each batch's files; ``path_map`` moves
    them, see ``path_mapper``) or the test harness's ``foreachBatch``
    Parquet folder (rows carry their batch id and position)."""
    move = path_mapper(path_map)
    store = storage_for(spark)
    metadata = join_path(sink, "_spark_metadata")
    reader = spark.read.format(sink_format)
    if sink_schema is not None:
        reader = reader.schema(sink_schema)
    for name, value in (sink_options or {}).items():
        reader = reader.option(name, value)
    if store.exists(metadata):
        logs = {number: store.read_text(path)
                for number, path in log_files(store, metadata).items()}
        units = [(ids, [move(p) for p in files]) for ids, files in sink_units(logs, metadata)]
        paths = [p for _, files in units for p in files]
        rows_of: Dict[str, List[Tuple[Any, ...]]] = {}
        if paths:
            frame = _load(reader, paths).withColumn(FILE_COLUMN, F.col("_metadata.file_path"))
            _, rows = _collect(frame)
            for row in rows:
                rows_of.setdefault(normal_path(row.pop(FILE_COLUMN)), []).append(
                    tuple(row.values()))
        return [SinkUnit(ids, [r for p in files for r in rows_of.get(normal_path(p), [])],
                         len(files)) for ids, files in units]
    if not store.exists(sink):
        raise ConfigError(f"sink {sink!r} does not exist")
    try:
        frame = reader.load(sink)
    except Exception as error:
        raise ConfigError(f"cannot read sink {sink!r} as {sink_format}: "
                          f"{str(error).splitlines()[0]}") from None
    if HARNESS_BATCH not in frame.columns:
        raise ConfigError(
            f"{sink!r} is neither a file sink (it has no _spark_metadata log) nor the "
            f"sparkwax test harness's output (no {HARNESS_BATCH} column): replay compares with "
            f"Spark's file sink, or with a foreachBatch sink that writes the batch id")
    _, rows = _collect(frame.orderBy(HARNESS_BATCH, HARNESS_POSITION))
    per_batch: Dict[int, SinkUnit] = {}
    for row in rows:
        batch_id = int(row.pop(HARNESS_BATCH))
        row.pop(HARNESS_POSITION, None)
        per_batch.setdefault(batch_id, SinkUnit((batch_id,), [])).rows.append(
            tuple(row.values()))
    return [per_batch[number] for number in sorted(per_batch)]


# -- keeping a file source's batch plan across a restart ----------------------

def keep_batch_plan(spark: Any, checkpoint: str, *, say: Optional[Callable[[str], None]] = None,
                    settle_seconds: float = 2.0) -> Optional[int]:
    """Before a restart: if the query stopped after its file source had logged
    the files of the next micro-batch but before Spark wrote that batch's
    offsets, write those offsets (Spark then runs the batch as it had planned
    it) and return the batch id; else None.

    Without this, Spark's file source, whose log is already ahead, hands the
    logged files *and* the next ones to one micro-batch: ``maxFilesPerTrigger``
    does not hold across the restart, and in EventTime mode the watermark
    (which rows are late, when timers fire) moves differently from a run that
    never stopped. The offsets written are the ones Spark would have written:
    the previous batch's metadata with the watermark from its commit, the
    file source's offset at its last log entry. Queries with one file source
    only, on a classic session (Spark Connect cannot write a plain file); a
    batch planned before any batch committed is left to Spark."""
    if is_connect(spark):
        return None
    store = storage_for(spark)
    if not store.exists(join_path(checkpoint, "offsets")):
        return None
    sources = join_path(checkpoint, "sources/0")
    found = _orphans(store, checkpoint, sources)
    if found is None:
        return None
    newest = max((e.modified_ms for e in store.list(sources)), default=0)
    wait = settle_seconds - (wall_clock.time() * 1000 - newest) / 1000
    if wait > 0:  # a query may be planning that batch right now: let it finish first
        wall_clock.sleep(min(wait, settle_seconds))
        found = _orphans(store, checkpoint, sources)
        if found is None:
            return None
    batch_id, first, last, previous, watermark_ms = found
    text = planned_offsets(previous, watermark_ms, last, int(wall_clock.time() * 1000))
    store.write_text(join_path(checkpoint, f"offsets/{batch_id}"), text)
    (say or _stderr)(
        f"sparkwax: {checkpoint}: the query stopped after its file source had logged the "
        f"files of micro-batch {batch_id} (source log {first}..{last}) but before Spark "
        f"wrote the batch's offsets; wrote offsets/{batch_id} so the restart runs that "
        f"batch as planned")
    return batch_id


def _orphans(store: Any, checkpoint: str, sources: str
             ) -> Optional[Tuple[int, int, int, OffsetEntry, int]]:
    """``(batch id, first, last, previous offsets, watermark)`` of a batch the
    file source logged but the offset log does not have (reads the newest
    offsets and commit only)."""
    offset_files = log_files(store, join_path(checkpoint, "offsets"))
    commit_files = log_files(store, join_path(checkpoint, "commits"))
    if not offset_files:
        return None
    (last_id, _), path = max(offset_files.items())
    last = parse_offsets(last_id, store.read_text(path), path)
    committed = {number for (number, _) in commit_files}
    logged = [number for (number, _) in log_files(store, sources)]
    found = orphaned_entries({last_id: last}, committed, logged)
    if found is None or found[0] == 0:
        return None
    batch_id, first, end = found
    if file_offset(last.offsets[0]) != first - 1:
        return None
    commit_path = commit_files[(last_id, False)]
    return batch_id, first, end, last, parse_commit(store.read_text(commit_path), commit_path)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


__all__ = ["CheckpointPlan", "InputBatch", "SinkUnit", "keep_batch_plan", "log_files", "output_type",
           "path_mapper",
           "read_commits", "read_inputs", "read_offsets", "read_plan", "read_sink"]
