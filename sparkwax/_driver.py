"""THE semantics: one activation of one key (docs/semantics.md, "One activation
of one key"; its "Architecture" places this module).

Every host (the Spark per-key and packed hosts, their bounded forms, the
offline runner in both restore modes, ``finish``) builds a driver from the
step's ``sparkwax.step.Step`` and hands it a key's stored state, its rows and
the host's clocks, and adds no semantics of its own. The driver applies the
step's ``ttl``, state limit and sides itself (no host wraps a builder). The module is long on purpose: the whole contract is in one file. An
activation is:

0. clock and order: ``now`` is the watermark in EventTime mode, else the
   processing time (``Driver.now_ms``); rows are put in order (stable, by the
   ``order_by`` columns, else by event time in EventTime mode, nulls first);
1. restore: ``builder(decode(stored))``, or nothing yet for a new key;
2. timer: a restored logic whose ``notify_at()`` is ``<= now`` gets one
   ``on_notify()`` before any item; then, in a step with both timer kinds
   (``Step.two_clocks``: an EventTime step whose logic has
   ``processing_notify_at``), the logic still live (re-read: after a
   DISCARD there is none, and a fresh logic has no deadline) whose
   ``processing_notify_at()`` is ``<=`` the processing time gets one
   ``on_processing_notify()``. Each fires at most once per activation; one
   still due at commit fires at the next activation. Without a processing
   clock (bounded input, ``finish``) deadlines never fire;
3. items in order (late ones dropped in EventTime mode: event time ``<=``
   watermark, or null); after DISCARD the next item gets a fresh
   ``builder(None)``;
4. EOF (bounded input or ``finish``): ``on_eof()`` if logic is live;
5. commit: retained -> ``encode(snapshot())``, ``notify_at()`` as the next
   timer and the timeout a host arms for it (``timers.armed_timeout``), and
   in a two-clock step ``processing_notify_at()`` as the next deadline (a
   host wakes the key when ``timers.Deadlines.due``);
   discarded -> no state;
6. the emits, in order, and the activation's counts (``sparkwax.metrics``).

>>> from sparkwax.step import Step
>>> from sparkwax.testing.reference import Counter
>>> driver = Driver(Step.of(Counter, step_id="count"))
>>> first = driver.activate("k", None, ["a", "b"], now_ms=0)
>>> first.emits, first.snapshot, first.created
([1, 2], 2, 1)
>>> driver.activate("k", first.state, ["c"], now_ms=0).emits
[3]
"""

from __future__ import annotations

import warnings
from bisect import bisect_right
from contextlib import contextmanager
from itertools import islice
from operator import lt as _lt
from pickle import dumps as _dumps
from pickle import loads as _loads
from time import perf_counter_ns
from typing import (Any, Callable, Iterator, List, NamedTuple, Optional, Sequence, Tuple,
                    cast)

from . import recovery
from .clock import Clock, reset_clock, set_clock
from .errors import (NO_VALUE, BuilderError, CallbackError, InputError, LogicError,
                     LostStateWarning, NotifyAtError, ReturnValueError, outside_stacklevel)
from .expiry import TtlLogic
from .limits import Limited
from .logic import BatchLogic, ItemLogic, Logic, forward_deadline
from .metrics import StepMetrics
from .sides import untagged_side
from .step import Step, check_deadlines, logic_has_deadlines
from .timers import (EventTime, Watermark, from_epoch_ms, is_due, require_aware, timer_ms,
                     to_epoch_us)


class Activation(NamedTuple):
    """The plain result of one activation."""

    emits: List[Any]          # emitted values, in order
    state: Optional[bytes]    # encoded snapshot to store; None: remove / no state
    timer: Optional[int]      # next notify_at in epoch ms; None: no timer
    snapshot: Any             # the snapshot value behind ``state`` (None if no state)
    late: int = 0             # values dropped as late (EventTime mode)
    armed: Optional[int] = None  # the timeout a host arms for ``timer`` (None: none)
    rows: int = 0             # values handed in (late ones included)
    fired: int = 0            # on_notify calls
    created: int = 0          # 1: the key had no state before and has now
    discarded: int = 0        # 1: the key had state before and has none now
    callback_us: int = 0      # Python time in the activation
    deadline: Optional[int] = None  # next processing_notify_at in epoch ms (two-clock steps)
    deadline_fired: int = 0   # on_processing_notify calls (counted in ``fired`` too)

    def metrics(self) -> StepMetrics:
        """This activation's counts (see ``sparkwax.metrics``)."""
        return StepMetrics(self.rows, self.late, self.fired, self.created, self.discarded,
                           len(self.emits), self.callback_us, self.deadline_fired)


_new = cast(Callable[[type, Tuple[Any, ...]], Activation], tuple.__new__)
"""``_new(Activation, fields)``: the tuple without the namedtuple's Python-level
constructor (which costs more than the rest of a small activation)."""


def _result(emits: List[Any], state: Optional[bytes], timer: Optional[int], snapshot: Any,
            late: int, armed: Optional[int], rows: int, fired: int, had_state: bool,
            has_state: bool, started: int, deadline: Optional[int],
            deadline_fired: int) -> Activation:
    """Step 6: the Activation of every entry point, its key counts from
    whether the key had state before and has it now, its time from ``started``."""
    return _new(Activation, (emits, state, timer, snapshot, late, armed, rows, fired,
                             1 if has_state and not had_state else 0,
                             1 if had_state and not has_state else 0,
                             (perf_counter_ns() - started) // 1000, deadline, deadline_fired))


class Activations(NamedTuple):
    """The result of many plain activations at one ``now`` (``Driver.activate_plain_keys``,
    the packed host's call): an Activation's per-key fields as lists in the
    keys' order, and the counts summed over the keys."""

    emits: List[List[Any]]            # each key's emits
    states: List[Optional[bytes]]     # each key's encoded snapshot; None: remove
    timers: List[Optional[int]]       # each key's next notify_at in epoch ms
    armed: List[Optional[int]]        # each key's armed timeout
    metrics: StepMetrics              # the keys' counts, summed


# The codec's common case, inlined by the restore and commit steps (recovery.decode/encode).
_HEADER, _HEADER_SIZE, _COPY_LIMIT, _PROTOCOL = (recovery.PLAIN_HEADER, recovery.HEADER_SIZE,
                                                 recovery.COPY_LIMIT, recovery.PROTOCOL)
_ONE_INPUT = (0,)
_MISSING = object()
Columns = Optional[Sequence[Sequence[Any]]]
"""The ``order_by`` columns of an activation's rows, one sequence per column."""
EventTimes = Optional[Sequence[Optional[int]]]
"""The rows' event times in epoch µs (None for a null one); None: no event time."""
Run = Tuple[Optional[Logic], List[Any], int, int, bool, int]
"""What ``Driver._run`` returns: ``(logic_or_None, emits, late, fired, touched,
deadlines_fired)`` (``fired`` counts both kinds)."""
Commit = Tuple[Optional[bytes], Optional[int], Any, Optional[int], Optional[int]]
"""What ``Driver._commit`` returns: ``(state, timer, snapshot, armed, deadline)``."""
_NO_STATE: Commit = (None, None, None, None, None)


class Driver:
    """The activation rules for one step (a ``sparkwax.step.Step``).

    The step says which builder makes a key's logic (wrapped for its ``ttl``
    and ``max_state_bytes``), ``batch`` for ``StatefulBatchLogic``
    (``on_batch`` instead of ``on_item``), its time mode, ``order_by`` and
    sides. Hosts give each activation its rows' ``event_times`` (epoch µs,
    None for a null; EventTime mode only) and ``order`` (the ``order_by``
    columns, one sequence per column) as they read them; the offline host
    reads both from the values with ``read_columns``.
    """

    def __init__(self, step: Step) -> None:
        if not isinstance(step, Step):
            raise TypeError(f"Driver needs a sparkwax.step.Step, got {step!r}")
        self.step_id = step.step_id
        self.batch = step.batch
        self.time = step.time
        self.builder = step.logic_builder()
        self.event_column = step.time.column if isinstance(step.time, EventTime) else None
        self.order_by = step.order_by
        self.sides = step.sides
        sides = step.sides
        self._tag = sides.tagged if sides is not None and sides.layout is not None else None
        self._entry = "on_batch" if step.batch else "on_item"
        # A step without sides: its activations without event times, order
        # or EOF take the flattened path (``_activate_plain``).
        self._plain = step.sides is None
        self.two_clocks = step.two_clocks  # processing deadlines beside event timers
        self.lost_state: List[str] = []   # LostStateWarning messages (once per step)
        self._clock: Optional[Clock] = None  # the last activation's (reused at the same now)

    # -- the clock and the rows ---------------------------------------------------

    @property
    def uses_watermark(self) -> bool:
        """Whether ``now`` is the watermark (EventTime) or the processing time."""
        return self.time.uses_watermark

    def now_ms(self, watermark_ms: Callable[[], int], processing_ms: Callable[[], int]) -> int:
        """The activation clock from the host's two clocks (asked lazily: a
        Spark query without a watermark has none to ask)."""
        return self.time.now_ms(watermark_ms, processing_ms)

    @property
    def side_count(self) -> int:
        """How many inputs (each with its own watermark) the step has."""
        return 1 if self.sides is None else len(self.sides)

    def side_of(self, key: Any, value: Any) -> int:
        """The input a value comes from (0 for a step with one input)."""
        if self.sides is None:
            untagged_side(self.step_id, value)
            return 0
        return self.sides.index_of(self.step_id, key, value)

    def read_columns(self, key: Any, values: Sequence[Any]
                     ) -> Tuple[Optional[List[Optional[int]]], Columns]:
        """``(event_times, order)`` read from the values themselves (the
        offline host's rows): ``value[field]`` for a mapping, else the
        attribute, or the callable's result."""
        times = None
        if self.event_column is not None:
            times = [self.event_time_of(key, value) for value in values]
        order: Columns = None
        order_by = self.order_by
        if callable(order_by):
            order = ([self._call_order_by(order_by, key, value) for value in values],)
        elif order_by:
            order = tuple([_field(value, name) for value in values] for name in order_by)
        return times, order

    def event_time_of(self, key: Any, value: Any) -> Optional[int]:
        """A value's event time in epoch µs (None for a null one)."""
        column: Any = self.event_column
        if callable(column):
            try:
                moment = column(value)
            except Exception as error:
                raise InputError(self.step_id, key, "event time", value,
                                 f"the EventTime callable {column!r} raised {error!r}"
                                 ) from error
        else:
            moment = _field(value, column, _MISSING)
            if moment is _MISSING:
                raise InputError(self.step_id, key, "event time", value,
                                 f"EventTime({column!r}) needs each value to have a "
                                 f"{column!r} field (a mapping key or an attribute)")
        if moment is None:
            return None
        try:
            return to_epoch_us(require_aware(moment))
        except (TypeError, ValueError) as error:
            raise InputError(self.step_id, key, "event time", moment,
                             f"the event time column {column!r} must hold aware datetimes: "
                             f"{error}") from None

    def _call_order_by(self, order_by: Callable[[Any], Any], key: Any, value: Any) -> Any:
        try:
            return order_by(value)
        except Exception as error:
            raise InputError(self.step_id, key, "order_by", value,
                             f"the order_by callable raised {error!r}") from error

    def _arrange(self, key: Any, values: Sequence[Any], times: EventTimes, order: Columns
                 ) -> Tuple[Sequence[Any], EventTimes]:
        """Values (and their event times) in activation order: stable, by the
        order columns, else by event time; nulls first."""
        values, times, _ = self._arrange_ordered(key, values, times, order)
        return values, times

    def _arrange_ordered(self, key: Any, values: Sequence[Any], times: EventTimes,
                         order: Columns, ascending: bool = False
                         ) -> Tuple[Sequence[Any], EventTimes, bool]:
        """``_arrange`` and whether the event times it returns are known to be
        ascending without a null (``_drop_late`` then needs no scan). Rows
        already in order are returned as they are: no row is less than the
        one before it, the comparisons a stable sort would make first and
        the case in which it would change nothing. ``ascending``: the caller
        vouches that ``times`` ascend without a None; without ``order`` that
        is the same case, known without a pass over the rows."""
        if ascending and order is None and times is not None:
            return values, times, True
        count = len(values)
        if count < 2:
            return values, times, times is not None and order is None and None not in times
        columns: Sequence[Sequence[Any]]
        if order is not None:
            columns = order
        elif times is not None:
            columns = (times,)
        else:
            return values, times, False
        try:
            if len(columns) == 1 and None not in columns[0]:
                column = columns[0]
                if not any(map(_lt, islice(column, 1, None), column)):
                    return values, times, order is None
                by: Callable[[int], Any] = column.__getitem__
                index = sorted(range(count), key=by)
            else:
                index = sorted(range(count), key=lambda i: tuple(
                    (c[i] is not None, c[i]) for c in columns))
        except TypeError as error:
            raise InputError(self.step_id, key, "order_by", NO_VALUE,
                             f"the rows' order_by values cannot be compared: {error}"
                             ) from None
        if times is None:
            return [values[i] for i in index], None, False
        return [values[i] for i in index], [times[i] for i in index], order is None \
            and None not in times

    # -- streaming: one micro-batch activation ---------------------------------

    def activate(self, key: Any, stored: Optional[bytes], values: Sequence[Any],
                 now_ms: Optional[int], *, eof: bool = False, event_times: EventTimes = None,
                 order: Columns = None, committed_timer: Any = NO_VALUE,
                 processing_ms: Optional[int] = None, times_ascending: bool = False
                 ) -> Activation:
        """One activation of ``key`` from its ``stored`` state: restore, timer,
        items, EOF, commit. ``committed_timer``: the timer committed with
        ``stored``, if the host kept it; a rebuilt logic that disagrees gets
        a LostStateWarning. ``processing_ms``: the processing clock of a
        two-clock step (None: there is none, deadlines do not fire).
        ``times_ascending``: the caller vouches that ``event_times`` ascend
        without a None (a host that put them in order with numpy), see
        ``_arrange_ordered``."""
        if self._plain and self.two_clocks is False and event_times is None and not eof \
                and (order is None or len(values) < 2):
            return self._activate_plain(key, None, stored, values, now_ms, committed_timer,
                                        False)[0]
        return self._activate(key, None, stored, values, now_ms, False, eof, event_times,
                              order, committed_timer, processing_ms, times_ascending)[0]

    def activate_live(self, key: Any, logic: Optional[Logic], stored: Optional[bytes],
                      values: Sequence[Any], now_ms: Optional[int], *, eof: bool = False,
                      event_times: EventTimes = None, order: Columns = None,
                      committed_timer: Any = NO_VALUE, processing_ms: Optional[int] = None
                      ) -> Tuple[Activation, Optional[Logic]]:
        """``activate`` for a host that keeps live logic objects between
        activations (a long-running Bytewax worker; the offline runner's
        ``restore="on_crash"``): ``logic`` is the key's live object, else
        ``stored`` its committed snapshot (after a crash). Returns the
        activation (``state`` not encoded) and the live logic (None: no state)."""
        if self._plain and self.two_clocks is False and event_times is None and not eof \
                and (order is None or len(values) < 2):
            return self._activate_plain(key, logic, stored, values, now_ms, committed_timer,
                                        True)
        return self._activate(key, logic, stored, values, now_ms, True, eof, event_times,
                              order, committed_timer, processing_ms, False)

    def _activate(self, key: Any, logic: Optional[Logic], stored: Optional[bytes],
                  values: Sequence[Any], now_ms: Optional[int], live: bool, eof: bool,
                  event_times: EventTimes, order: Columns, committed_timer: Any,
                  processing_ms: Optional[int], ascending: bool
                  ) -> Tuple[Activation, Optional[Logic]]:
        """The general activation of ``activate`` and ``activate_live``: the
        key's ``logic`` if the host keeps it live, else restored from
        ``stored``; its rows put in order, late ones dropped, EOF; the commit
        encodes the snapshot unless ``live``. The Activation and the logic."""
        started = perf_counter_ns()
        self.check_key(key, values)
        had_state = logic is not None or stored is not None
        if self.two_clocks is False:
            processing_ms = None
        token = set_clock(self._clock_at(now_ms, processing_ms))
        try:
            if logic is None:
                logic, timer = self._restore(key, stored, committed_timer)
            else:
                timer = self._next_timer(key, logic)
            values, event_times, ordered = self._arrange_ordered(key, values, event_times,
                                                                 order, ascending)
            logic, emits, late, fired, touched, deadlines = self._run(
                key, logic, timer, values, now_ms, eof, event_times,
                processing_ms=processing_ms, ordered=ordered)
            state, timer, snapshot, armed, deadline = self._commit(key, logic, touched, stored,
                                                                   now_ms, not live)
        finally:
            reset_clock(token)
        return _result(emits, state, timer, snapshot, late, armed, len(values), fired,
                       had_state, logic is not None, started, deadline, deadlines), logic

    def flat_activation(self) -> Optional[Callable[..., Tuple[Activation, Optional[Logic]]]]:
        """What ``activate`` and ``activate_live`` call for an activation
        without event times, nothing to order and not EOF, to call
        positionally inside ``with driver.plain_clock(now_ms):`` (one clock
        for a host's many keys at one ``now``): ``(key, logic, stored,
        values, now_ms, committed_timer, live)``, returning the Activation
        and the live logic (see ``activate_live``; ``live`` false:
        ``activate``, the state encoded). None when this step takes the
        general path. A host with many small activations (the offline
        runner) saves a call and a clock per key.

        >>> from sparkwax.step import Step
        >>> from sparkwax.testing.reference import Counter
        >>> driver = Driver(Step.of(Counter))
        >>> flat = driver.flat_activation()
        >>> with driver.plain_clock(0):
        ...     act, _ = flat("k", None, None, ["a", "b"], 0, NO_VALUE, False)
        >>> act.emits, recovery.decode(act.state, step_id="s", key="k")
        ([1, 2], 2)
        """
        if not self._plain or self.two_clocks is not False:
            return None
        return self._plain_key

    @contextmanager
    def plain_clock(self, now_ms: Optional[int]) -> Iterator[None]:
        """The clock of plain activations at ``now_ms`` (``flat_activation``,
        ``activate_plain_keys``), current for the block."""
        token = set_clock(self._plain_clock(now_ms))
        try:
            yield
        finally:
            reset_clock(token)

    def _activate_plain(self, key: Any, logic: Optional[Logic], stored: Optional[bytes],
                        values: Sequence[Any], now_ms: Optional[int], committed_timer: Any,
                        live: bool) -> Tuple[Activation, Optional[Logic]]:
        """``_activate`` for the common case (``_plain``: a step without sides
        nor processing deadlines; no event times, nothing to order, not EOF):
        ``_plain_key`` at its own clock. ``tests/unit/core/test_fast_path.py``
        compares both."""
        token = set_clock(self._plain_clock(now_ms))
        try:
            return self._plain_key(key, logic, stored, values, now_ms, committed_timer, live)
        finally:
            reset_clock(token)

    def activate_plain_keys(self, keys: Sequence[Any], stored: Sequence[Optional[bytes]],
                            values: Sequence[Sequence[Any]], committed: Sequence[Any],
                            now_ms: Optional[int]) -> Activations:
        """``_activate_plain`` of many keys at one ``now_ms``, in the order
        given, in one call with one clock (one call per key, its clock and
        its Activation cost ~20% of the packed host's Python at 100k keys):
        an ``Activations``, each key's fields in ``keys`` order and the
        counts summed over the keys. A key's error stops the call.

        >>> from sparkwax.step import Step
        >>> from sparkwax.testing.reference import Counter
        >>> acts = Driver(Step.of(Counter)).activate_plain_keys(
        ...     ["a", "b"], [None, None], [["x"], ["y", "z"]], [NO_VALUE, NO_VALUE], 0)
        >>> acts.emits, acts.metrics.rows_in, acts.metrics.keys_created
        ([[1], [1, 2]], 3, 2)
        """
        started = perf_counter_ns()
        all_emits: List[List[Any]] = []
        states: List[Optional[bytes]] = []
        timers: List[Optional[int]] = []
        armed_list: List[Optional[int]] = []
        rows = fired = created = discarded = 0
        plain_steps = self._plain_steps
        with self.plain_clock(now_ms):
            for key, blob, key_values, committed_timer in zip(keys, stored, values, committed):
                emits, state, timer, _, armed, key_fired, _ = plain_steps(
                    key, None, blob, key_values, now_ms, committed_timer, False)
                all_emits.append(emits)
                states.append(state)
                timers.append(timer)
                armed_list.append(armed)
                rows += len(key_values)
                fired += key_fired
                if blob is None:
                    created += state is not None
                elif state is None:
                    discarded += 1
        return Activations(all_emits, states, timers, armed_list, StepMetrics(
            rows, 0, fired, created, discarded, sum(map(len, all_emits)),
            (perf_counter_ns() - started) // 1000))

    def _plain_clock(self, now_ms: Optional[int]) -> Optional[Clock]:
        """The clock of a plain activation at ``now_ms`` (the last one's when equal)."""
        clock = self._clock
        if now_ms is None:
            return None
        if clock is None or clock.now_ms != now_ms or clock.processing_ms is not None:
            return self._clock_at(now_ms)
        return clock

    def _plain_key(self, key: Any, logic: Optional[Logic], stored: Optional[bytes],
                   values: Sequence[Any], now_ms: Optional[int], committed_timer: Any,
                   live: bool) -> Tuple[Activation, Optional[Logic]]:
        """One plain activation, its clock already set: ``_plain_steps`` and
        its Activation. The Activation and the live logic."""
        started = perf_counter_ns()
        emits, state, timer, snapshot, armed, fired, new_logic = self._plain_steps(
            key, logic, stored, values, now_ms, committed_timer, live)
        had_state = logic is not None or stored is not None
        # _result's tuple, built here: its call costs ~2% of a small activation.
        return _new(Activation, (emits, state, timer, snapshot, 0, armed, len(values), fired,
                                 0 if had_state or new_logic is None else 1,
                                 1 if had_state and new_logic is None else 0,
                                 (perf_counter_ns() - started) // 1000, None, 0)), new_logic

    def _plain_steps(self, key: Any, logic: Optional[Logic], stored: Optional[bytes],
                     values: Sequence[Any], now_ms: Optional[int], committed_timer: Any,
                     live: bool) -> Tuple[Any, ...]:
        """The steps of one plain activation, its clock already set: restore
        (``stored``, when there is no live ``logic``), due timer, items,
        commit (``live``: the logic is kept, the snapshot not encoded), the
        same step bodies as ``_activate``. ``(emits, state, timer, snapshot,
        armed, fired, logic)``."""
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

    # -- the steps: one body each, used by every path ------------------------

    def _restore(self, key: Any, stored: Optional[bytes], committed_timer: Any = NO_VALUE
                 ) -> Tuple[Optional[Logic], Optional[int]]:
        """Step 1: ``builder(decode(stored))`` (None for a new key) and its
        ``notify_at()``, read once for the LostStateWarning (a
        ``committed_timer`` other than the rebuilt one) and the due timer."""
        if stored is None:
            return None, None
        resume: Any = _MISSING
        if type(stored) is bytes and stored.startswith(_HEADER):  # recovery.decode's common
            try:                                                   # case, inline
                resume = _loads(stored[_HEADER_SIZE:] if len(stored) <= _COPY_LIMIT
                                else memoryview(stored)[_HEADER_SIZE:])
            except Exception:
                pass  # decode says what is wrong
        if resume is _MISSING:
            resume = recovery.decode(stored, step_id=self.step_id, key=key)
        logic = self._build(key, resume)
        try:  # _next_timer, inline (a call less per key)
            moment = logic.notify_at()
        except Exception as error:
            raise self._notify_at_raised(key, error) from error
        timer = None if moment is None else self._timer_ms(key, moment)
        if committed_timer is not NO_VALUE and timer != committed_timer:
            self._lost_state(key, logic, committed_timer, timer)
        return logic, timer

    def _due_timer(self, key: Any, logic: Optional[Logic], timer: Optional[int],
                   now_ms: Optional[int], emits: List[Any]) -> Tuple[Optional[Logic], int]:
        """Step 2: ``on_notify()`` when ``timer`` (the logic's ``notify_at()``,
        None without a logic) is due at ``now_ms``; the logic (None after a
        DISCARD) and how many timers fired."""
        if timer is None or now_ms is None or timer > now_ms:  # timers.is_due, inline
            return logic, 0
        # An ignore rather than cast(): a timer comes from a logic (no call per key).
        return (None if self._call(key, logic, "on_notify", emits)  # type: ignore[arg-type]
                else logic), 1

    def _take(self, key: Any, logic: Optional[Logic], values: Sequence[Any],
              emits: List[Any]) -> Optional[Logic]:
        """Step 3: the items, in order: one ``on_batch`` for a batch step, else
        ``on_item`` each (kept tight: it is the hot path); after a DISCARD the
        next item gets a fresh ``builder(None)``. The live logic or None."""
        if self.batch:  # the step's batch flag says which kind _build checked
            if logic is None:
                logic = self._build(key, None)
            if self._call(key, logic, "on_batch", emits, list(values)):
                return None
            return logic
        # _build checked that an item step's logic has on_item: an ignore, not a cast() call.
        on_item = None if logic is None else logic.on_item  # type: ignore[union-attr]
        extend = emits.extend
        for value in values:
            if on_item is None:
                fresh: ItemLogic = self._build(key, None)  # type: ignore[assignment]
                logic = fresh
                on_item = fresh.on_item
            try:
                result = on_item(value)
            except Exception as error:
                raise CallbackError(self.step_id, key, "on_item", value,
                                    f"on_item raised {error!r} on this value") from error
            if type(result) is not tuple or len(result) != 2:
                raise ReturnValueError(self.step_id, key, "on_item", result,
                                       "must return a 2-tuple (emits, discard)")
            out, discard = result
            if type(out) is list or type(out) is tuple:
                extend(out)
            else:
                extend(self._emits(key, "on_item", out))
            if discard is not False:  # RETAIN, the common case, costs one test
                if discard is not True:
                    raise ReturnValueError(self.step_id, key, "on_item", discard,
                                           "the discard flag must be a bool (RETAIN or "
                                           "DISCARD)")
                logic = on_item = None
        return logic

    def _commit(self, key: Any, logic: Optional[Logic], touched: Any, stored: Optional[bytes],
                now_ms: Optional[int], encode: bool = True) -> Commit:
        """Step 5: ``(state, timer, snapshot, armed, deadline)`` of a retained
        logic: ``encode(snapshot())`` (``stored`` as it is when no callback
        ``touched`` it; with ``encode`` false, a live logic kept by the
        host: no state, the snapshot ``_Lazy``), ``notify_at()`` and the
        timeout armed for it at ``now_ms`` (``timers.armed_timeout``) and,
        in a two-clock step, ``processing_notify_at()``. No state for None."""
        if logic is None:
            return _NO_STATE
        state: Optional[bytes]
        if not encode:
            state, snapshot = None, _Lazy
        elif touched:
            try:  # self.snapshot, inline (a call less per key)
                snapshot = logic.snapshot()
            except Exception as error:
                raise self._snapshot_raised(key, error) from error
            try:  # recovery.encode's common case, inline
                state = _HEADER + _dumps(snapshot, _PROTOCOL)
            except Exception:  # encode's other serializer, or its named error
                state = recovery.encode(snapshot, step_id=self.step_id, key=key)
        else:  # no callback ran: the stored bytes are still exact
            state, snapshot = stored, _Lazy
        try:  # _next_timer, inline
            moment = logic.notify_at()
        except Exception as error:
            raise self._notify_at_raised(key, error) from error
        timer = armed = None
        if moment is not None:
            timer = self._timer_ms(key, moment)
            if now_ms is not None:
                armed = self.time.armed_timeout(timer, now_ms)
        return (state, timer, snapshot, armed,
                self._next_deadline(key, logic) if self.two_clocks else None)

    def encode_live(self, key: Any, logic: Logic) -> bytes:
        """What a live logic commits: ``encode(snapshot())``."""
        return recovery.encode(self.snapshot(key, logic), step_id=self.step_id, key=key)

    def decode(self, key: Any, stored: bytes) -> Any:
        """A committed snapshot, decoded (errors name the step and key)."""
        return recovery.decode(stored, step_id=self.step_id, key=key)

    def restore_check(self, key: Any, stored: bytes, now_ms: Optional[int] = None,
                      processing_ms: Optional[int] = None
                      ) -> Tuple[bytes, Optional[int], Optional[int]]:
        """What a restart does with a stored snapshot, then what its commit
        does, with no callback that takes input (``sparkwax state check``):
        ``builder(decode(stored))``, ``encode(snapshot())``, ``notify_at()``
        and, for a logic with deadlines, ``processing_notify_at()``, each
        validated as in an activation (the same errors: SnapshotError,
        BuilderError, CallbackError, NotifyAtError), at the clock ``now_ms``.
        Returns ``(blob, timer, deadline)``."""
        token = set_clock(self._clock_at(now_ms, processing_ms))
        try:
            logic, _ = self._restore(key, stored)
            blob, timer, _, _, deadline = self._commit(key, logic, True, None, now_ms)
        finally:
            reset_clock(token)
        return cast(bytes, blob), timer, deadline

    def check_key(self, key: Any, values: Sequence[Any]) -> None:
        """Null and NaN keys are refused: they are almost always a data bug."""
        kind = type(key)
        if kind is str or kind is int:  # the common keys: never null nor NaN
            return
        parts = key if kind is tuple else (key,)
        for part in parts:
            if part is None or part != part:
                raise InputError(self.step_id, key, "key", values[0] if len(values) else
                                 NO_VALUE, "null or NaN key; drop or fill such rows before "
                                 "the step (e.g. df.na.drop(subset=[...]))")

    def _clock_at(self, now_ms: Optional[int], processing_ms: Optional[int] = None
                  ) -> Optional[Clock]:
        """The clock an activation at ``now_ms`` runs at (set and reset around
        it with a token: ``clock.running_at`` costs a generator per key). A
        Clock is frozen: the keys of one micro-batch share one."""
        if now_ms is None:
            return None
        clock = self._clock
        if clock is None or clock.now_ms != now_ms or clock.processing_ms != processing_ms:
            clock = self._clock = Clock(now_ms, self.time.kind, processing_ms)
        return clock

    def _lost_state(self, key: Any, logic: Logic, committed: Optional[int],
                    rebuilt: Optional[int]) -> None:
        """Warn (once per step): a logic rebuilt from its snapshot has another
        ``notify_at()`` (``rebuilt``, as ``_next_timer`` reads it) than the
        logic that committed that snapshot: it kept state outside
        ``snapshot()``, which a Bytewax worker keeps between activations but
        Spark (and sparkwax) rebuild without."""
        if self.lost_state:
            return
        inner: object = logic
        while isinstance(inner, (TtlLogic, Limited)):  # the step's wrappers: name the user's
            inner = inner.inner
        shown = [None if ms is None else from_epoch_ms(ms).isoformat()
                 for ms in (committed, rebuilt)]
        message = (f"step {self.step_id!r}: {type(inner).__qualname__} rebuilt from its "
                   f"snapshot (key {key!r}) has notify_at() = {shown[1]}, but the logic "
                   f"that committed the snapshot had {shown[0]}. Every activation rebuilds "
                   f"the logic with builder(snapshot) (as Spark's state store does), so "
                   f"state kept outside snapshot() is lost: put it in snapshot(). "
                   f"(Warned once per step.)")
        self.lost_state.append(message)
        warnings.warn(message, LostStateWarning, stacklevel=outside_stacklevel())

    def _build(self, key: Any, snapshot: Any) -> Logic:
        """``builder(snapshot)``, checked to have the step's entry point
        (``on_item``, or ``on_batch`` for a batch step)."""
        try:
            logic: Logic = self.builder(snapshot)
        except Exception as error:
            raise self._builder_raised(key, snapshot, error) from error
        if not callable(getattr(logic, self._entry, None)):
            raise self._not_a_logic(key, logic)
        if self.two_clocks is None:  # a builder function: learnt from its first logic
            self.two_clocks = logic_has_deadlines(logic)
            if self.two_clocks:
                check_deadlines(self.step_id, self.time, type(logic).__qualname__)
        return logic

    def _builder_raised(self, key: Any, snapshot: Any, error: Exception) -> BuilderError:
        what = "builder(None)" if snapshot is None else "builder(resume_state)"
        return BuilderError(self.step_id, key, what, NO_VALUE if snapshot is None else snapshot,
                            f"the builder raised {error!r}")

    def _not_a_logic(self, key: Any, logic: Any) -> BuilderError:
        return BuilderError(self.step_id, key, "builder", logic,
                            f"the builder must return a logic object with {self._entry}()")

    def _run(self, key: Any, logic: Optional[Logic], timer: Optional[int],
             values: Sequence[Any], now_ms: Optional[int], eof: bool, event_times: EventTimes,
             commit_before_eof: bool = False, processing_ms: Optional[int] = None,
             ordered: bool = False) -> Run:
        """Steps 2-4 on a live (or absent) logic whose ``notify_at()`` is
        ``timer`` (None: no timer to fire); returns
        ``(logic_or_None, emits, late_count, timers_fired, touched, deadlines_fired)``.
        ``commit_before_eof`` (bounded input): snapshot a live logic before
        ``on_eof`` as the stream's last commit would, so a snapshot that
        cannot be stored fails in bounded mode too. ``ordered``: the event
        times are ascending without a null (see ``_arrange_ordered``)."""
        emits: List[Any] = []
        logic, fired = self._due_timer(key, logic, timer, now_ms, emits)
        touched = fired > 0
        deadlines = 0
        if self.two_clocks and logic is not None and is_due(self._next_deadline(key, logic),
                                                            processing_ms):
            touched = True
            fired += 1
            deadlines = 1
            if self._call(key, logic, "on_processing_notify", emits):
                logic = None
        late = 0
        if event_times is not None and now_ms is not None and len(values):
            values, late = self._drop_late(values, event_times, now_ms * 1000, ordered)
        if len(values):
            touched = True
            if self._tag is not None:  # Spark's union of a connected step's sides
                values = [self._tag(row) for row in values]
            logic = self._take(key, logic, values, emits)
        if eof and logic is not None:
            touched = True
            if commit_before_eof:
                recovery.encode(self.snapshot(key, logic), step_id=self.step_id, key=key)
            if self._call(key, logic, "on_eof", emits):
                logic = None
        return logic, emits, late, fired, touched, deadlines

    def _drop_late(self, values: Sequence[Any], event_times: Sequence[Optional[int]],
                   watermark_us: int, ordered: bool = False) -> Tuple[Sequence[Any], int]:
        """Lateness: an event time at or behind the watermark, or a null one.
        ``ordered``: the times ascend without a null, so the late ones lead."""
        if len(event_times) != len(values):
            raise ValueError(f"{len(event_times)} event times for {len(values)} values")
        if ordered:
            late = bisect_right(cast("Sequence[int]", event_times), watermark_us)
            return (values[late:] if late else values), late
        if event_times and None not in event_times \
                and min(cast("Sequence[int]", event_times)) > watermark_us:
            return values, 0
        kept = [v for v, t in zip(values, event_times) if t is not None and t > watermark_us]
        return kept, len(values) - len(kept)

    def snapshot(self, key: Any, logic: Logic) -> Any:
        """``logic.snapshot()``, with errors naming the step and key."""
        try:
            return logic.snapshot()
        except Exception as error:
            raise self._snapshot_raised(key, error) from error

    def _snapshot_raised(self, key: Any, error: Exception) -> CallbackError:
        return CallbackError(self.step_id, key, "snapshot", NO_VALUE,
                             f"snapshot() raised {error!r}")

    def _next_timer(self, key: Any, logic: Logic) -> Optional[int]:
        """``notify_at()`` as epoch ms (rounded up), validated."""
        try:
            moment = logic.notify_at()
        except Exception as error:
            raise self._notify_at_raised(key, error) from error
        return None if moment is None else self._timer_ms(key, moment)

    def _notify_at_raised(self, key: Any, error: Exception) -> CallbackError:
        return CallbackError(self.step_id, key, "notify_at", NO_VALUE,
                             f"notify_at() raised {error!r}")

    def _timer_ms(self, key: Any, moment: Any) -> int:
        """A ``notify_at()`` that is not None, as epoch ms (rounded up), validated."""
        try:
            return timer_ms(require_aware(moment))
        except (TypeError, ValueError) as error:
            raise NotifyAtError(self.step_id, key, "notify_at", moment,
                                f"notify_at() must return None or an aware datetime: {error}"
                                ) from None

    def _next_deadline(self, key: Any, logic: Logic) -> Optional[int]:
        """``processing_notify_at()`` as epoch ms (rounded up), validated as
        ``notify_at()`` is (two-clock steps only)."""
        try:
            moment = forward_deadline(logic)
        except Exception as error:
            raise CallbackError(self.step_id, key, "processing_notify_at", NO_VALUE,
                                f"processing_notify_at() raised {error!r}") from error
        if moment is None:
            return None
        try:
            return timer_ms(require_aware(moment))
        except (TypeError, ValueError) as error:
            raise NotifyAtError(self.step_id, key, "processing_notify_at", moment,
                                f"processing_notify_at() must return None or an aware "
                                f"datetime: {error}") from None

    # -- bounded input: the whole key as one sequence ---------------------------

    def activate_bounded(self, key: Any, values: Sequence[Any], *,
                         event_times: EventTimes = None, order: Columns = None) -> Activation:
        """A key of a bounded (batch) input, as if each item were its own
        micro-batch: in EventTime mode the key's watermark (max event time so
        far minus the step's delay; for a step with sides, the smallest of
        its inputs' watermarks, see ``sparkwax.timers``) advances item by
        item, due timers fire before the next item and late items are
        dropped; then ``on_eof``. Without event times no timer fires before
        ``on_eof``. A logic live before ``on_eof`` is snapshotted once, as a
        stream would commit it."""
        started = perf_counter_ns()
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
            if event_times is None:
                logic, emits, late, fired, _, _ = self._run(key, None, None, values, None, True,
                                                            None, commit_before_eof=True)
            else:
                logic, emits, late, fired = self._bounded_events(key, values, event_times,
                                                                 sides)
            state, timer, snapshot, armed, deadline = self._commit(key, logic, True, None, None)
        finally:
            reset_clock(token)
        return _result(emits, state, timer, snapshot, late, armed, len(values), fired, False,
                       state is not None, started, deadline, 0)

    def _arrange_sides(self, key: Any, values: Sequence[Any], event_times: EventTimes,
                       order: Columns, sides: Sequence[int]
                       ) -> Tuple[List[Any], EventTimes, List[int]]:
        tagged = [(value, side) for value, side in zip(values, sides)]
        arranged, times = self._arrange(key, tagged, event_times, order)
        return [v for v, _ in arranged], times, [s for _, s in arranged]

    def _bounded_events(self, key: Any, values: Sequence[Any],
                        event_times: Sequence[Optional[int]], sides: Optional[Sequence[int]]
                        ) -> Tuple[Optional[Logic], List[Any], int, int]:
        """``activate_bounded``'s steps 2-4 with event times, run by run
        (``_run_end``) at the key's advancing watermark: ``(logic, emits,
        late, fired)``."""
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
        return logic, emits, late, fired + more_fired
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

    # -- callbacks ------------------------------------------------------------

    def _call(self, key: Any, logic: Logic, name: str, emits: List[Any], *args: Any) -> bool:
        """Call ``logic.<name>(*args)``, validate, extend emits; True if discarded."""
        try:
            result = getattr(logic, name)(*args)
        except Exception as error:
            shown = args[0] if args else NO_VALUE
            raise CallbackError(self.step_id, key, name, shown,
                                f"{name} raised {error!r}") from error
        if type(result) is not tuple or len(result) != 2:
            raise ReturnValueError(self.step_id, key, name, result,
                                   "must return a 2-tuple (emits, discard)")
        discard: bool
        out, discard = result
        if type(out) is list or type(out) is tuple:  # the common case: no checks to make
            emits.extend(out)
        else:
            emits.extend(self._emits(key, name, out))
        if type(discard) is not bool:
            raise ReturnValueError(self.step_id, key, name, discard,
                                   "the discard flag must be a bool (RETAIN or DISCARD)")
        return discard

    def _emits(self, key: Any, name: str, out: Any) -> List[Any]:
        if isinstance(out, (str, bytes, dict)) or not hasattr(out, "__iter__"):
            raise ReturnValueError(self.step_id, key, name, out,
                                   "emits must be an iterable of values (a list, tuple or "
                                   "generator); wrap a single value in a list")
        try:
            return list(out)
        except LogicError:
            raise
        except Exception as error:
            raise CallbackError(self.step_id, key, name, NO_VALUE,
                                f"iterating the emits raised {error!r}") from error


class _LazySnapshot:
    """Placeholder for 'snapshot unchanged, decode ``state`` if you need it'."""

    def __repr__(self) -> str:
        return "<unchanged snapshot>"


_Lazy = _LazySnapshot()


def _field(value: Any, name: str, default: Any = None) -> Any:
    """``value[name]`` for a mapping, else ``value.<name>`` (a dataclass event)."""
    try:
        return value[name]
    except (KeyError, TypeError, IndexError):
        return getattr(value, name, default)


def sorted_keys(keys: List[Any]) -> List[Any]:
    """Unique keys in the order hosts run them: sorted (by repr when the keys
    are not comparable), so runs are reproducible."""
    unique = list(dict.fromkeys(keys))
    try:
        return sorted(unique)
    except TypeError:
        return sorted(unique, key=lambda k: (type(k).__name__, repr(k)))
