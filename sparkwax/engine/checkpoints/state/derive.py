"""A packed step's bucket count and key columns, derived from its state when
the checkpoint has no record of them (a query started without ``sw.start``,
such as ``sparkwax demo``'s): what ``rescale`` needs to move its keys.

- The bucket count: every packed state row holds it (the ``buckets`` field
  beside the bucket's ``keys``, ``PACKED_STATE_SCHEMA``).
- The key columns: the first stored key's Python type names them
  (``frame.key_ddl``: ``key string``, ``key_1 bigint, key_2 string``...).
  A Python type can stand for several Spark types that hash differently
  (an ``int`` column and a ``bigint`` one, ``float`` and ``double``), and
  the packed host puts a key in bucket ``pmod(xxhash64(key columns),
  buckets)``: so each candidate is checked against the state itself, every
  stored key in the bucket row it is in, and the first that places them all
  is taken (none: a ``RescaleError`` says to record them by restarting the
  query once with ``sw.start``).
"""

from __future__ import annotations

from itertools import product
from typing import Any, Callable, Iterator, List, Optional

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ....errors import RescaleError
from ...deploy.shipping import ship_function
from ...spark_version import from_ddl, statestore_reader
from .frame import key_ddl

_ALTERNATIVES = {"bigint": ("bigint", "int"), "double": ("double", "float")}
_MOST_CANDIDATES = 16
_BUCKET = "__sw_stored_bucket"


def state_rows_of(spark: Any, checkpoint: str, batch_id: int) -> Any:
    """The raw state rows of operator 0 as ``batch_id`` left them."""
    return (statestore_reader(spark, "sparkwax state rescale").option("operatorId", 0)
            .option("batchId", batch_id).load(checkpoint))


def stored_bucket_count(checkpoint: str, rows: Any) -> Optional[int]:
    """The bucket count the packed state rows hold (None: no row); a
    ``RescaleError`` when they disagree."""
    found = rows.agg(F.min("value.groupState.buckets").alias("least"),
                     F.max("value.groupState.buckets").alias("most")).first()
    if found is None or found["least"] is None:
        return None
    if found["least"] != found["most"]:
        raise RescaleError(f"{checkpoint}: its packed state rows hold bucket counts from "
                           f"{found['least']} to {found['most']}; the state is not one "
                           "query's: start over with a new checkpoint")
    return int(found["least"])


def stored_key_ddl(spark: Any, checkpoint: str, rows: Any, buckets: int) -> str:
    """The key columns' DDL, derived from the first stored key's Python
    type, under which every stored key hashes into the bucket row it is
    stored in; a ``RescaleError`` naming the checkpoint when none does."""
    first = _first_key_ddl(spark, rows)
    if first is None:
        return "key string"  # no key stored: nothing to move
    if not first:
        raise RescaleError(f"{checkpoint}: a packed step's key columns are not recorded and "
                           f"its keys' Python type is not one sparkwax can name: {_WAY_OUT}")
    tried = key_candidates(first)
    for ddl in tried:
        key_type = from_ddl(ddl)
        if isinstance(key_type, T.StructType) and _misplaced(spark, rows, key_type,
                                                             buckets) == 0:
            return ddl
    raise RescaleError(f"{checkpoint}: the stored keys do not all hash into their buckets as "
                       f"{' or '.join(repr(d) for d in tried)}: {_WAY_OUT}")


_WAY_OUT = ("restart the query once with sw.start (it records the key columns and buckets in "
            "sparkwax-steps.json), stop it, and rescale again")


def key_candidates(ddl: str) -> List[str]:
    """``ddl`` and its variants with a Python int as ``int`` and a float as
    ``float`` (the types that hash differently), the given one first.

    >>> key_candidates("key_1 bigint, key_2 string")
    ['key_1 bigint, key_2 string', 'key_1 int, key_2 string']
    >>> key_candidates("key string")
    ['key string']
    """
    columns = [part.strip().rsplit(" ", 1) for part in ddl.split(",")]
    choices = [[f"{name} {kind}" for kind in _ALTERNATIVES.get(data_type, (data_type,))]
               for name, data_type in columns]
    return [", ".join(chosen) for chosen in product(*choices)][:_MOST_CANDIDATES]


def _first_key_ddl(spark: Any, rows: Any) -> Optional[str]:
    """``key_ddl`` of the first stored key (None: no key; "": unnamed type)."""
    def first_key(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from ...hosts.bucket import Bucket

        for batch in batches:
            for value in batch.column(0).to_pylist():
                keys = Bucket.decode(value).keys
                if keys:
                    yield pa.RecordBatch.from_pydict({"ddl": [key_ddl(keys[0])]})
                    return

    found = rows.select(F.col("value.groupState.keys")) \
        .mapInArrow(ship_function(spark, first_key), "ddl string").limit(1).collect()
    return str(found[0]["ddl"]) if found else None


def _misplaced(spark: Any, rows: Any, key_type: T.StructType, buckets: int) -> int:
    """How many stored keys, typed as ``key_type``, hash into another bucket
    than the row they are in (every key when they do not fit the types)."""
    bucket_field = rows.schema["key"].dataType.fieldNames()[0]
    names = key_type.fieldNames()
    opened = T.StructType([T.StructField(_BUCKET, T.LongType()), *key_type.fields])
    keyed = rows.select(F.col("key").getField(bucket_field).cast("long").alias(_BUCKET),
                        F.col("value.groupState.keys").alias("keys")) \
        .mapInPandas(ship_function(spark, _open_keys(names)), opened)
    placed = F.pmod(F.xxhash64(*[F.col(f"`{n}`") for n in names]), F.lit(buckets))
    try:
        return int(keyed.where(placed != F.col(_BUCKET)).count())
    except Exception:  # a key that does not fit the candidate's types (an int overflows)
        return -1


def _open_keys(names: List[str]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """mapInPandas: a bucket row -> its bucket id and each key's columns."""
    def open_keys(frames: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        from ...hosts.bucket import Bucket

        for frame in frames:
            out: dict[str, List[Any]] = {name: [] for name in [_BUCKET, *names]}
            for bucket, blob in zip(frame[_BUCKET], frame["keys"]):
                for key in Bucket.decode(bytes(blob)).keys:
                    out[_BUCKET].append(int(bucket))
                    for name, value in zip(names, key if len(names) > 1 else (key,)):
                        out[name].append(value)
            yield pd.DataFrame({name: pd.Series(values, dtype=object)
                                for name, values in out.items()})
    return open_keys


__all__ = ["key_candidates", "state_rows_of", "stored_bucket_count", "stored_key_ddl"]
