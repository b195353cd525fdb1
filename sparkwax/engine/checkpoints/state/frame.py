"""``read_state``: a step's state as a Spark DataFrame, one row per live key,
decoded on the executors (``mapInArrow`` over Spark's ``statestore`` reader;
nothing is collected).

Columns: the step's key columns (named and typed as the step's; a packed
step's bucket row becomes one row per key), ``snapshot``, ``timer`` (the
next ``notify_at``, a timestamp), ``deadline`` (a two-clock step's
processing deadline, else null), ``bytes`` (the stored blob's size),
``partition`` and ``error`` (why the snapshot could not be decoded:
``"SnapshotError: step 's', key 'k', decode: ..."``; the snapshot is then
null and the other rows are read as usual).

>>> state = sw.read_state(spark, "/data/ck")                       # doctest: +SKIP
>>> state.createOrReplaceTempView("state")                         # doctest: +SKIP
>>> spark.sql("SELECT user, bytes FROM state WHERE bytes > 1000").show()  # doctest: +SKIP
>>> typed = sw.read_state(spark, "/data/ck", schema="total long, n long",  # doctest: +SKIP
...                       decode=lambda s: {"total": s[0], "n": s[1]})
>>> sw.read_state(spark, "/data/ck", changes=(3, 5))               # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..format.files import STEPS_FILE
from ....errors import CheckpointError, ConfigError
from ...hosts.bucket import Bucket
from ..snapshots import is_packed, require_checkpoint, state_frame
from ..diagnose import explained, read_steps
from ...planning.schemas import parse_ddl
from ...deploy.shipping import ship_function
from ...spark_version import to_arrow_schema
from ..storage import join_path, storage_for
from .asked import require_committed_batch, require_step_state
from .rows import (BATCH, BEFORE, BLOB, CHANGE, DEADLINE, KEY, PARTITION, TIMER, Layout,
                   StateRows)

CHANGE_FEED_STORE = "RocksDBStateStoreProvider"
_STORE_CONF = "spark.sql.streaming.stateStore.providerClass"
_BASE = "base"  # the state before a change feed's first batch, while diffing buckets


def read_state(spark: Any, checkpoint: str, *, operator_id: int = 0,
                    batch_id: Optional[int] = None,
                    decode: Optional[Callable[[Any], Any]] = None,
                    schema: Union[None, str, T.StructType] = None,
                    changes: Optional[Tuple[int, Optional[int]]] = None,
                    key_schema: Optional[str] = None, snapshots: bool = True) -> DataFrame:
    """The state of a checkpointed step as a DataFrame, one row per key
    (see the module docstring for the columns).

    ``snapshot`` is by default the snapshot as JSON text, exactly as
    ``sparkwax state show --json`` writes it (``json_value``); with
    ``schema=`` (DDL or a StructType) a typed struct made from
    ``decode(snapshot)`` (a dict or a tuple), or from the snapshot itself
    when no ``decode`` is given; with ``decode`` only, the JSON of what it
    returns. A value that does not fit the schema is a null snapshot with its
    ``error``. ``decode`` runs on the executors (shipped with the step's
    modules). ``snapshots=False``: no snapshot is decoded (keys, sizes and
    timers only; ``snapshot`` null).

    ``batch_id``: the state as it was after that micro-batch (Spark keeps
    ``spark.sql.streaming.minBatchesToRetain`` of them). ``changes=(start,
    end)``: what those batches changed (``end`` None: up to the last), from
    Spark's change feed, which only the RocksDB state store with changelog
    checkpointing has, with ``batch_id`` and ``change_type`` columns: for a
    per-key step Spark's own rows (``update`` with the new snapshot,
    ``delete`` with the key only); for a packed step, whose state rows are
    buckets, the same per key: every changed bucket is compared with its
    previous value (from the feed, or the state before ``start``) and only
    the keys written (``update``) or removed (``delete``) are reported.

    A packed step's key columns come from ``key_schema`` (DDL, e.g.
    ``"user string"``), else from what ``sw.start`` recorded in
    ``<checkpoint>/sparkwax-steps.json``, else from the first stored key's
    Python type (``key`` or ``key_1, key_2...``). A packed step's
    deadlines are read when the checkpoint's record says it has them.
    """
    if changes is not None and batch_id is not None:
        raise ConfigError("read_state takes batch_id= or changes=, not both")
    if changes is not None:
        changes = change_range(changes)
        require_change_feed(spark, checkpoint, operator_id)
    flat, layout, key_type = flat_state(spark, checkpoint, operator_id=operator_id,
                                        batch_id=batch_id, changes=changes,
                                        key_schema=key_schema)
    out = output_type(key_type, snapshot_type(spark, schema), changes is not None)
    mapper = StateRows(layout, to_arrow_schema(out, timezone="UTC"), key_type.fieldNames(),
                       decode, schema is None, snapshots)

    def state_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return mapper(batches)  # a plain function for pyspark

    return flat.mapInArrow(ship_function(spark, state_rows), out)


def flat_state(spark: Any, checkpoint: str, *, operator_id: int = 0, batch_id: Optional[int] = None,
               changes: Optional[Tuple[int, Optional[int]]] = None,
               key_schema: Optional[str] = None, step_id: Optional[str] = None
               ) -> Tuple[DataFrame, Layout, T.StructType]:
    """The state rows as the flat columns ``rows.entries`` reads, their
    ``Layout`` and the step's key columns (``step_id``: the one errors name,
    default the recorded one, else ``"state"``). The operator and batch
    asked for are checked first (``asked``: named errors, not Spark's)."""
    operator_id, batch_id = checked_request(spark, checkpoint, operator_id, batch_id)
    raw = state_frame(spark, checkpoint, operator_id=operator_id, batch_id=batch_id,
                      changes=changes)
    recorded = recorded_step(spark, checkpoint)
    packed = is_packed(raw)
    key_type = _key_type(spark, checkpoint, raw, packed, key_schema, recorded, operator_id)
    state_fields = raw.schema["value"].dataType["groupState"].dataType.fieldNames()
    deadlines = bool(recorded.get("deadlines")) if packed else "deadline" in state_fields
    layout = Layout(packed, len(key_type.fields), deadlines,
                    step_id or recorded.get("step_id") or "state", changes is not None)
    return _flat(spark, checkpoint, raw, layout, operator_id, changes), layout, key_type


def checked_request(spark: Any, checkpoint: str, operator_id: Any, batch_id: Any
                    ) -> Tuple[int, Optional[int]]:
    """``(operator_id, batch_id)`` checked against the checkpoint (a batch
    committed, a sparkwax step's operator), or a ``ConfigError``."""
    store = storage_for(spark)
    require_checkpoint(store, checkpoint)
    batch = require_committed_batch(store, checkpoint, batch_id)  # first: a batch committed
    return require_step_state(store, checkpoint, operator_id), batch


def output_type(key_type: T.StructType, snapshot: T.DataType, changes: bool) -> T.StructType:
    """The columns of ``read_state``."""
    taken = {"snapshot", "timer", "deadline", "bytes", "partition", "error", BATCH, CHANGE}
    clash = sorted(taken & set(key_type.fieldNames()))
    if clash:
        raise ConfigError(f"read_state: the key column(s) {clash} clash with its own columns")
    head = [T.StructField(BATCH, T.LongType()), T.StructField(CHANGE, T.StringType())] \
        if changes else []
    return T.StructType(head + [T.StructField(f.name, f.dataType, True) for f in key_type] + [
        T.StructField("snapshot", snapshot), T.StructField("timer", T.TimestampType()),
        T.StructField("deadline", T.TimestampType()), T.StructField("bytes", T.LongType()),
        T.StructField("partition", T.IntegerType()), T.StructField("error", T.StringType())])


def snapshot_type(spark: Any, schema: Union[None, str, T.StructType]) -> T.DataType:
    if schema is None:
        return T.StringType()
    if isinstance(schema, T.StructType):
        return schema
    return _struct_of(spark, schema, "schema", "DDL or a StructType")


def _struct_of(spark: Any, ddl: Any, name: str, wanted: str) -> T.StructType:
    """``ddl`` parsed by ``spark`` as a StructType, or a ConfigError naming ``name``."""
    if not isinstance(ddl, str):
        raise ConfigError(f"read_state: {name} must be {wanted}, got {ddl!r}")
    try:
        parsed = parse_ddl(spark, ddl)
    except Exception as error:
        raise ConfigError(f"read_state: cannot parse {name} {ddl!r}: {error}") from None
    if not isinstance(parsed, T.StructType):
        raise ConfigError(f"read_state: {name} must be {wanted}, got {ddl!r}")
    return parsed


def change_range(changes: Any) -> Tuple[int, Optional[int]]:
    """``(start, end)`` checked: batch ids, ``end`` None or at least ``start``."""
    try:
        start, end = changes
    except (TypeError, ValueError):
        raise ConfigError(f"changes= takes (start_batch, end_batch), got {changes!r}") from None
    if not isinstance(start, int) or start < 0 or (end is not None and (
            not isinstance(end, int) or end < start)):
        raise ConfigError(f"changes= takes two batch ids, start <= end, got {changes!r}")
    return start, end


def require_change_feed(spark: Any, checkpoint: str, operator_id: int) -> None:
    """A ``ConfigError`` naming the store unless the checkpoint's state is in
    RocksDB with changelog checkpointing (the only store with a change feed)."""
    store = storage_for(spark)
    provider = store_provider(store, checkpoint)
    name = (provider or "HDFSBackedStateStoreProvider").rsplit(".", 1)[-1]
    fix = ("read past batches with batch_id= instead (and compare them), or run the query "
           "on a new checkpoint with the RocksDB store and changelog checkpointing "
           "(sw.local_session(state_store=\"rocksdb\"), or "
           "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled=true)")
    if name != CHANGE_FEED_STORE:
        raise ConfigError(f"{checkpoint}: changes= reads Spark's state change feed, which only "
                          f"the RocksDB state store ({CHANGE_FEED_STORE}) with changelog "
                          f"checkpointing has; this checkpoint's state is in {name}: {fix}")
    partition = join_path(checkpoint, f"state/{operator_id}/0")
    if not any(e.name.endswith(".changelog") for e in store.list(partition)):
        raise ConfigError(f"{checkpoint}: changes= reads Spark's state change feed, which needs "
                          f"changelog checkpointing; this checkpoint's {name} state has no "
                          f"changelog files: {fix}")


def store_provider(store: Any, checkpoint: str) -> Optional[str]:
    """The state store class the checkpoint's newest offset log entry names."""
    import json

    numbered = [e for e in store.list(join_path(checkpoint, "offsets")) if e.name.isdigit()]
    if not numbered:
        return None
    newest = max(numbered, key=lambda e: int(e.name))
    lines = (store.read_text(newest.path) or "").splitlines()
    try:
        provider: Optional[str] = json.loads(lines[1]).get("conf", {}).get(_STORE_CONF)
        return provider
    except (IndexError, ValueError, AttributeError):
        return None


def recorded_step(spark: Any, checkpoint: str) -> Dict[str, Any]:
    """The one step ``sw.start`` recorded in ``sparkwax-steps.json`` ({} if
    none, several, or the file is damaged: the state can still be read)."""
    try:
        steps = (read_steps(storage_for(spark), checkpoint) or {}).get("steps", {})
    except CheckpointError:
        return {}
    return dict(next(iter(steps.values()))) if len(steps) == 1 else {}


def _key_type(spark: Any, checkpoint: str, raw: DataFrame, packed: bool, key_schema: Optional[str],
              recorded: Dict[str, Any], operator_id: int) -> T.StructType:
    if not packed:
        stored: T.StructType = raw.schema["key"].dataType  # type: ignore[assignment]
        return stored
    ddl = key_schema or recorded.get("key")
    if ddl is None:
        with explained(spark, checkpoint, operator=operator_id):
            ddl = _first_key_ddl(spark, raw)
    return _struct_of(spark, ddl, "key_schema", "DDL such as 'user string'")


def _first_key_ddl(spark: Any, raw: DataFrame) -> str:
    """A packed step's key columns from its first stored key's Python type
    (one small job: the type's DDL comes back, not the state)."""
    def first_key(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for value in batch.column(0).to_pylist():
                try:
                    keys = Bucket.decode(value).keys
                except Exception:
                    continue
                if keys:
                    yield pa.RecordBatch.from_pydict({"ddl": [key_ddl(keys[0])]})
                    return

    found = raw.select(F.col("value.groupState.keys")) \
        .mapInArrow(ship_function(spark, first_key), "ddl string").limit(1).collect()
    if not found:
        return "key string"  # no key stored: any type reads nothing
    if not found[0]["ddl"]:
        raise ConfigError("read_state: a packed step's key columns are not recorded in "
                          f"{STEPS_FILE} and its keys' type is not one sparkwax can name: "
                          "give key_schema= (e.g. \"user string\")")
    ddl: str = found[0]["ddl"]
    return ddl


def key_names(raw: DataFrame) -> List[str]:
    """The names of the state rows' key columns."""
    key_type: T.StructType = raw.schema["key"].dataType  # type: ignore[assignment]
    return key_type.fieldNames()


def key_ddl(key: Any) -> str:
    """The key columns' DDL for a packed step's Python key ("" if unknown).

    >>> key_ddl("u1"), key_ddl((7, True)), key_ddl(object())
    ('key string', 'key_1 bigint, key_2 boolean', '')
    """
    from datetime import date, datetime
    from decimal import Decimal

    kinds = ((bool, "boolean"), (int, "bigint"), (float, "double"), (str, "string"),
             (bytes, "binary"), (datetime, "timestamp"), (date, "date"),
             (Decimal, "decimal(38,18)"))
    parts = key if isinstance(key, tuple) else (key,)
    names = ["key"] if not isinstance(key, tuple) else [f"key_{i + 1}" for i in range(len(key))]
    types = [next((name for kind, name in kinds if isinstance(p, kind)), "") for p in parts]
    if not all(types):
        return ""
    return ", ".join(f"{n} {t}" for n, t in zip(names, types))


def _flat(spark: Any, checkpoint: str, raw: DataFrame, layout: Layout, operator_id: int,
          changes: Optional[Tuple[int, Optional[int]]]) -> DataFrame:
    """The state rows as the flat columns ``rows.entries`` reads."""
    head = [F.col(BATCH), F.col(CHANGE)] if changes is not None else []
    if not layout.packed:
        names = key_names(raw)
        deadline = F.col("value.groupState.deadline") if layout.deadlines \
            else F.lit(None).cast("long")
        return raw.select(*head, *[F.col(f"key.`{n}`").alias(f"{KEY}{i}")
                                   for i, n in enumerate(names)],
                          F.col("value.groupState.snapshot").alias(BLOB),
                          F.col("value.groupState.timer").alias(TIMER), deadline.alias(DEADLINE),
                          F.col(PARTITION))
    bucket = F.col("key").alias("__sw_bucket_key")
    rows = raw.select(*head, bucket, F.col("value.groupState.keys").alias(BLOB), F.col(PARTITION))
    if changes is None:
        return rows.drop("__sw_bucket_key")
    start = changes[0]
    if start > 0:  # each bucket's value before the first batch: the diff's base
        base = state_frame(spark, checkpoint, operator_id=operator_id, batch_id=start - 1)
        rows = base.select(F.lit(start - 1).cast("long").alias(BATCH), F.lit(_BASE).alias(CHANGE),
                           bucket, F.col("value.groupState.keys").alias(BLOB),
                           F.col(PARTITION)).unionByName(rows)
    order = Window.partitionBy(PARTITION, "__sw_bucket_key").orderBy(BATCH)
    return rows.withColumn(BEFORE, F.lag(BLOB).over(order)) \
        .where(F.col(CHANGE) != F.lit(_BASE)).drop("__sw_bucket_key")


__all__ = ["CHANGE_FEED_STORE", "change_range", "checked_request", "flat_state", "key_ddl",
           "output_type", "read_state", "recorded_step", "require_change_feed", "snapshot_type",
           "store_provider"]
