"""The Spark hosts of a step with both timer kinds (``Step.two_clocks``).

An ``EventTime`` step whose logic also has processing deadlines
(``processing_notify_at``) runs ``applyInPandasWithState`` with
``GroupStateTimeout.ProcessingTimeTimeout`` (one timeout configuration per
operator), keeping ``withWatermark`` so each activation reads two clocks: the
watermark (``state.getCurrentWatermarkMs()``, the activation's ``now``) and
the micro-batch's processing time. A ``ProcessingTimeTimeout`` query runs a
micro-batch at every trigger, data or not. A key is armed with the shortest
duration while it has an event-time timer (it is woken at the next trigger
to compare that timer with the watermark), else with its deadline's
(``timers.Deadlines.wake_ms``). The state keeps both next timers in ms, so a
woken key with nothing due (``timers.Deadlines.due``) is only re-armed: no
snapshot is decoded and no callback runs. The driver fires what is due
(event timer first, then the deadline, then items).

- per key (:class:`TwoClockHost`): the state row is ``(snapshot binary,
  timer long, deadline long)``;
- packed (:class:`TwoClockPackedHost`): the bucket row as for one clock
  (``bucket.Bucket``), whose ``armed`` column holds each key's deadline; the
  bucket is woken at the next trigger while any key has an event timer.

Steps with one timer kind never come here: their plan, hosts and state are
unchanged.
"""

from __future__ import annotations

from typing import Any, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ..._driver import Clocks, KeyBatch, sorted_keys
from ...timers import Deadlines
from ..._ops.young_gc import fewer_collections
from .bucket import NONE, Bucket
from .columns import group_frame, plain_key, read_group
from .host import StreamingHost, check_snapshot_size, one_key
from .packed import PackedHost, _drain, key_runs

TIMEOUT = "ProcessingTimeTimeout"


class TwoClockHost(StreamingHost):
    """One key per call; state row ``(snapshot, timer, deadline)``."""

    def __call__(self, key_values: Tuple[Any, ...], frames: Iterator[pd.DataFrame], state: Any
                 ) -> Iterator[pd.DataFrame]:
        watermark_ms = state.getCurrentWatermarkMs()
        processing_ms = state.getCurrentProcessingTimeMs()
        stored, timer, deadline = state.get if state.exists else (None, None, None)
        values: Sequence[Any] = ()
        times: Optional[List[Optional[int]]] = [] if self.layout.event_column else None
        order = None
        if state.hasTimedOut:
            for _ in frames:  # Spark sends one empty frame; drain it
                pass
            if not Deadlines.due(timer, deadline, watermark_ms, processing_ms):
                _arm(state, timer, deadline, processing_ms)  # nothing due: wait on
                return
        else:
            values, times, order = read_group(group_frame(frames), self.layout)
        key = plain_key(key_values, self.single_key)
        acts = self.driver.activate_keys(one_key(key, values, stored, timer, times, order),
                                         Clocks(watermark_ms, processing_ms))
        blob, emits = acts.states[0], acts.emits[0]
        if blob is None:
            state.remove()
        else:
            check_snapshot_size(self.driver.step_id, key, len(blob), self.max_snapshot_bytes)
            state.update((blob, acts.timers[0], acts.deadlines[0]))
            _arm(state, acts.timers[0], acts.deadlines[0], processing_ms)
        counts = acts.metrics if self.outputs.metrics else None
        if emits:
            yield self.outputs.frame(key, key_values, emits, counts, acts.stages)
        elif counts is not None:
            yield self.outputs.metrics_frame(key_values, counts, acts.stages)


class TwoClockPackedHost(PackedHost):
    """Many keys per call; a key's ``armed`` entry in the bucket is its deadline."""

    def __call__(self, bucket_key: Any, frames: Any, state: Any) -> Iterator[pd.DataFrame]:
        bucket = self._restore(state)
        frame = self._input(frames) if not state.hasTimedOut else _drain(frames)
        watermark_ms = state.getCurrentWatermarkMs()
        processing_ms = state.getCurrentProcessingTimeMs()
        runs = key_runs(frame, self.key_names, self.layout)
        woken = [key for key in due_keys(bucket, watermark_ms, processing_ms)
                 if key not in runs.positions]
        if not runs.keys and not woken:
            if len(bucket):
                _arm(state, _any_timer(bucket, ()), bucket_deadline(bucket), processing_ms)
            return
        ran = sorted_keys(runs.keys + woken)
        stored, committed = bucket.entries_of(ran)
        values, times, order = runs.columns_of(ran, self.layout.event_column is not None)
        with fewer_collections():  # as PackedHost: many keys' containers live to the commit
            acts = self.driver.activate_keys(
                KeyBatch(ran, values, stored, committed, times, order),
                Clocks(watermark_ms, processing_ms))
            bucket.put_all(ran, acts.states, acts.timers, acts.deadlines)
            any_timer = (any(t is not None for t, blob in zip(acts.timers, acts.states)
                             if blob is not None)
                         or _any_timer(bucket, ran) is not None)
            self._commit_two_clocks(state, bucket, any_timer, processing_ms)
        counts = acts.metrics
        emitted = [(key, self._key_values(key), out) for key, out in zip(ran, acts.emits) if out]
        key_values = self._key_values(ran[-1])
        if emitted:
            yield self.outputs.frame_of(emitted, counts, acts.stages)
        elif key_values and self.outputs.metrics:
            yield self.outputs.metrics_frame(key_values, counts, acts.stages)

    def _commit_two_clocks(self, state: Any, bucket: Bucket, any_timer: bool,
                           processing_ms: int) -> None:
        stored, earliest_deadline = self._write(state, bucket)
        if stored:
            _arm(state, 1 if any_timer else None, earliest_deadline, processing_ms)

def due_keys(bucket: Bucket, watermark_ms: int, processing_ms: int) -> List[Any]:
    """Stored keys whose event timer or deadline is due (``Deadlines.due``, on
    the bucket's columns at once)."""
    fired = np.flatnonzero(Deadlines.due_columns(bucket.timers, bucket.armed, NONE,
                                                 watermark_ms, processing_ms))
    return [bucket.keys[i] for i in fired.tolist()]


def bucket_deadline(bucket: Bucket) -> Optional[int]:
    """The earliest stored deadline (no changes pending)."""
    live = bucket.armed[bucket.armed != NONE]
    return int(live.min()) if len(live) else None


def _any_timer(bucket: Bucket, ran: Sequence[Any]) -> Optional[int]:
    """1 when a stored key that did not run has an event timer, else None."""
    pending = bucket.timers != NONE
    if ran and pending.any():
        positions = bucket.positions()
        for key in ran:
            position = positions.get(key)
            if position is not None:
                pending[position] = False
    return 1 if pending.any() else None


def _arm(state: Any, timer: Optional[int], deadline: Optional[int], processing_ms: int) -> None:
    """``setTimeoutDuration`` for the next wake-up (``Deadlines.wake_ms``)."""
    duration = Deadlines.wake_ms(timer, deadline, processing_ms)
    if duration is not None:
        state.setTimeoutDuration(duration)
