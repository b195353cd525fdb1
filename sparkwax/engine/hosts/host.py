"""The functions Spark runs per group; they translate and call the driver.

``StreamingHost`` is the ``applyInPandasWithState`` function (one key per
call, state row ``(snapshot binary, timer long)``); ``BoundedHost`` is the
``applyInPandas`` function for bounded DataFrames.
"""

from __future__ import annotations

import warnings
from typing import Any, Iterator, List, Optional, Sequence, Tuple

import pandas as pd

from ..._driver import Clocks, Driver, KeyBatch
from ...errors import SnapshotError
from ...timers import TimeMode
from .columns import InputLayout, group_frame, plain_key, presorted, read_group, time_order
from .outputs import OutputBuilder

# PySpark 4.3's worker pads group frames with pd.concat, which warns once per
# group on pandas 2.x; hosts are imported in every worker, so silence it here.
warnings.filterwarnings("ignore", category=FutureWarning,
                        message="The behavior of DataFrame concatenation with empty")

NO_TIMEOUT = "NoTimeout"  # a step without timers (else its time mode's spark_timeout)


class StreamingHost:
    """One activation per call: restore, timer, items, commit, outputs, and
    the activation's counts as a metrics row (see ``OutputBuilder``)."""

    def __init__(self, driver: Driver, layout: InputLayout, outputs: OutputBuilder,
                 timeout_conf: str, single_key: bool, max_snapshot_bytes: Optional[int] = None):
        self.driver = driver
        self.layout = layout
        self.outputs = outputs
        self.timeout_conf = timeout_conf  # Spark's GroupStateTimeout name
        self.single_key = single_key
        self.max_snapshot_bytes = max_snapshot_bytes  # see session.max_snapshot_bytes

    def __call__(self, key_values: Tuple[Any, ...], frames: Iterator[pd.DataFrame], state: Any
                 ) -> Iterator[pd.DataFrame]:
        key = plain_key(key_values, self.single_key)
        values: Sequence[Any]
        times: Optional[List[Optional[int]]]
        order = None
        ascending = False
        if state.hasTimedOut:
            values, times = (), ([] if self.layout.event_column else None)
            for _ in frames:  # Spark sends one empty frame; drain it
                pass
        else:
            frame = group_frame(frames)
            rows, ascending = presorted(frame, self.layout)
            values, times, order = read_group(frame, self.layout, rows)
        stored, committed_timer = state.get if state.exists else (None, None)
        now_ms = self.driver.now_ms(state.getCurrentWatermarkMs,
                                    state.getCurrentProcessingTimeMs)
        acts = self.driver.activate_keys(one_key(key, values, stored, committed_timer, times,
                                                 order, ascending), Clocks(now_ms))
        blob, armed, emits = acts.states[0], acts.armed[0], acts.emits[0]
        if blob is None:
            state.remove()
        else:
            check_snapshot_size(self.driver.step_id, key, len(blob), self.max_snapshot_bytes)
            # update() clears the timeout, so arm it after every update.
            state.update((blob, acts.timers[0]))
            if armed is not None and self.timeout_conf != NO_TIMEOUT:
                arm(state, self.driver.time, armed, now_ms)
        counts = acts.metrics if self.outputs.metrics else None
        if emits:
            yield self.outputs.frame(key, key_values, emits, counts, acts.stages)
        elif counts is not None:
            yield self.outputs.metrics_frame(key_values, counts, acts.stages)


def one_key(key: Any, values: Sequence[Any], stored: Optional[bytes], committed: Any,
            times: Optional[List[Optional[int]]], order: Any, ascending: bool = False
            ) -> KeyBatch:
    """The ``KeyBatch`` of one Spark group's key."""
    return KeyBatch((key,), (values,), (stored,), (committed,),
                    None if times is None else (times,), None if order is None else (order,),
                    ascending=ascending)


def check_snapshot_size(step_id: str, key: Any, size: int, limit: Optional[int],
                        what: str = "the snapshot") -> None:
    """A ``SnapshotError`` naming the key and the size when a state row is
    larger than Spark can move and hold here (before Spark runs out of memory,
    which ends a local session)."""
    if limit is None or size <= limit:
        return
    raise SnapshotError(step_id, key, "snapshot", reason=(
        f"{what} is {_size(size)} encoded, over the {_size(limit)} a state row may have on "
        "this Spark session "
        "(spark.sparkwax.maxSnapshotBytes; by default a sixteenth of a task slot's share of "
        "the JVM heap, as Spark holds a row many times over while it moves it). Keep less "
        "per key (discard finished keys, cap lists, max_state_bytes=), give Spark more "
        "memory (spark.driver.memory for local[*], spark.executor.memory on a cluster), or "
        "raise spark.sparkwax.maxSnapshotBytes"))


def _size(count: int) -> str:
    return f"{count:,} bytes" if count < 1 << 20 else f"{count / 2**20:,.1f} MB ({count:,} bytes)"


def arm(state: Any, time: TimeMode, armed: int, now_ms: int) -> None:
    """Set the Spark timeout that wakes a group at ``armed`` (epoch ms)."""
    how, value = time.group_state_timeout(armed, now_ms)
    if how == "timestamp":
        state.setTimeoutTimestamp(value)
    else:
        state.setTimeoutDuration(value)


class BoundedHost:
    """A whole key of a bounded DataFrame as one sequence, then on_eof."""

    def __init__(self, driver: Driver, layout: InputLayout, outputs: OutputBuilder,
                 single_key: bool):
        self.driver = driver
        self.layout = layout
        self.outputs = outputs
        self.single_key = single_key

    def __call__(self, key_values: Tuple[Any, ...], frame: pd.DataFrame) -> pd.DataFrame:
        key = plain_key(key_values, self.single_key)
        values, times, order = read_group(frame, self.layout, time_order(frame, self.layout))
        emits = self.driver.activate_keys(KeyBatch(
            (key,), (values,), event_times=None if times is None else (times,),
            order=None if order is None else (order,), bounded=True)).emits[0]
        if not emits:
            return pd.DataFrame()  # an empty typed frame trips Arrow on struct/array columns
        return self.outputs.frame(key, key_values, emits)
