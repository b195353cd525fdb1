"""THE semantics: one activation of one key (DESIGN.md section 3).

Both hosts (the Spark engine and the offline runner) call this module and add
no semantics of their own. An activation is:

1. restore: ``builder(decode(stored))``, or nothing yet for a new key;
2. timer: a restored logic whose ``notify_at()`` is ``<= now`` gets one
   ``on_notify()`` before any item;
3. items in order (late ones dropped in EventTime mode: event time ``<=``
   watermark); after DISCARD the next item gets a fresh ``builder(None)``;
4. EOF (bounded input or ``finish``): ``on_eof()`` if logic is live;
5. commit: retained -> ``encode(snapshot())`` and ``notify_at()`` as the
   next timer; discarded -> no state;
6. the emits, in order.

>>> from sparkwax.testing.reference import Counter
>>> driver = Driver(Counter, step_id="count")
>>> first = driver.activate("k", None, ["a", "b"], now_ms=0)
>>> first.emits, first.snapshot
([1, 2], 2)
>>> driver.activate("k", first.state, ["c"], now_ms=0).emits
[3]
"""

from __future__ import annotations

import warnings
from datetime import datetime
from typing import Any, Callable, List, NamedTuple, Optional, Sequence

from . import recovery
from .errors import (NO_VALUE, BuilderError, CallbackError, InputError, LogicError,
                     LostStateWarning, NotifyAtError, ReturnValueError)
from .timers import UTC, from_epoch_ms, is_due, require_aware, timer_ms
from .watermark import Watermark


class Activation(NamedTuple):
    """The plain result of one activation."""

    emits: List[Any]          # emitted values, in order
    state: Optional[bytes]    # encoded snapshot to store; None: remove / no state
    timer: Optional[int]      # next notify_at in epoch ms; None: no timer
    snapshot: Any             # the snapshot value behind ``state`` (None if no state)
    late: int = 0             # values dropped as late (EventTime mode)


_NO_EVENT_TIMES: Sequence[int] = ()
_ONE_INPUT = (0,)


class Driver:
    """The activation rules for one step.

    ``builder(resume_state_or_None)`` makes a key's logic; ``batch=True`` for
    ``StatefulBatchLogic`` (``on_batch`` instead of ``on_item``).
    ``event_times`` given to the activate methods are epoch microseconds, one
    per value, in EventTime mode (None otherwise).
    """

    def __init__(self, builder: Callable[[Any], Any], *, step_id: str = "stateful",
                 batch: bool = False):
        if not callable(builder):
            raise BuilderError(step_id, None, "builder", builder, "builder is not callable")
        self.builder = builder
        self.step_id = step_id
        self.batch = batch
        self._entry = "on_batch" if batch else "on_item"
        self.lost_state: List[str] = []   # LostStateWarning messages (once per step)

    # -- streaming: one micro-batch activation ---------------------------------

    def activate(self, key, stored: Optional[bytes], values: Sequence, now_ms: Optional[int],
                 *, eof: bool = False, event_times: Optional[Sequence[int]] = None,
                 committed_timer: Any = NO_VALUE) -> Activation:
        """One activation of ``key``: restore, timer, items, EOF, commit.
        ``committed_timer``: the timer committed with ``stored``, if the host
        kept it; a rebuilt logic that disagrees gets a LostStateWarning."""
        self.check_key(key, values)
        logic = self.restore(key, stored) if stored is not None else None
        if logic is not None and committed_timer is not NO_VALUE:
            self.check_rebuilt_timer(key, logic, committed_timer)
        logic, emits, late, touched = self.run(key, logic, values, now_ms, eof=eof,
                                               event_times=event_times, restored=True)
        if not touched and logic is not None:
            # No callback ran: the stored bytes are still exact; only re-read the timer.
            return Activation(emits, stored, self.next_timer(key, logic), _Lazy, late)
        return self.commit(key, logic, emits, late)

    def check_key(self, key, values: Sequence) -> None:
        """Null and NaN keys are refused: they are almost always a data bug."""
        parts = key if type(key) is tuple else (key,)
        for part in parts:
            if part is None or part != part:
                raise InputError(self.step_id, key, "key", values[0] if len(values) else
                                 NO_VALUE, "null or NaN key; drop or fill such rows before "
                                 "the step (e.g. df.na.drop(subset=[...]))")

    def restore(self, key, stored: bytes):
        """``builder(decode(stored))``, with errors naming the step and key."""
        snapshot = recovery.decode(stored, step_id=self.step_id, key=key)
        return self.build(key, snapshot)

    def check_rebuilt_timer(self, key, logic, committed: Optional[int]) -> None:
        """Warn (once per step) when a logic rebuilt from its snapshot has
        another ``notify_at()`` than the logic that committed that snapshot:
        it kept state outside ``snapshot()``, which a Bytewax worker keeps
        between activations but Spark (and sparkwax) rebuild without."""
        rebuilt = self.next_timer(key, logic)
        if rebuilt == committed or self.lost_state:
            return
        inner = getattr(logic, "inner", logic)  # connect's wrapper: name the user's class
        shown = [None if ms is None else from_epoch_ms(ms).isoformat()
                 for ms in (committed, rebuilt)]
        message = (f"step {self.step_id!r}: {type(inner).__qualname__} rebuilt from its "
                   f"snapshot (key {key!r}) has notify_at() = {shown[1]}, but the logic "
                   f"that committed the snapshot had {shown[0]}. Every activation rebuilds "
                   f"the logic with builder(snapshot) (as Spark's state store does), so "
                   f"state kept outside snapshot() is lost: put it in snapshot(). "
                   f"(Warned once per step.)")
        self.lost_state.append(message)
        warnings.warn(message, LostStateWarning, stacklevel=2)

    def build(self, key, snapshot):
        try:
            logic = self.builder(snapshot)
        except Exception as error:
            what = "builder(None)" if snapshot is None else "builder(resume_state)"
            raise BuilderError(self.step_id, key, what, NO_VALUE if snapshot is None else snapshot,
                               f"the builder raised {error!r}") from error
        if not callable(getattr(logic, self._entry, None)):
            raise BuilderError(self.step_id, key, "builder", logic,
                               f"the builder must return a logic object with {self._entry}()")
        return logic

    def run(self, key, logic, values: Sequence, now_ms: Optional[int], *, eof: bool = False,
            event_times: Optional[Sequence[int]] = None, restored: bool = True):
        """Steps 2-4 on a live (or absent) logic; returns
        ``(logic_or_None, emits, late_count, touched)``."""
        global _NOW_MS
        _NOW_MS = now_ms
        emits: List[Any] = []
        touched = False
        if restored and logic is not None and is_due(self.next_timer(key, logic), now_ms):
            touched = True
            if self._call(key, logic, "on_notify", emits):
                logic = None
        late = 0
        if event_times is not None and now_ms is not None and len(values):
            values, late = _drop_late(values, event_times, now_ms * 1000)
        if len(values):
            touched = True
            if self.batch:
                if logic is None:
                    logic = self.build(key, None)
                if self._call(key, logic, "on_batch", emits, list(values)):
                    logic = None
            else:
                logic = self._items(key, logic, values, emits)
        if eof and logic is not None:
            touched = True
            if self._call(key, logic, "on_eof", emits):
                logic = None
        return logic, emits, late, touched

    def commit(self, key, logic, emits: List[Any], late: int = 0) -> Activation:
        """Step 5: snapshot and timer of a retained logic, or no state."""
        if logic is None:
            return Activation(emits, None, None, None, late)
        snapshot = self.snapshot(key, logic)
        state = recovery.encode(snapshot, step_id=self.step_id, key=key)
        return Activation(emits, state, self.next_timer(key, logic), snapshot, late)

    def snapshot(self, key, logic):
        try:
            return logic.snapshot()
        except Exception as error:
            raise CallbackError(self.step_id, key, "snapshot", NO_VALUE,
                                f"snapshot() raised {error!r}") from error

    def next_timer(self, key, logic) -> Optional[int]:
        """``notify_at()`` as epoch ms (rounded up), validated."""
        try:
            moment = logic.notify_at()
        except Exception as error:
            raise CallbackError(self.step_id, key, "notify_at", NO_VALUE,
                                f"notify_at() raised {error!r}") from error
        if moment is None:
            return None
        try:
            return timer_ms(require_aware(moment))
        except (TypeError, ValueError) as error:
            raise NotifyAtError(self.step_id, key, "notify_at", moment,
                                f"notify_at() must return None or an aware datetime: {error}"
                                ) from None

    # -- bounded input: the whole key as one sequence ---------------------------

    def activate_bounded(self, key, values: Sequence, *,
                         event_times: Optional[Sequence[int]] = None,
                         delay_ms: int = 0, sides: Optional[Sequence[int]] = None,
                         side_count: int = 1) -> Activation:
        """A key of a bounded (batch) input, as if each item were its own
        micro-batch: in EventTime mode the key's watermark (max event time so
        far minus ``delay_ms``; with ``sides``, the input index of each item,
        the smallest of the ``side_count`` inputs' watermarks, see
        ``sparkwax.watermark``) advances item by item, due timers fire before
        the next item and late items are dropped; then ``on_eof``.
        Without event times no timer fires before ``on_eof``."""
        self.check_key(key, values)
        emits: List[Any] = []
        if event_times is None:
            logic, emits, late, _ = self.run(key, None, values, None, eof=True)
            return self.commit(key, logic, emits, late)
        if sides is None:
            sides = _ONE_INPUT * len(values) if side_count == 1 else None
        if sides is None or len(sides) != len(values):
            raise ValueError(f"{len(values)} values need one side index each")
        clock = Watermark(delay_ms, side_count)
        logic, late, position, n = None, 0, 0, len(values)
        global _NOW_MS
        while position < n:
            watermark = _NOW_MS = clock.advance()
            if logic is not None and is_due(self.next_timer(key, logic), watermark):
                if self._call(key, logic, "on_notify", emits):
                    logic = None
            end = self._run_end(key, logic, event_times, sides, position, clock)
            chunk_values, chunk_times = values[position:end], event_times[position:end]
            logic, more, chunk_late, _ = self.run(key, logic, chunk_values, watermark,
                                                  event_times=chunk_times, restored=False)
            emits.extend(more)
            late += chunk_late
            for index in range(position, end):
                clock.see(event_times[index], sides[index])
            position = end
        watermark = clock.advance()
        logic, more, _, _ = self.run(key, logic, (), watermark, eof=True, restored=True)
        emits.extend(more)
        return self.commit(key, logic, emits, late)

    def _run_end(self, key, logic, event_times, sides, start, clock: Watermark) -> int:
        """End of the next run of items given in one go: one item for
        StatefulLogic; for StatefulBatchLogic every item up to the one before
        which the current timer would become due (or, for items that would be
        late, a single item so lateness is judged item by item)."""
        if not self.batch:
            return start + 1
        timer = self.next_timer(key, logic) if logic is not None else None
        end = start + 1
        running = clock.copy()
        running.see(event_times[start], sides[start])
        while end < len(event_times):
            watermark = running.advance()
            if is_due(timer, watermark) or event_times[end] <= watermark * 1000:
                break
            running.see(event_times[end], sides[end])
            end += 1
        return end

    # -- callbacks ------------------------------------------------------------

    def _items(self, key, logic, values: Sequence, emits: List[Any]):
        """The per-item loop of a StatefulLogic (kept tight: it is the hot path)."""
        builder_needed = logic is None
        on_item = None if builder_needed else logic.on_item
        extend = emits.extend
        for value in values:
            if on_item is None:
                logic = self.build(key, None)
                on_item = logic.on_item
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
            if discard is True:
                logic = on_item = None
            elif discard is not False:
                raise ReturnValueError(self.step_id, key, "on_item", discard,
                                       "the discard flag must be a bool (RETAIN or DISCARD)")
        return logic

    def _call(self, key, logic, name: str, emits: List[Any], *args) -> bool:
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
        out, discard = result
        emits.extend(self._emits(key, name, out))
        if type(discard) is not bool:
            raise ReturnValueError(self.step_id, key, name, discard,
                                   "the discard flag must be a bool (RETAIN or DISCARD)")
        return discard

    def _emits(self, key, name: str, out) -> List[Any]:
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


_NOW_MS: Optional[int] = None


def now() -> Optional[datetime]:
    """The current activation's ``now`` (the watermark in EventTime mode, the
    micro-batch's processing time otherwise) as an aware UTC datetime; None
    outside an activation or when the host has no clock (bounded input in
    ProcessingTime mode). Read it in ``on_notify`` to close everything that is
    due at once, e.g. all windows whose close time passed:

    >>> import sparkwax as sw
    >>> from sparkwax.testing import Batch, run
    >>> class Clock(sw.StatefulLogic):
    ...     def __init__(self, resume=None): pass
    ...     def on_item(self, value): return [sw.now().isoformat()], sw.DISCARD
    ...     def snapshot(self): return None
    >>> run(Clock, [Batch([("k", 1)], now=datetime(2024, 1, 1, tzinfo=UTC))]).by_key
    {'k': ['2024-01-01T00:00:00+00:00']}
    """
    return None if _NOW_MS is None else from_epoch_ms(_NOW_MS)


class _LazySnapshot:
    """Placeholder for 'snapshot unchanged, decode ``state`` if you need it'."""

    def __repr__(self):
        return "<unchanged snapshot>"


_Lazy = _LazySnapshot()
UNCHANGED = _Lazy


def _drop_late(values: Sequence, event_times: Sequence[int], watermark_us: int):
    if len(event_times) != len(values):
        raise ValueError(f"{len(event_times)} event times for {len(values)} values")
    kept = [v for v, t in zip(values, event_times) if t > watermark_us]
    return kept, len(values) - len(kept)


def sorted_keys(keys: List[Any]) -> List[Any]:
    """Unique keys in the order hosts run them: sorted (by repr when the keys
    are not comparable), so runs are reproducible."""
    unique = list(dict.fromkeys(keys))
    try:
        return sorted(unique)
    except TypeError:
        return sorted(unique, key=lambda k: (type(k).__name__, repr(k)))
