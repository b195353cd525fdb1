"""What the executors run for ``read_state`` and ``check_state``: the stored
state rows (a per-key step's ``(key, snapshot, timer[, deadline])``, a packed
step's buckets) as one entry per key, and each snapshot as a value (JSON
text, or what a ``decode`` function makes of it). Record batches in, record
batches out (``mapInArrow``); nothing here imports pyspark.

>>> from sparkwax import recovery
>>> blob = recovery.encode((3, "x"), step_id="s", key="k")
>>> snapshot_value(blob, "s", "k")
('[3, "x"]', None)
>>> snapshot_value(b"junk", "s", "k")[1]
"SnapshotError: step 's', key 'k', decode: not a sparkwax snapshot: bad header (got b'junk')"
>>> before = Bucket.empty(); before.put("a", blob, 60_000, 5); before.put("b", blob, None, None)
>>> [(e.key, e.timer, e.deadline) for e in bucket_entries(before.encode()[0], deadlines=True)]
[('a', 60000, 5), ('b', None, None)]
>>> after = Bucket.decode(before.encode()[0]); after.remove("b"); after.put("c", blob, None, None)
>>> [(e.key, e.change) for e in bucket_changes(before.encode()[0], after.encode()[0], False)]
[('c', 'update'), ('b', 'delete')]
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple

import pyarrow as pa

from .... import recovery
from ...._ops.snapshot_json import json_value
from ...hosts.bucket import Bucket
from ...hosts.columns import plain_key

KEY = "__sw_k"         # a per-key step's key columns: __sw_k0, __sw_k1...
BLOB = "__sw_blob"     # the stored snapshot (per key) or bucket (packed)
BEFORE = "__sw_before"  # packed, change feed: the bucket's previous value
TIMER = "__sw_timer"
DEADLINE = "__sw_deadline"
PARTITION = "partition_id"
BATCH, CHANGE = "batch_id", "change_type"


class Entry(NamedTuple):
    """One stored key: its plain key and key column values, blob, timer and
    deadline (epoch ms), the change feed's change type, or the error that
    kept its bucket from being read (then the rest is None)."""

    key: Any
    key_values: Optional[Tuple[Any, ...]]
    blob: Optional[bytes]
    timer: Optional[int]
    deadline: Optional[int]
    change: Optional[str] = None
    error: Optional[str] = None


@dataclass(frozen=True)
class Layout:
    """How the flattened state rows of a step look (``frame.py`` builds them)."""

    packed: bool
    key_count: int          # key columns of the step
    deadlines: bool         # a two-clock step: a deadline per key
    step_id: str
    changes: bool = False   # change feed rows (batch_id, change_type)


def bucket_entries(value: bytes, deadlines: bool) -> List[Entry]:
    """Every key of a stored bucket (a packed step's state value); a
    two-clock bucket's ``armed`` column is each key's deadline."""
    return [Entry(key, None, blob, timer, armed if deadlines else None)
            for key, blob, timer, armed in Bucket.decode(value).entries()]


def bucket_changes(before: Optional[bytes], after: Optional[bytes],
                   deadlines: bool) -> List[Entry]:
    """The keys a bucket's change touched: ``update`` for a key written (new,
    or another blob, timer or deadline), ``delete`` for a key gone (every key
    of a deleted bucket, ``after`` None)."""
    old = {e.key: e for e in bucket_entries(before, deadlines)} if before is not None else {}
    changed = []
    for entry in bucket_entries(after, deadlines) if after is not None else ():
        if old.pop(entry.key, None) != entry:
            changed.append(entry._replace(change="update"))
    changed.extend(Entry(key, None, None, None, None, "delete") for key in old)
    return changed


def entries(batch: pa.RecordBatch, layout: Layout
            ) -> Iterator[Tuple[Entry, Optional[int], Optional[int]]]:
    """``(entry, partition, batch_id)`` for every key of a batch of state rows."""
    columns = {name: batch.column(name).to_pylist() for name in batch.schema.names}
    partitions = columns[PARTITION]
    batch_ids = columns.get(BATCH) or repeat(None)
    changes = columns.get(CHANGE) or repeat(None)
    single = layout.key_count == 1
    if layout.packed:
        befores = columns.get(BEFORE) or repeat(None)
        for value, before, partition, batch_id, change in zip(
                columns[BLOB], befores, partitions, batch_ids, changes):
            try:
                found = (bucket_changes(before, value, layout.deadlines) if layout.changes
                         else bucket_entries(value, layout.deadlines))
            except Exception as error:
                reason = (f"ConfigError: step {layout.step_id!r}: a bucket's state in "
                          f"partition {partition} cannot be read ({error}); was it written by "
                          f"another sparkwax version?")
                yield Entry(None, None, None, None, None, change, reason), partition, batch_id
                continue
            for entry in found:
                key = entry.key
                yield (entry._replace(key_values=(key,) if single else tuple(key),
                                      change=entry.change or change), partition, batch_id)
        return
    keys = zip(*(columns[f"{KEY}{i}"] for i in range(layout.key_count)))
    deadlines = columns.get(DEADLINE) or repeat(None)
    for key_values, blob, timer, deadline, partition, batch_id, change in zip(
            keys, columns[BLOB], columns[TIMER], deadlines, partitions, batch_ids, changes):
        yield (Entry(plain_key(key_values, single), key_values, blob, timer, deadline, change),
               partition, batch_id)


def snapshot_value(blob: bytes, step_id: str, key: Any,
                   decode: Optional[Callable[[Any], Any]] = None, as_json: bool = True
                   ) -> Tuple[Any, Optional[str]]:
    """``(value, None)`` or ``(None, "ErrorClass: message")``: the snapshot
    decoded by the codec, then ``decode`` of it, then JSON text (``json_value``,
    as ``sparkwax state show --json`` writes it) when ``as_json``."""
    try:
        value = recovery.decode(blob, step_id=step_id, key=key)
        if decode is not None:
            value = decode(value)
        return (json.dumps(json_value(value)) if as_json else value), None
    except Exception as error:
        return None, described(error)


def described(error: BaseException) -> str:
    """``"ErrorClass: message"``."""
    return f"{type(error).__name__}: {error}"


class StateRows:
    """The ``mapInArrow`` function of ``read_state``: one output row per
    key (``out`` is the output's Arrow schema, in ``frame.py``'s order)."""

    def __init__(self, layout: Layout, out: pa.Schema, key_names: List[str],
                 decode: Optional[Callable[[Any], Any]], as_json: bool, snapshots: bool):
        self.layout, self.out, self.key_names = layout, out, key_names
        self.decode, self.as_json, self.snapshots = decode, as_json, snapshots

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        layout = self.layout
        for batch in batches:
            columns: Dict[str, List[Any]] = {name: [] for name in self.out.names}
            keys = [columns[name] for name in self.key_names]
            for entry, partition, batch_id in entries(batch, layout):
                for column, value in zip(keys, entry.key_values or repeat(None)):
                    column.append(value)
                value, error = None, entry.error
                if entry.blob is not None and self.snapshots:
                    value, error = snapshot_value(entry.blob, layout.step_id, entry.key,
                                                  self.decode, self.as_json)
                columns["snapshot"].append(value)
                columns["error"].append(error)
                columns["timer"].append(_micros(entry.timer))
                columns["deadline"].append(_micros(entry.deadline))
                columns["bytes"].append(None if entry.blob is None else len(entry.blob))
                columns["partition"].append(partition)
                if layout.changes:
                    columns[BATCH].append(batch_id)
                    columns[CHANGE].append(entry.change)
            yield self._batch(columns)

    def _batch(self, columns: Dict[str, List[Any]]) -> pa.RecordBatch:
        arrays = []
        for field in self.out:
            if field.name == "snapshot":
                arrays.append(fitted(columns["snapshot"], field.type, columns["error"]))
            else:
                arrays.append(pa.array(columns[field.name], type=field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.out)


def fitted(values: List[Any], kind: pa.DataType, errors: List[Optional[str]]) -> pa.Array:
    """``values`` as an Arrow array of ``kind``; a value that does not fit
    becomes null and its row's error says why (``errors`` is updated).

    >>> errors = [None, None]
    >>> fitted([(1, "a"), ("x", "b")], pa.struct([("n", pa.int64()), ("s", pa.string())]),
    ...        errors).to_pylist()
    [{'n': 1, 's': 'a'}, None]
    >>> errors[1].startswith("TypeError: the decoded snapshot does not fit the schema")
    True
    """
    if pa.types.is_struct(kind):
        values = [_as_struct(value, kind) for value in values]
    try:
        return pa.array(values, type=kind)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        pass
    kept = []
    for index, value in enumerate(values):
        try:
            pa.array([value], type=kind)
            kept.append(value)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as error:
            kept.append(None)
            errors[index] = (f"TypeError: the decoded snapshot does not fit the schema "
                             f"{kind}: {error}")
    return pa.array(kept, type=kind)


def _as_struct(value: Any, kind: pa.StructType) -> Any:
    """A tuple as a dict of the struct's fields; a scalar for a one-field struct."""
    names = [kind.field(i).name for i in range(kind.num_fields)]
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, (tuple, list)) and len(value) == len(names):
        return dict(zip(names, value))
    if len(names) == 1 and not isinstance(value, (tuple, list)):
        return {names[0]: value}
    return value


def _micros(ms: Optional[int]) -> Optional[int]:
    return None if ms is None else ms * 1000


__all__ = ["BATCH", "BEFORE", "BLOB", "CHANGE", "DEADLINE", "Entry", "KEY", "Layout",
           "PARTITION", "StateRows", "TIMER", "bucket_changes", "bucket_entries", "described",
           "entries", "fitted", "snapshot_value"]
