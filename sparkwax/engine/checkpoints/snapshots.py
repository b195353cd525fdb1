"""What a checkpoint holds: sparkwax snapshots read through Spark's ``statestore``
reader, the query's watermark from the commit log, and ``clear`` (``finish``,
on_eof for every live key, is ``sparkwax.engine.checkpoints.finish``).

>>> entries = read_entries(spark, "/tmp/ck", limit=10)            # doctest: +SKIP
>>> entries[0].key, entries[0].snapshot, entries[0].size          # doctest: +SKIP
('alice', (3, 12), 21)
"""

from __future__ import annotations

import json
import time as wall_clock
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ... import recovery
from ...errors import CheckpointError, ConfigError, SnapshotError
from ...timers import from_epoch_ms
from ..hosts.bucket import Bucket
from ..hosts.columns import plain_key
from .diagnose import check_logs, explained, read_steps
from .format.files import FOLLOWING_STATE
from .state.asked import is_following_step
from ..deploy.session_confs import max_snapshot_bytes
from .liveness import refuse_if_live
from .storage import filesystem_error, join_path, storage_for
from ..spark_version import statestore_reader




@dataclass(frozen=True)
class StateEntry:
    """One key's stored state."""

    key: Any
    snapshot: Any            # decoded snapshot (or the SnapshotError if it cannot be read)
    size: int                # bytes of the stored blob
    timer: Optional[datetime]
    partition: int


def state_frame(spark: Any, checkpoint: str, *, operator_id: int = 0,
                batch_id: Optional[int] = None,
                changes: Optional[Tuple[int, Optional[int]]] = None) -> Any:
    """The raw state rows of a sparkwax step (``key`` struct, ``value`` struct);
    ``changes=(start, end)``: Spark's change feed of those batches instead
    (``batch_id`` and ``change_type`` columns; ``end`` None: to the last)."""
    store = storage_for(spark)
    require_checkpoint(store, checkpoint)
    check_logs(store, checkpoint, sorted(_recorded_steps(store, checkpoint)))
    reader = statestore_reader(spark, "reading a checkpoint's state (sparkwax state show/check, "
                               "sw.read_state, sw.finish)", changes=changes is not None)
    reader = reader.option("operatorId", operator_id)
    following = is_following_step(store, checkpoint, operator_id)
    if following:  # a step after another: its ValueState holds the same row
        reader = reader.option("stateVarName", FOLLOWING_STATE)
    if batch_id is not None:
        reader = reader.option("batchId", batch_id)
    if changes is not None:
        reader = reader.option("readChangeFeed", True).option("changeStartBatchId", changes[0])
        if changes[1] is not None:
            reader = reader.option("changeEndBatchId", changes[1])
    try:
        with explained(spark, checkpoint, operator=operator_id):
            frame = reader.load(checkpoint)
    except CheckpointError:
        raise
    except Exception as error:
        raise filesystem_error(checkpoint, error) or error
    if following:  # as applyInPandasWithState's rows: value.groupState.snapshot...
        from pyspark.sql import functions as F

        frame = frame.select(*[F.struct(F.col("value").alias("groupState")).alias("value")
                               if name == "value" else F.col(name) for name in frame.columns])
    value_fields = frame.schema["value"].dataType.fieldNames()
    if "groupState" not in value_fields:
        raise ConfigError(f"operator {operator_id} of {checkpoint} is not an "
                          f"applyInPandasWithState step (state fields: {value_fields})")
    return frame


def _recorded_steps(store: Any, checkpoint: str) -> Dict[str, Any]:
    """The steps sw.start recorded in the checkpoint (none if it cannot tell)."""
    try:
        steps: Dict[str, Any] = (read_steps(store, checkpoint) or {}).get("steps", {})
        return steps
    except CheckpointError:  # a damaged steps file does not keep the state from being read
        return {}


def read_entries(spark: Any, checkpoint: str, *, operator_id: int = 0, key: Any = None,
                 limit: Optional[int] = None, step_id: str = "state") -> List[StateEntry]:
    """Decoded state entries, largest first (``read_state`` gives them sorted
    by key, with the summary)."""
    frame = state_frame(spark, checkpoint, operator_id=operator_id)
    if is_packed(frame):
        with explained(spark, checkpoint, operator=operator_id):
            entries = [e for e in packed_entries(frame, step_id)
                       if key is None or key_matches(e.key, key)]
        entries.sort(key=lambda e: -e.size)
        return entries[:limit] if limit is not None else entries
    return _keyed_entries(spark, checkpoint, frame, operator_id, key, limit, step_id)


def _keyed_entries(spark: Any, checkpoint: str, frame: Any, operator_id: int, key: Any,
                   limit: Optional[int], step_id: str) -> List[StateEntry]:
    """A per-key step's entries, largest first (one Spark job)."""
    from pyspark.sql import functions as F

    largest = max_snapshot_bytes(spark)  # a larger blob stays on the executors
    blob, size = F.col("value.groupState.snapshot"), F.length("value.groupState.snapshot")
    frame = frame.select("key", (blob if largest is None else F.when(size <= largest, blob))
                         .alias("snapshot"),
                         F.col("value.groupState.timer").alias("timer"), "partition_id",
                         size.alias("size"))
    key_names = frame.schema["key"].dataType.fieldNames()
    if key is not None:  # typed, as key_matches: the key cast to the column's type
        first = frame.schema["key"].dataType[key_names[0]].dataType
        wanted = F.lit(key) if not isinstance(key, str) else F.lit(key).cast(first)
        frame = frame.where(F.col(f"key.`{key_names[0]}`") == wanted)
    frame = frame.orderBy(F.col("size").desc())
    if limit is not None:
        frame = frame.limit(limit)
    entries = []
    with explained(spark, checkpoint, operator=operator_id):
        rows = frame.collect()
    for row in rows:
        plain = plain_key(tuple(row["key"]), len(key_names) == 1)
        try:
            if row["snapshot"] is None:
                raise SnapshotError(step_id, plain, "decode", reason=(
                    f"not shown: {row['size']:,} bytes, over this session's "
                    f"{largest or 0:,} (spark.sparkwax.maxSnapshotBytes)"))
            snapshot = recovery.decode(row["snapshot"], step_id=step_id, key=plain)
        except SnapshotError as error:
            snapshot = error
        timer = from_epoch_ms(row["timer"]) if row["timer"] is not None else None
        entries.append(StateEntry(plain, snapshot, row["size"], timer, row["partition_id"]))
    return entries


def read_state(spark: Any, checkpoint: str, *, operator_id: int = 0, key: Any = None,
               limit: Optional[int] = None, step_id: str = "state"
               ) -> Tuple[List[StateEntry], Dict[str, Any]]:
    """``(entries, summary)`` for ``state show`` with as few Spark jobs as it
    can: the entries (the ``limit`` largest, or all; only ``key`` when given)
    sorted by key (``key_order``), and ``state_summary``'s dict of the whole
    state. A packed step's buckets are read once; a per-key step's state once
    when every key is shown, else a count and the largest keys."""
    frame = state_frame(spark, checkpoint, operator_id=operator_id)
    if is_packed(frame):
        with explained(spark, checkpoint, operator=operator_id):
            every = packed_entries(frame, step_id)
        summary = _summary_of(every)
        entries = [e for e in every if key is None or key_matches(e.key, key)]
        entries.sort(key=lambda e: -e.size)
    else:
        entries = _keyed_entries(spark, checkpoint, frame, operator_id, key, limit, step_id)
        if key is None and (limit is None or len(entries) < limit):
            summary = _summary_of(entries)  # every key was read
        else:
            summary = _keyed_summary(spark, checkpoint, frame, operator_id)
    if limit is not None:
        entries = entries[:limit]
    return sorted(entries, key=lambda e: key_order(e.key)), summary


def _summary_of(entries: List[StateEntry]) -> Dict[str, Any]:
    largest = max(entries, key=lambda e: e.size, default=None)
    return {"live_keys": len(entries), "total_bytes": sum(e.size for e in entries),
            "largest_key": largest.key if largest else None,
            "largest_bytes": largest.size if largest else 0}


def key_order(key: Any) -> Tuple[Any, ...]:
    """A sort key that orders keys by value, whatever their types: None,
    booleans, numbers, texts, bytes, datetimes, dates, then tuples (compound
    keys) column by column, anything else by repr.

    >>> sorted([10, 9, "b", "a", None, 2.5], key=key_order)
    [None, 2.5, 9, 10, 'a', 'b']
    >>> sorted([("u1", 10), ("u1", 9), ("u0", 11)], key=key_order)
    [('u0', 11), ('u1', 9), ('u1', 10)]
    """
    if key is None:
        return (0,)
    if isinstance(key, bool):
        return (1, key)
    if isinstance(key, (int, float, Decimal)):
        return (2, 1, 0) if key != key else (2, 0, key)  # NaN last among numbers
    if isinstance(key, str):
        return (3, key)
    if isinstance(key, (bytes, bytearray)):
        return (4, bytes(key))
    if isinstance(key, datetime):
        naive = key.astimezone(timezone.utc).replace(tzinfo=None) if key.tzinfo else key
        return (5, naive)
    if isinstance(key, date):
        return (6, key)
    if isinstance(key, (tuple, list)):
        return (7, tuple(key_order(part) for part in key))
    return (8, type(key).__name__, repr(key))


def key_matches(stored: Any, wanted: Any) -> bool:
    """``state show --key``: whether a stored key's first column equals
    ``wanted``, typed: a text is read as the stored value's type (as Spark
    casts it for the per-key host's filter), so ``"7"`` finds the int 7.

    >>> key_matches(7, "7"), key_matches(("u1", 3), "u1"), key_matches(True, "false")
    (True, True, False)
    """
    first = stored[0] if isinstance(stored, tuple) else stored
    if not isinstance(wanted, str) or isinstance(first, str):
        return bool(first == wanted)
    try:
        if isinstance(first, bool):
            return first == {"true": True, "false": False}[wanted.strip().lower()]
        if isinstance(first, (int, float)):
            return bool(first == type(first)(wanted.strip()))
    except (KeyError, ValueError):
        return False
    return str(first) == wanted


def state_summary(spark: Any, checkpoint: str, *, operator_id: int = 0) -> Dict[str, Any]:
    """Live keys, total bytes and the largest key of a step's state."""
    from pyspark.sql import functions as F

    frame = state_frame(spark, checkpoint, operator_id=operator_id)
    if is_packed(frame):
        with explained(spark, checkpoint, operator=operator_id):
            entries = packed_entries(frame, "state")
        return _summary_of(entries)
    return _keyed_summary(spark, checkpoint, frame, operator_id)


def _keyed_summary(spark: Any, checkpoint: str, frame: Any, operator_id: int) -> Dict[str, Any]:
    from pyspark.sql import functions as F

    sized = frame.select("key", F.length("value.groupState.snapshot").alias("size"))
    with explained(spark, checkpoint, operator=operator_id):
        totals = sized.agg(F.count("*").alias("keys"), F.sum("size").alias("bytes")).collect()[0]
        largest = sized.orderBy(F.col("size").desc()).limit(1).collect()
    key_names = frame.schema["key"].dataType.fieldNames()
    return {
        "live_keys": totals["keys"],
        "total_bytes": totals["bytes"] or 0,
        "largest_key": plain_key(tuple(largest[0]["key"]), len(key_names) == 1)
        if largest else None,
        "largest_bytes": largest[0]["size"] if largest else 0,
    }


def is_packed(frame: Any) -> bool:
    """True for the state of a ``host="packed"`` step (one row per bucket)."""
    return "keys" in frame.schema["value"].dataType["groupState"].dataType.fieldNames()


def packed_blobs(frame: Any, step_id: str) -> Iterator[Tuple[Any, bytes, Optional[int], int]]:
    """``(key, blob, timer, partition)`` of every key of a packed step, read
    on the driver (bucket rows); the blobs as stored."""
    from pyspark.sql import functions as F

    rows = frame.select(F.col("value.groupState.keys").alias("keys"), "partition_id").collect()
    for row in rows:
        try:
            bucket = Bucket.decode(row["keys"])
        except Exception as error:
            raise ConfigError(f"step {step_id!r}: a bucket's state in the checkpoint cannot be "
                              f"read ({error}); was it written by another sparkwax "
                              "version?") from error
        for key, blob, timer, _armed in bucket.entries():
            yield key, blob, timer, row["partition_id"]


def packed_entries(frame: Any, step_id: str) -> List[StateEntry]:
    """Every key's entry of a packed step, decoded leniently (for ``state
    show``: a blob that cannot be decoded shows as its SnapshotError)."""
    entries = []
    for key, blob, timer, partition in packed_blobs(frame, step_id):
        try:
            snapshot = recovery.decode(blob, step_id=step_id, key=key)
        except SnapshotError as error:
            snapshot = error
        entries.append(StateEntry(key, snapshot, len(blob),
                                  from_epoch_ms(timer) if timer is not None else None,
                                  partition))
    return entries


def last_watermark_ms(spark: Any, checkpoint: str) -> int:
    """The watermark the next micro-batch would use (Spark's commit log)."""
    store = storage_for(spark)
    commits = join_path(checkpoint, "commits")
    numbered = sorted((e for e in store.list(commits) if e.name.isdigit()),
                      key=lambda e: -int(e.name))
    for entry in numbered:
        for line in (store.read_text(entry.path) or "").splitlines():
            line = line.strip()
            if line.startswith("{"):
                return int(json.loads(line).get("nextBatchWatermarkMs", 0))
    return 0


def clear(checkpoint: str, *, force: bool = False, idle_seconds: float = 120.0,
          spark: Any=None) -> None:
    """Remove a checkpoint (offsets, commits and state) through Spark's file
    system: the next run of the query starts over from its source. Refuses
    while a query runs on it (its liveness record, ``liveness``; even with
    ``force``) or seems to (a log write in the last ``idle_seconds``, for a
    query started without ``sw.start``) unless ``force``. Over Spark Connect the folder is
    replaced by a one-line marker (Connect has no delete). ``spark``
    defaults to the active session."""
    spark = active_session(spark, "clear")
    store = storage_for(spark)
    require_checkpoint(store, checkpoint)
    refuse_if_live(spark, checkpoint, "clear")  # force or not: never under a running query
    if not force:
        busy = running_query_hint(spark, checkpoint, idle_seconds)
        if busy:
            raise ConfigError(f"{checkpoint} looks in use: {busy}; stop the query first "
                              "(or pass force=True / --force)")
    store.delete(checkpoint)


def running_query_hint(spark: Any, checkpoint: str, idle_seconds: float) -> Optional[str]:
    """Why the checkpoint looks in use by a running query, or None."""
    newest_ms = newest_log_ms(storage_for(spark), checkpoint)
    age = wall_clock.time() - newest_ms / 1000 if newest_ms else None
    if age is not None and age < idle_seconds:
        return (f"its log was written {age:.0f} s ago (clear waits until it is "
                f"{idle_seconds:.0f} s old: {idle_seconds - age:.0f} s more)")
    return None


def newest_log_ms(store: Any, checkpoint: str) -> int:
    """When the offset or commit log was last written (epoch ms; 0: never)."""
    return max((entry.modified_ms for log in ("offsets", "commits")
                for entry in store.list(join_path(checkpoint, log))), default=0)


def require_checkpoint(store: Any, checkpoint: str, folder: Optional[str] = None) -> None:
    """ConfigError unless ``checkpoint`` holds a streaming query's offset log;
    when it does not but its subfolders hold checkpoints (the folder of a
    program's several queries, e.g. ``sparkwax demo``'s ``sessions/`` and
    ``alerts/``), the error names them. ``folder``: where ``store`` finds
    ``checkpoint`` when that differs from its name (a ``file:`` URI read as
    a local path); the names are given under ``checkpoint``."""
    where = folder or checkpoint
    if store.exists(join_path(where, "offsets")):
        return
    held = [join_path(checkpoint, name) for name in held_checkpoints(store, where)]
    raise ConfigError(not_a_checkpoint(checkpoint, held))


def not_a_checkpoint(checkpoint: str, held: List[str]) -> str:
    """What a state tool says of a folder that is not a checkpoint.

    >>> not_a_checkpoint("/out", [])
    "'/out' is not a streaming checkpoint (no offsets/ folder)"
    >>> print(not_a_checkpoint("/out", ["/out/sessions", "/out/alerts"]))
    '/out' is not a streaming checkpoint; it holds the checkpoints of 2 queries: \
/out/sessions, /out/alerts (give one of them)
    """
    if not held:
        return f"{checkpoint!r} is not a streaming checkpoint (no offsets/ folder)"
    queries = "1 query" if len(held) == 1 else f"{len(held)} queries"
    return (f"{checkpoint!r} is not a streaming checkpoint; it holds the checkpoints of "
            f"{queries}: {', '.join(held)} (give one of them)")


_SEARCHED_FOLDERS = 50  # subfolders looked into at most (each is one listing)


def held_checkpoints(store: Any, folder: str, depth: int = 2) -> List[str]:
    """The checkpoints (folders with an ``offsets/`` folder) in ``folder``'s
    subfolders, ``depth`` levels down at most, as paths relative to it, in
    listing order (``sessions``, ``checkpoints/alerts``...). A store that
    lists no folders (Spark Connect's) finds none."""
    found: List[str] = []
    pending = [("", folder, depth)]
    looked = 0
    while pending and looked < _SEARCHED_FOLDERS:
        relative, path, levels = pending.pop(0)
        looked += 1
        for entry in store.list(path):
            if not entry.is_dir:
                continue
            name = f"{relative}/{entry.name}" if relative else entry.name
            if store.exists(join_path(entry.path, "offsets")):
                found.append(name)
            elif levels > 1:
                pending.append((name, entry.path, levels - 1))
    return found


def active_session(spark: Any, what: str) -> Any:
    """``spark``, else the active classic or Spark Connect session."""
    if spark is not None:
        return spark
    from pyspark.sql import SparkSession

    found: Any = SparkSession.getActiveSession()
    if found is None:
        try:
            from pyspark.sql.connect.session import SparkSession as ConnectSession

            found = ConnectSession.getActiveSession()
        except ImportError:  # pyspark without the connect client's dependencies
            found = None
    if found is None:
        raise ConfigError(f"{what} needs a SparkSession: pass spark= or start one "
                          "(sparkwax.local_session())")
    return found


__all__ = ["StateEntry", "active_session", "clear", "last_watermark_ms", "newest_log_ms",
           "key_matches", "key_order", "read_entries", "not_a_checkpoint", "held_checkpoints",
           "read_state", "require_checkpoint", "running_query_hint", "state_frame",
           "state_summary"]
