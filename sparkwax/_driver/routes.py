"""The one door, ``Routes.activate_keys`` (a micro-batch of keys in, their
``Activations`` out), and the routes it picks per key: plain (a step
without sides nor processing deadlines, a key without event times, nothing
to order, not EOF: the flattened steps), general (every step, in order) and
bounded (a key's whole bounded input, its watermark advancing item by
item). Every route runs the same step bodies (``steps``);
``tests/unit/core/test_fast_path*.py`` compare the plain route with the
general one.
"""

from __future__ import annotations

from itertools import repeat
from time import perf_counter_ns
from typing import Any, List, Optional, Sequence, Tuple

from ..clock import Clock, reset_clock, set_clock
from ..errors import NO_VALUE
from ..logic import Logic
from ..timers import Watermark, is_due
from .results import NO_CLOCKS, Activations, Clocks, Columns, EventTimes, KeyBatch, summed
from .steps import Run, Steps

_ONE_INPUT = (0,)


KeyOutcome = Tuple[List[Any], Optional[bytes], Optional[int], Any, Optional[int], int,
                   Optional[Logic], int, Optional[int], int]
"""One key's outcome on the general and bounded routes, a plain tuple (see
``steps.Run``): ``(emits, state, timer, snapshot, armed, fired, logic, late,
deadline, deadlines_fired)``; the plain route's is its first seven fields."""


class Routes(Steps):
    """The door and its routes (a ``Driver`` base)."""

    _plain: bool  # a step without sides: its plain keys take the plain route

    def activate_keys(self, batch: KeyBatch, clocks: Clocks = NO_CLOCKS,
                      into: Optional[Activations] = None) -> Activations:
        """Activate each key of ``batch`` in order at ``clocks``: restore
        (``stored``, or the live logic of ``logics``), timer, items, EOF,
        commit; each key's results and the batch's counts (``into``, an
        empty ``Activations`` of the host's, if given: then it also holds
        the keys that ran before a key's error). The route is picked per
        key; a key's error stops the call.

        >>> from sparkwax.step import Step
        >>> from sparkwax.testing.reference import Counter
        >>> from sparkwax._driver import Driver
        >>> acts = Driver(Step.of(Counter)).activate_keys(
        ...     KeyBatch(["a", "b"], [["x"], ["y", "z"]]), Clocks(0))
        >>> acts.emits, acts.metrics.rows_in, acts.metrics.keys_created
        ([[1], [1, 2]], 3, 2)
        """
        acts = Activations() if into is None else into
        chain = self._chain
        if chain is not None:  # a chain's stages count each call from zero
            try:
                chain.counts.take()
                self._route(batch, clocks, acts)
            finally:
                acts.stages = chain.counts.take()
        else:
            self._route(batch, clocks, acts)
        return acts

    def _route(self, batch: KeyBatch, clocks: Clocks, acts: Activations) -> None:
        """``batch`` on the plain route (``_plain_keys``) when it can, else key by key."""
        if self._plain and self.two_clocks is False and batch.event_times is None \
                and batch.order is None and batch.logics is None and not batch.eof \
                and not batch.bounded and not batch.read_columns and not batch.snapshots:
            self._plain_keys(batch, clocks.now_ms, acts)
        else:
            self._each_key(batch, clocks, acts)

    def _plain_keys(self, batch: KeyBatch, now_ms: Optional[int], acts: Activations) -> None:
        """Every key of ``batch`` on the plain route, at one clock, restored
        from ``stored``, no snapshot values kept: the packed host's bucket
        and the offline runner's batch (one call per key and an Activation
        each cost ~20% of the packed host's Python at 100k keys)."""
        started = perf_counter_ns()
        add_emits, add_state, add_timer = acts.emits.append, acts.states.append, \
            acts.timers.append
        add_armed, plain_steps = acts.armed.append, self._plain_steps
        counts = None if self._chain is None else self._chain.counts
        fired = 0
        token = set_clock(self._plain_clock(now_ms))
        try:
            for key, blob, values, committed_timer in zip(
                    batch.keys, repeat(None) if batch.stored is None else batch.stored,
                    batch.values,
                    repeat(NO_VALUE) if batch.committed is None else batch.committed):
                emits, state, timer, _, armed, key_fired, logic = plain_steps(
                    key, None, blob, values, now_ms, committed_timer, False)
                if counts is not None:  # a chain: the stages its key holds now
                    counts.ended(logic)
                add_emits(emits)
                add_state(state)
                add_timer(timer)
                add_armed(armed)
                fired += key_fired
        finally:
            reset_clock(token)
            acts.deadlines.extend(repeat(None, len(acts.emits) - len(acts.deadlines)))
            acts.metrics = summed(acts, batch, fired, 0, 0, started)

    def _each_key(self, batch: KeyBatch, clocks: Clocks, acts: Activations) -> None:
        """Every key of ``batch`` on its route: plain when it can, else general
        (bounded: the bounded route); the live logics and the snapshot values
        kept if the batch asks."""
        started = perf_counter_ns()
        now_ms = clocks.now_ms
        live, keep = batch.logics is not None, batch.snapshots
        plain = self._plain and not batch.eof and not batch.bounded
        counts = None if self._chain is None else self._chain.counts
        bounded, read = batch.bounded, batch.read_columns
        fired = late = deadlines_fired = 0
        add_emits, add_state, add_timer = acts.emits.append, acts.states.append, \
            acts.timers.append
        add_armed, add_deadline = acts.armed.append, acts.deadlines.append
        add_snapshot, add_logic = acts.snapshots.append, acts.logics.append
        token = set_clock(self._plain_clock(now_ms))  # the general route sets its own
        try:
            for key, logic, blob, values, committed_timer, times, order in zip(
                    batch.keys, repeat(None) if batch.logics is None else batch.logics,
                    repeat(None) if batch.stored is None else batch.stored, batch.values,
                    repeat(NO_VALUE) if batch.committed is None else batch.committed,
                    repeat(None) if batch.event_times is None else batch.event_times,
                    repeat(None) if batch.order is None else batch.order):
                if read:
                    times, order = self.read_columns(key, values)
                if counts is not None and logic is not None:  # a live chain: its stages now
                    counts.started = counts.held(logic)
                if plain and times is None and self.two_clocks is False \
                        and (order is None or len(values) < 2):
                    emits, state, timer, snapshot, armed, key_fired, logic = \
                        self._plain_steps(key, logic, blob, values, now_ms, committed_timer,
                                          live)
                    key_late = key_deadlines = 0
                    deadline = None
                else:
                    (emits, state, timer, snapshot, armed, key_fired, logic, key_late, deadline,
                     key_deadlines) = (
                        self._bounded_key(key, values, times, order) if bounded else
                        self._general_key(key, logic, blob, values, times, order,
                                          committed_timer, batch, clocks))
                if counts is not None:
                    counts.ended(logic)
                add_emits(emits)
                add_state(state)
                add_timer(timer)
                add_armed(armed)
                add_deadline(deadline)
                if keep:
                    add_snapshot(snapshot)
                if live:
                    add_logic(logic)
                fired += key_fired
                late += key_late
                deadlines_fired += key_deadlines
        finally:
            reset_clock(token)
            acts.metrics = summed(acts, batch, fired, late, deadlines_fired, started)

    def _plain_clock(self, now_ms: Optional[int]) -> Optional[Clock]:
        """The clock of plain activations at ``now_ms`` (the last one's when equal)."""
        clock = self._clock
        if now_ms is None:
            return None
        if clock is None or clock.now_ms != now_ms or clock.processing_ms is not None:
            return self._clock_at(now_ms)
        return clock

    # -- the plain route ------------------------------------------------------

    def _plain_steps(self, key: Any, logic: Optional[Logic], stored: Optional[bytes],
                     values: Sequence[Any], now_ms: Optional[int], committed_timer: Any,
                     live: bool) -> Tuple[Any, ...]:
        """The steps of one plain activation, its clock already set: restore
        (``stored``, when there is no live ``logic``), due timer, items,
        commit (``live``: the logic is kept, the snapshot not encoded), the
        same step bodies as ``_general_key``. ``(emits, state, timer,
        snapshot, armed, fired, logic)``."""
        kind = type(key)  # pragma: no mutate (a speed guard: check_key tests the same)
        if kind is not str and kind is not int:  # pragma: no mutate
            self.check_key(key, values)
        emits: List[Any] = []
        if logic is not None:
            timer = self._next_timer(key, logic)
        elif stored is not None:  # (a new key has nothing to restore: a call less)
            logic, timer = self._restore(key, stored, committed_timer)
        else:
            timer = None
        fired = 0
        if timer is not None:
            logic, fired = self._due_timer(key, logic, timer, now_ms, emits)
        if len(values):
            logic = self._take(key, logic, values, emits)
        if logic is None:  # (nothing to commit: a call less)
            return emits, None, None, None, None, fired, None
        state, timer, snapshot, armed, _ = self._commit(
            key, logic, fired or len(values), stored, now_ms, not live)
        return emits, state, timer, snapshot, armed, fired, logic

    # -- the general route ----------------------------------------------------

    def _general_key(self, key: Any, logic: Optional[Logic], stored: Optional[bytes],
                     values: Sequence[Any], times: EventTimes, order: Columns,
                     committed_timer: Any, batch: KeyBatch, clocks: Clocks) -> KeyOutcome:
        """One key, every step: the key's live ``logic`` if the host keeps it
        (``batch.logics``), else restored from ``stored``; its rows put in
        order, late ones dropped, EOF (``batch.eof``); the commit encodes the
        snapshot unless the logic is kept live."""
        self.check_key(key, values)
        now_ms, processing_ms = clocks
        if self.two_clocks is False:
            processing_ms = None
        token = set_clock(self._clock_at(now_ms, processing_ms))
        try:
            if logic is None:
                logic, timer = self._restore(key, stored, committed_timer)
            else:
                timer = self._next_timer(key, logic)
            values, times, ordered = self._arrange_ordered(key, values, times, order,
                                                           batch.ascending)
            logic, emits, late, fired, touched, deadlines_fired = self._run(
                key, logic, timer, values, now_ms, batch.eof, times,
                processing_ms=processing_ms, ordered=ordered)
            state, timer, snapshot, armed, deadline = self._commit(
                key, logic, touched, stored, now_ms, batch.logics is None)
        finally:
            reset_clock(token)
        return (emits, state, timer, snapshot, armed, fired, logic, late, deadline,
                deadlines_fired)

    # -- the bounded route: the whole key as one sequence -----------------------

    def _bounded_key(self, key: Any, values: Sequence[Any], event_times: EventTimes,
                     order: Columns) -> KeyOutcome:
        """A key of a bounded (batch) input, as if each item were its own
        micro-batch: in EventTime mode the key's watermark (max event time so
        far minus the step's delay; for a step with sides, the smallest of
        its inputs' watermarks, see ``sparkwax.timers``) advances item by
        item, due timers fire before the next item and late items are
        dropped; then ``on_eof``. Without event times no timer fires before
        ``on_eof``. A logic live before ``on_eof`` is snapshotted once, as a
        stream would commit it."""
        self.check_key(key, values)
        sides: Optional[List[int]] = None
        if event_times is not None:
            sides = [self.side_of(key, value) for value in values]
        if sides is not None:
            values, event_times, sides = self._arrange_sides(key, values, event_times, order,
                                                             sides)
        else:
            values, event_times = self._arrange(key, values, event_times, order)
        token = set_clock(None)
        try:
            logic, emits, late, fired, _, _ = (
                self._run(key, None, None, values, None, True, None, commit_before_eof=True)
                if event_times is None else
                self._bounded_events(key, values, event_times, sides))
            state, timer, snapshot, armed, deadline = self._commit(key, logic, True, None, None)
        finally:
            reset_clock(token)
        return emits, state, timer, snapshot, armed, fired, logic, late, deadline, 0

    def _bounded_events(self, key: Any, values: Sequence[Any],
                        event_times: Sequence[Optional[int]], sides: Optional[Sequence[int]]
                        ) -> Run:
        """``_bounded_key``'s steps 2-4 with event times, run by run
        (``_run_end``) at the key's advancing watermark (no deadlines: a
        bounded input has no processing clock)."""
        if sides is None:
            sides = _ONE_INPUT * len(values)
        clock = Watermark(self.time.delay_ms, self.side_count)
        emits: List[Any] = []
        logic: Optional[Logic] = None
        late, fired, position, n = 0, 0, 0, len(values)
        while position < n:
            watermark = clock.advance()
            set_clock(self._clock_at(watermark))
            if logic is not None:
                logic, due = self._due_timer(key, logic, self._next_timer(key, logic),
                                             watermark, emits)
                fired += due
            end = self._run_end(key, logic, event_times, sides, position, clock)
            logic, more, chunk_late, _, _, _ = self._run(
                key, logic, None, values[position:end], watermark, False,
                event_times[position:end])
            emits.extend(more)
            late += chunk_late
            for index in range(position, end):
                moment = event_times[index]
                if moment is not None:
                    clock.see(moment, sides[index])
            position = end
        watermark = clock.advance()
        set_clock(self._clock_at(watermark))
        timer = None if logic is None else self._next_timer(key, logic)
        logic, more, _, more_fired, _, _ = self._run(key, logic, timer, (), watermark, True,
                                                     None, commit_before_eof=True)
        emits.extend(more)
        return logic, emits, late, fired + more_fired, True, 0

    def _run_end(self, key: Any, logic: Optional[Logic], event_times: Sequence[Optional[int]],
                 sides: Sequence[int], start: int, clock: Watermark) -> int:
        """End of the next run of items given in one go: one item for
        StatefulLogic; for StatefulBatchLogic every item up to the one before
        which the current timer would become due (or, for items that would be
        late, a single item so lateness is judged item by item)."""
        if not self.batch:
            return start + 1
        timer = self._next_timer(key, logic) if logic is not None else None
        end = start + 1
        running = clock.copy()
        first = event_times[start]
        if first is not None:
            running.see(first, sides[start])
        while end < len(event_times):
            watermark = running.advance()
            moment = event_times[end]
            if is_due(timer, watermark) or moment is None or moment <= watermark * 1000:
                break
            running.see(moment, sides[end])
            end += 1
        return end
