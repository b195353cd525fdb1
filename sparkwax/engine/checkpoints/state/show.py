"""What ``sparkwax state show`` prints, from ``read_state``: only the
rows shown come to the driver (the ``limit`` largest keys, or the one asked
for), and the summary is computed by Spark's aggregates.

>>> rows, summary, deadlines = shown_state(spark, "/data/ck", limit=5)  # doctest: +SKIP
>>> rows[0].key, rows[0].snapshot, summary["live_keys"]                # doctest: +SKIP
('u17', [3, 12], 812)
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from pyspark.sql import functions as F

from ....timers import from_epoch_ms
from ..snapshots import key_order
from ...hosts.columns import plain_key
from ..diagnose import explained
from ...deploy.session_confs import max_snapshot_bytes
from .frame import read_state


class ShownKey(NamedTuple):
    """One key as ``state show`` prints it: ``snapshot`` is the JSON value
    (``repr`` text for the table), ``error`` why it is not shown."""

    key: Any
    snapshot: Any
    error: Optional[str]
    size: int
    timer: Optional[datetime]
    deadline: Optional[datetime]
    partition: int


def shown_state(spark: Any, checkpoint: str, *, operator_id: int = 0, key: Any = None,
                limit: Optional[int] = None, as_repr: bool = False
                ) -> Tuple[List[ShownKey], Dict[str, Any], bool]:
    """``(keys, summary, deadlines)``: the ``limit`` largest keys (or
    ``key``'s, matched on the first key column, typed) sorted by key
    (``key_order``); the summary of the whole state (``live_keys``,
    ``total_bytes``, ``largest_key``, ``largest_bytes``); whether the step
    has processing deadlines (a two-clock step). ``as_repr``: snapshots as
    their ``repr`` (the table), else as JSON values (``--json``)."""
    state = read_state(spark, checkpoint, operator_id=operator_id,
                            decode=repr if as_repr else None)
    sizes = read_state(spark, checkpoint, operator_id=operator_id, snapshots=False)
    names = [f.name for f in state.schema.fields][:state.columns.index("snapshot")]
    keys = F.struct(*[F.col(f"`{n}`") for n in names])
    with explained(spark, checkpoint, operator=operator_id):
        totals = sizes.agg(F.count(F.lit(1)).alias("keys"), F.sum("bytes").alias("bytes"),
                           F.max_by(keys, "bytes").alias("largest"),
                           F.max("bytes").alias("largest_bytes")).collect()[0]
        deadlines = _has_deadlines(spark, checkpoint, operator_id)
    single = len(names) == 1
    largest = totals["largest"]
    summary = {"live_keys": totals["keys"], "total_bytes": totals["bytes"] or 0,
               "largest_key": plain_key(tuple(largest), single) if largest is not None else None,
               "largest_bytes": totals["largest_bytes"] or 0}
    if key is not None:  # typed, as key_matches: the text cast to the column's type
        first = state.schema[names[0]].dataType
        wanted = F.lit(key).cast(first) if isinstance(key, str) else F.lit(key)
        state = state.where(F.col(f"`{names[0]}`") == wanted)
    state = state.orderBy(F.col("bytes").desc())
    if limit is not None:
        state = state.limit(limit)
    most = max_snapshot_bytes(spark)  # a larger snapshot stays on the executors
    fits = F.lit(True) if most is None else F.col("bytes") <= F.lit(most)
    shown = state.select(keys.alias("key"), F.when(fits, F.col("snapshot")).alias("snapshot"),
                         F.when(fits, F.col("error")).otherwise(F.concat(
                             F.lit("not shown: "), F.col("bytes").cast("string"),
                             F.lit(f" bytes, over this session's {most or 0} "
                                   f"(spark.sparkwax.maxSnapshotBytes)"))).alias("error"),
                         "bytes", F.unix_millis("timer").alias("timer"),
                         F.unix_millis("deadline").alias("deadline"), "partition")
    with explained(spark, checkpoint, operator=operator_id):
        rows = shown.collect()
    found = [ShownKey(plain_key(tuple(row["key"]), single),
                      None if row["snapshot"] is None else json.loads(row["snapshot"]),
                      row["error"], row["bytes"] or 0, _moment(row["timer"]),
                      _moment(row["deadline"]), row["partition"]) for row in rows]
    return sorted(found, key=lambda k: key_order(k.key)), summary, deadlines


def _has_deadlines(spark: Any, checkpoint: str, operator_id: int) -> bool:
    """A two-clock step: a per-key state row with a deadline, or a packed
    step recorded as having deadlines."""
    from .frame import flat_state

    return flat_state(spark, checkpoint, operator_id=operator_id,
                      key_schema="key string")[1].deadlines


def _moment(ms: Optional[int]) -> Optional[datetime]:
    return None if ms is None else from_epoch_ms(ms)


__all__ = ["ShownKey", "shown_state"]
