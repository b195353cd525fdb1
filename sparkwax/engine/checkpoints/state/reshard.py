"""The state of a stopped query, written again for another number of state
partitions (and, for a packed step, of buckets): the heavy half of
``rescale`` (``rescale.py`` places what this writes into the checkpoint).

Spark's state store is written only by a streaming query, so the new state
is written by one: Spark's ``statestore`` reader reads every state row of the
last committed batch; a packed step's buckets are opened into one row per key
on the executors and packed again into the new buckets (``pmod(xxhash64(key),
buckets)``, the packed host's own rule); the rows go to a Parquet folder, and
a one-batch streaming query over it, grouped by the same key columns (the
same types and nullability, read from the checkpoint's state schema), stores
each row as its state with its timeout, under the checkpoint's own state
confs and the new partition count. Its state files (version 1) are what
``rescale`` renames into the checkpoint. Nothing here writes into the
checkpoint itself.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional

from ....errors import ConfigError
from ..format.paths import join_path
from ...deploy.shipping import ship_function
from ...spark_version import from_ddl, statestore_reader

BUCKET_COLUMN = "__sw_bucket"
_TIMEOUT = "__sw_timeout"
_KEY_PICKLE = "__sw_key"
_WATERMARK = "__sw_at"
_STATE = "__sw_state_"  # a state field's column in the rows to store
NO_TIMEOUT = -1  # Spark's "no timeout" in a state row's timeoutTimestamp


@dataclass(frozen=True)
class StateLayout:
    """What a checkpoint's state rows look like (its ``_metadata/schema``)."""

    key_schema: Any       # StructType of the state key (user keys, or the bucket column)
    state_schema: Any     # StructType of the stored group state
    timed: bool           # rows carry a timeout timestamp (a step with timers)
    packed: bool          # a packed step: one row per bucket

    @classmethod
    def parse(cls, schema_file: bytes) -> "StateLayout":
        """From the bytes of ``state/<op>/0/_metadata/schema`` (Spark writes
        the key schema's JSON, then the value schema's)."""
        from pyspark.sql import types as T

        text = schema_file.decode("utf-8", errors="replace")
        found: List[Dict[str, Any]] = []
        start = text.find('{"type":"struct"')
        while start >= 0 and len(found) < 2:
            value, end = json.JSONDecoder().raw_decode(text[start:])
            found.append(value)
            start = text.find('{"type":"struct"', start + end)
        if len(found) != 2:
            raise ConfigError("the state schema file holds no key and value schema")
        key = T.StructType.fromJson(found[0])
        value = T.StructType.fromJson(found[1])
        names = value.fieldNames()
        if "groupState" not in names:
            raise ConfigError(f"not an applyInPandasWithState state (value fields {names})")
        state = value["groupState"].dataType
        if not isinstance(state, T.StructType):
            raise ConfigError(f"not an applyInPandasWithState state (groupState {state})")
        return cls(key, state, "timeoutTimestamp" in names,
                   "keys" in state.fieldNames() and "buckets" in state.fieldNames())


def state_rows(spark: Any, checkpoint: str, layout: StateLayout, batch_id: int,
               buckets: Optional[int], key_ddl: Optional[str], operator: int = 0) -> Any:
    """The rows to store: the key columns, the group state's fields (one
    column each) and the timeout, for the state of ``batch_id``; a packed step's keys in
    ``buckets`` new buckets (its key columns typed by ``key_ddl``)."""
    from pyspark.sql import functions as F

    frame = (statestore_reader(spark, "sparkwax state rescale").option("operatorId", operator)
             .option("batchId", batch_id).load(checkpoint))
    timeout = F.col("value.timeoutTimestamp") if layout.timed else F.lit(NO_TIMEOUT)
    if not layout.packed:
        keys = [F.col("key").getField(name).alias(name) for name in layout.key_schema.fieldNames()]
        state = [F.col(f"value.groupState.`{name}`").alias(_STATE + name)
                 for name in layout.state_schema.fieldNames()]
        return frame.select(*keys, *state, timeout.cast("long").alias(_TIMEOUT))
    if buckets is None or key_ddl is None:
        raise ConfigError("a packed step's rescale needs its bucket count and key columns")
    return _rebucketed(spark, frame.select(F.col("value.groupState.keys").alias("keys"),
                                           timeout.cast("long").alias(_TIMEOUT)),
                       layout, buckets, key_ddl)


def _rebucketed(spark: Any, buckets_frame: Any, layout: StateLayout, buckets: int,
                key_ddl: str) -> Any:
    """Every key of every bucket row, put into ``buckets`` new buckets."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    key_type = from_ddl(key_ddl)
    if not isinstance(key_type, T.StructType):
        raise ConfigError(f"the packed step's recorded key {key_ddl!r} is not a list of columns")
    names = key_type.fieldNames()
    opened = T.StructType([*key_type.fields,
                           T.StructField(_KEY_PICKLE, T.BinaryType(), False),
                           T.StructField("blob", T.BinaryType(), False),
                           T.StructField("timer", T.LongType(), True),
                           T.StructField("armed", T.LongType(), True),
                           T.StructField(_TIMEOUT, T.LongType(), False)])
    keyed = buckets_frame.mapInPandas(ship_function(spark, _open_buckets(names)), opened)
    bucket = F.pmod(F.xxhash64(*[F.col(f"`{n}`") for n in names]), F.lit(buckets))
    packed = T.StructType([T.StructField(BUCKET_COLUMN, T.LongType(), False),
                           T.StructField("keys", T.BinaryType(), False),
                           T.StructField(_TIMEOUT, T.LongType(), False)])
    rows = (keyed.select(bucket.alias(BUCKET_COLUMN), _KEY_PICKLE, "blob", "timer", "armed",
                         _TIMEOUT)
            .groupBy(BUCKET_COLUMN).applyInPandas(ship_function(spark, _pack_bucket), packed))
    return rows.select(BUCKET_COLUMN, F.col("keys").alias(_STATE + "keys"),
                       F.lit(buckets).cast("long").alias(_STATE + "buckets"), _TIMEOUT)


def _open_buckets(names: List[str]) -> Callable[[Any], Iterator[Any]]:
    """mapInPandas: a bucket row -> one row per key (its columns, its pickled
    Python key, blob, timer, armed timeout, the bucket row's timeout)."""
    def open_buckets(frames: Any) -> Iterator[Any]:
        import pandas as pd

        from ...hosts.bucket import Bucket, NONE

        for frame in frames:
            out: Dict[str, List[Any]] = {name: [] for name in
                                    [*names, _KEY_PICKLE, "blob", "timer", "armed", _TIMEOUT]}
            for blob, timeout in zip(frame["keys"], frame[_TIMEOUT]):
                for key, stored, timer, armed in Bucket.decode(bytes(blob)).entries():
                    values = key if len(names) > 1 else (key,)
                    for name, value in zip(names, values):
                        out[name].append(value)
                    out[_KEY_PICKLE].append(pickle.dumps(key, protocol=5))
                    out["blob"].append(stored)
                    out["timer"].append(timer)
                    out["armed"].append(None if armed == NONE else armed)
                    out[_TIMEOUT].append(int(timeout))
            yield pd.DataFrame({name: pd.Series(values, dtype=object)
                                for name, values in out.items()})
    return open_buckets


def _pack_bucket(frame: Any) -> Any:
    """applyInPandas: one new bucket's keys -> its state row; its timeout is
    the earliest of the old buckets' its keys came from (never later than
    any of its keys needs: an early call finds nothing due and waits on)."""
    import pandas as pd

    from ...hosts.bucket import Bucket

    bucket = Bucket.empty()
    for key, blob, timer, armed in zip(frame[_KEY_PICKLE], frame["blob"], frame["timer"],
                                       frame["armed"]):
        bucket.put(pickle.loads(bytes(key)), bytes(blob), _ms(timer), _ms(armed))
    blob, _ = bucket.encode()
    timeouts = [int(t) for t in frame[_TIMEOUT] if int(t) != NO_TIMEOUT]
    return pd.DataFrame({BUCKET_COLUMN: [int(frame[BUCKET_COLUMN].iloc[0])], "keys": [blob],
                         _TIMEOUT: [min(timeouts) if timeouts else NO_TIMEOUT]})


def _ms(value: Any) -> Optional[int]:
    return None if value is None or value != value else int(value)


def write_state(spark: Any, rows: Any, layout: StateLayout, work: str, partitions: int,
                confs: Dict[str, str]) -> str:
    """Store ``rows`` with a one-batch streaming query on a new checkpoint
    under ``work``, in ``partitions`` state partitions, under ``confs`` (the
    old checkpoint's state confs); its checkpoint's path."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    folder, checkpoint = join_path(work, "rows"), join_path(work, "checkpoint")
    rows.write.mode("overwrite").parquet(folder)
    source = spark.readStream.schema(rows.schema).parquet(folder)
    keys = [_with_nullability(F.col(f"`{f.name}`"), f) for f in layout.key_schema.fields]
    columns = [*keys, *[F.col(_STATE + n) for n in layout.state_schema.fieldNames()],
               F.col(_TIMEOUT)]
    timeout_conf = "NoTimeout"
    if layout.timed:  # any timeout is stored as it is: under EventTimeTimeout, as a timestamp
        timeout_conf = "EventTimeTimeout"  # (which needs a watermarked column: a null one,
        columns.append(F.lit(None).cast(T.TimestampType()).alias(  # never late, never moving)
            _WATERMARK, metadata={"spark.watermarkDelayMs": 0}))
    staged = source.select(*columns)
    names = layout.key_schema.fieldNames()
    stored = staged.groupBy(*[F.col(f"`{n}`") for n in names]).applyInPandasWithState(
        ship_function(spark, _store_row(layout.state_schema.fieldNames())),
        outputStructType=T.StructType([T.StructField("stored", T.LongType())]),
        stateStructType=layout.state_schema, outputMode="append", timeoutConf=timeout_conf)
    settings = {**confs, "spark.sql.shuffle.partitions": str(partitions)}
    with _session_confs(spark, settings):
        query = (stored.writeStream.format("noop").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination()
    return checkpoint


def _store_row(fields: List[str]) -> Callable[[Any, Any, Any], Iterator[Any]]:
    """applyInPandasWithState: a key's one row becomes its state and timeout."""
    def store_row(key: Any, frames: Any, state: Any) -> Iterator[Any]:
        for frame in frames:
            values = zip(*[frame[_STATE + name] for name in fields])
            for stored, timeout in zip(values, frame[_TIMEOUT]):
                state.update(tuple(_plain(value) for value in stored))
                if int(timeout) != NO_TIMEOUT:
                    if int(timeout) > 0:
                        state.setTimeoutTimestamp(int(timeout))
                    else:  # before 1970: pyspark refuses it, the JVM stores any long
                        state._timeout_timestamp = int(timeout)
        return iter(())
    return store_row


def _plain(value: Any) -> Any:
    """A state field as pyspark's state writer takes it (pandas hands NaN
    for a null long, numpy scalars for numbers)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    if hasattr(value, "item"):
        return value.item()
    return bytes(value) if isinstance(value, (bytearray, memoryview)) else value


def _with_nullability(column: Any, field: Any) -> Any:
    """A key column as non-nullable as the checkpoint's (a file source reads
    every column as nullable; Spark's state schema check compares them)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if field.nullable:
        return column.alias(field.name)
    fallback = {T.StringType: F.lit(""), T.BinaryType: F.lit(b""),
                T.BooleanType: F.lit(False)}.get(type(field.dataType))
    if fallback is None and isinstance(field.dataType, T.NumericType):
        fallback = F.lit(0).cast(field.dataType)
    if fallback is None:
        raise ConfigError(f"rescale cannot rebuild the non-nullable key column {field.name!r} "
                          f"of type {field.dataType.simpleString()}")
    return F.coalesce(column, fallback).alias(field.name)


class _session_confs:
    """Set confs on a session for a block, then put back what was there."""

    def __init__(self, spark: Any, settings: Dict[str, str]):
        self.spark, self.settings = spark, settings
        self.before: Dict[str, Optional[str]] = {}

    def __enter__(self) -> None:
        for name, value in self.settings.items():
            self.before[name] = self.spark.conf.get(name, None)
            self.spark.conf.set(name, value)

    def __exit__(self, *exc: Any) -> None:
        for name, value in self.before.items():
            if value is None:
                self.spark.conf.unset(name)
            else:
                self.spark.conf.set(name, value)


__all__ = ["BUCKET_COLUMN", "StateLayout", "state_rows", "write_state"]
