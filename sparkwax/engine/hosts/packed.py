"""The packed host: many keys per Spark group, same semantics as per key.

Spark's pandas stateful path costs milliseconds per group per micro-batch
whatever the logic does. The packed host groups rows by a stable hash bucket
of the key (``pmod(xxhash64(key), buckets)``) and, inside one call, runs the
shared driver once per user key that has rows, or whose timer the per-key host
would have woken (the same ``armed_timeout`` method of the time mode, kept per key),
all of them in one ``Driver.activate_keys`` call (one call per key cost ~20%
of the host's Python at 100k keys, ``benchmarks/host_sim.py``). A bucket's
state row is ``(keys binary, buckets long)``: ``keys`` is a ``Bucket`` (see
``bucket.py``: per key its snapshot blob, timer and armed timeout, stored by
column); blobs of keys that did not run are copied as bytes, never decoded or
re-pickled. The bucket's Spark timeout is the earliest armed timeout of its
keys.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from ..._driver import Clocks, Driver, KeyBatch, sorted_keys
from ...errors import ConfigError
from ...metrics import StepMetrics
from ..._ops.young_gc import fewer_collections
from .bucket import Bucket, pickled_size
from .columns import InputLayout, presorted, read_group, stack_frames
from .radix import radix_argsort
from .host import NO_TIMEOUT, arm, check_snapshot_size
from .outputs import OutputBuilder
from .prepack import Unpacker

Times = List[Optional[int]]
"""Rows' event times (epoch µs, None for null), as ``columns.read_group`` reads them."""

BUCKET_COLUMN = "__sw_bucket"


class KeyRuns:
    """A bucket's rows split by key (``key_runs``): ``keys``, one per run (the
    key's value, or a tuple of values for several key columns), in order of
    first appearance; ``rows(position)`` is that key's ``(values,
    event_times, order)`` in arrival order; ``ascending``: every key's event
    times are known to ascend without a null (``columns.presorted``)."""

    __slots__ = ("keys", "positions", "bounds", "values", "times", "order", "ascending")

    def __init__(self, keys: List[Any], bounds: List[int], values: Sequence[Any],
                 times: Optional[Times], order: Optional[List[List[Any]]], ascending: bool = False):
        self.ascending = ascending
        self.keys = keys
        self.positions: Dict[Any, int] = dict(zip(keys, range(len(keys))))
        self.bounds = bounds
        self.values = values
        self.times = times
        self.order = order

    def values_of(self, keys: Sequence[Any]) -> List[Sequence[Any]]:
        """Each key's values (``rows``' first part; ``()`` for a key without
        rows), as one list.

        >>> runs = KeyRuns(["a", "b"], [0, 2, 3], [1, 2, 3], None, None)
        >>> runs.values_of(["b", "z", "a"])
        [[3], (), [1, 2]]
        """
        get, bounds, values = self.positions.get, self.bounds, self.values
        found: List[Sequence[Any]] = []
        for key in keys:
            position = get(key)
            found.append(() if position is None
                         else values[bounds[position]:bounds[position + 1]])
        return found

    def columns_of(self, keys: Sequence[Any], timed: bool
                   ) -> Tuple[List[Sequence[Any]], Optional[List[Optional[Times]]],
                              List[Optional[List[List[Any]]]]]:
        """Each key's ``rows`` as three columns (a key without rows: no
        values, no event times (``[]`` when ``timed``, else None), no order).

        >>> runs = KeyRuns(["a"], [0, 2], [1, 2], [5, 6], None)
        >>> runs.columns_of(["z", "a"], True)
        ([(), [1, 2]], [[], [5, 6]], [None, None])
        """
        values: List[Sequence[Any]] = []
        times: List[Optional[Times]] = []
        order: List[Optional[List[List[Any]]]] = []
        get = self.positions.get
        for key in keys:
            position = get(key)
            if position is None:
                values.append(())
                times.append([] if timed else None)
                order.append(None)
            else:
                key_values, key_times, key_order = self.rows(position)
                values.append(key_values)
                times.append(key_times)
                order.append(key_order)
        return values, times if timed else None, order

    def rows(self, position: int
             ) -> Tuple[Sequence[Any], Optional[Times], Optional[List[List[Any]]]]:
        begin, end = self.bounds[position], self.bounds[position + 1]
        times, order = self.times, self.order
        return (self.values[begin:end], None if times is None else times[begin:end],
                None if order is None else [column[begin:end] for column in order])


NO_RUNS = KeyRuns([], [0], (), None, None)


def key_runs(frame: Any, key_names: Sequence[str], layout: InputLayout) -> KeyRuns:
    """``frame`` (a frame, or a group's chunks: a list of frames) split by
    key. Spark hands a bucket's rows with its keys interleaved; the keys are
    numbered by hashing (``pd.factorize``), and a stable argsort of those
    numbers (skipped when the rows already come key by key) gives each key's
    rows in arrival order, read column by column from the needed columns only.
    With event times (no ``order_by``, no nulls) the rows are first put in
    event-time order (``columns.time_order``), so each key's rows come in the
    driver's order and its sort finds nothing to do (the per-key host's
    pre-sort, for many keys at once).

    >>> from sparkwax.engine.hosts.columns import INTEGER, InputLayout
    >>> layout = InputLayout(names=("v",), sources=("v",), kinds=(INTEGER,), scalar=True,
    ...                      order_by=(), event_column=None)
    >>> runs = key_runs(pd.DataFrame({"key": [7, 3, 7], "v": [1, 2, 3]}), ["key"], layout)
    >>> runs.keys, [list(runs.rows(p)[0]) for p in range(len(runs.keys))]
    ([7, 3], [[1, 3], [2]])
    """
    if isinstance(frame, list):
        frame = stack_frames(frame, _needed(key_names, layout))
    if len(frame) == 0:
        return NO_RUNS
    codes = _key_codes(frame, key_names)
    counts = np.bincount(codes)
    ends = np.cumsum(counts)
    rows, ascending = presorted(frame, layout)
    firsts = ends - counts
    if rows is not None:  # by key, then by event time (stable: arrival order on ties)
        rows = rows[radix_argsort(codes[rows], len(counts))]
        firsts = rows[firsts]
    elif len(codes) > 1 and bool((codes[1:] < codes[:-1]).any()):
        rows = radix_argsort(codes, len(counts))
        firsts = rows[firsts]
    values, times, order = read_group(frame, layout, rows)
    key_lists = [frame[name].iloc[firsts].tolist() for name in key_names]
    keys = key_lists[0] if len(key_lists) == 1 else list(zip(*key_lists))
    return KeyRuns(keys, [0] + ends.tolist(), values, times, order, ascending)


def split_by_key(frame: Any, key_names: Sequence[str], layout: InputLayout
                 ) -> Iterator[Tuple[Any, ...]]:
    """Yield ``(key_values, values, event_times, order)`` per key of ``frame``
    (see ``key_runs``)."""
    runs = key_runs(frame, key_names, layout)
    single = len(key_names) == 1
    for position, key in enumerate(runs.keys):
        yield ((key,) if single else key, *runs.rows(position))


def _needed(key_names: Sequence[str], layout: InputLayout) -> List[str]:
    event = [layout.event_column] if layout.event_column is not None else []
    return [*key_names, *layout.sources, *event, *layout.order_by]


def _key_codes(frame: pd.DataFrame, key_names: Sequence[str]) -> np.ndarray:
    """A number per row, 0.. in order of first appearance, equal for equal
    keys (a null key gets one too: the driver refuses it by name)."""
    if len(key_names) == 1:
        codes, _ = pd.factorize(frame[key_names[0]], use_na_sentinel=False)
        return np.asarray(codes, dtype=np.int64)
    numbers = frame.groupby(list(key_names), sort=False, dropna=False).ngroup()
    return numbers.to_numpy(dtype=np.int64)


class PackedHost:
    """The applyInPandasWithState function of a packed step (one bucket per call)."""

    def __init__(self, driver: Driver, layout: InputLayout, outputs: OutputBuilder,
                 timeout_conf: str, key_names: Sequence[str], buckets: int,
                 max_snapshot_bytes: Optional[int] = None,
                 unpack: Optional[Unpacker] = None):
        self.max_snapshot_bytes = max_snapshot_bytes  # a bucket row's limit
        self.unpack = unpack  # rows packed before the shuffle (prepack.py), or None
        self.driver = driver
        self.layout = layout
        self.outputs = outputs
        self.timeout_conf = timeout_conf  # Spark's GroupStateTimeout name
        self.key_names = list(key_names)
        self.single = len(self.key_names) == 1
        self.buckets = buckets

    def __call__(self, bucket_key: Tuple[Any, ...], frames: Iterator[pd.DataFrame], state: Any
                 ) -> Iterator[pd.DataFrame]:
        bucket = self._restore(state)
        frame = self._input(frames) if not state.hasTimedOut else _drain(frames)
        with fewer_collections():
            out = self._run(bucket, frame, state)
        if out is not None:
            yield out

    def _input(self, frames: Iterator[pd.DataFrame]
               ) -> Union[List[pd.DataFrame], pd.DataFrame]:
        """The bucket's rows: its chunks (a list of frames), or the frame
        unpacked from them when the rows were packed before the shuffle."""
        return list(frames) if self.unpack is None else self.unpack(frames)

    def _run(self, bucket: Bucket, frame: Any, state: Any) -> Optional[pd.DataFrame]:
        """Every key of the bucket that runs, then the commit; the call's
        output frame (None: nothing to send)."""
        now_ms = self.driver.now_ms(state.getCurrentWatermarkMs,
                                    state.getCurrentProcessingTimeMs)
        runs = key_runs(frame, self.key_names, self.layout)
        positions = runs.positions
        keys = sorted_keys(runs.keys + [key for key in bucket.due(now_ms)
                                        if key not in positions])
        counts, stages, emitted = self._run_keys(bucket, runs, keys, now_ms)
        self._commit(state, bucket, now_ms)
        if emitted:
            return self.outputs.frame_of(emitted, counts, stages)
        if keys and self.outputs.metrics:
            return self.outputs.metrics_frame(self._key_values(keys[-1]), counts, stages)
        return None

    def _run_keys(self, bucket: Bucket, runs: KeyRuns, keys: List[Any], now_ms: int
                  ) -> Tuple[StepMetrics, Tuple[StepMetrics, ...], List[Any]]:
        """``keys`` through one ``Driver.activate_keys`` call, their results
        recorded in ``bucket``: the counts (the step's and its stages') and
        the emitted groups."""
        stored, committed = bucket.entries_of(keys)
        times: Optional[List[Optional[Times]]] = None
        order: Optional[List[Optional[List[List[Any]]]]] = None
        if self.layout.event_column is None and not self.layout.order_by:
            values = runs.values_of(keys)
        else:
            values, times, order = runs.columns_of(keys, self.layout.event_column is not None)
        acts = self.driver.activate_keys(
            KeyBatch(keys, values, stored, committed, times, order, ascending=runs.ascending),
            Clocks(now_ms))
        bucket.put_all(keys, acts.states, acts.timers,
                       acts.armed if self.timeout_conf != NO_TIMEOUT else None)
        single = self.single
        emitted = [(key, (key,) if single else key, out)
                   for key, out in zip(keys, acts.emits) if out]
        return acts.metrics, acts.stages, emitted

    def _restore(self, state: Any) -> Bucket:
        if not state.exists:
            return Bucket.empty()
        blob, buckets = state.get
        if buckets != self.buckets:
            raise ConfigError(
                f"step {self.driver.step_id!r}: the checkpoint's state was written with "
                f"buckets={buckets}, this query uses buckets={self.buckets}; the bucket count "
                "is frozen into a checkpoint (like spark.sql.shuffle.partitions)")
        try:
            return Bucket.decode(blob)
        except Exception as error:
            raise ConfigError(
                f"step {self.driver.step_id!r}: a bucket's state in the checkpoint cannot be "
                f"read ({error}); was it written by another sparkwax version or another "
                "step? Start from a new checkpoint (`sparkwax state clear`)") from error

    def _commit(self, state: Any, bucket: Bucket, now_ms: int) -> None:
        stored, earliest = self._write(state, bucket)
        if stored and earliest is not None and self.timeout_conf != NO_TIMEOUT:
            arm(state, self.driver.time, earliest, now_ms)

    def _write(self, state: Any, bucket: Bucket) -> Tuple[bool, Optional[int]]:
        """Store ``bucket`` (remove it when empty, refuse it when too large):
        ``(stored, the earliest armed entry)``."""
        if not len(bucket):
            state.remove()
            return False, None
        blob, earliest = bucket.encode()
        # the limit holds for the bucket's pickle, not its compressed value: a
        # snapshot over it fails on this host as it does on the per-key one
        encoded = pickled_size(blob)
        if self.max_snapshot_bytes is not None and encoded > self.max_snapshot_bytes:
            key, size = max(((k, len(b)) for k, b, _, _ in Bucket.decode(blob).entries()),
                            key=lambda entry: entry[1])
            check_snapshot_size(self.driver.step_id, key, encoded, self.max_snapshot_bytes,
                                f"the bucket holding this key (its snapshot {size:,} bytes, "
                                f"{len(bucket)} keys in all)")
        state.update((blob, self.buckets))
        return True, earliest

    def _key_values(self, key: Any) -> Tuple[Any, ...]:
        return (key,) if self.single else tuple(key)


class PackedBoundedHost:
    """applyInPandas over buckets of a bounded DataFrame: each key as one sequence."""

    def __init__(self, driver: Driver, layout: InputLayout, outputs: OutputBuilder,
                 key_names: Sequence[str]):
        self.driver = driver
        self.layout = layout
        self.outputs = outputs
        self.key_names = list(key_names)
        self.single = len(self.key_names) == 1

    def __call__(self, bucket_key: Any, frame: pd.DataFrame) -> pd.DataFrame:
        runs = list(split_by_key(frame, self.key_names, self.layout))
        keys = [key_values[0] if self.single else key_values for key_values, *_ in runs]
        acts = self.driver.activate_keys(KeyBatch(
            keys, [run[1] for run in runs], event_times=[run[2] for run in runs],
            order=[run[3] for run in runs], bounded=True))
        emitted = [(key, run[0], out) for key, run, out in zip(keys, runs, acts.emits) if out]
        if not emitted:
            return pd.DataFrame()  # an empty typed frame trips Arrow on struct/array columns
        return self.outputs.frame_of(emitted)


def _drain(frames: Any) -> pd.DataFrame:
    for _ in frames:
        pass
    return pd.DataFrame()
