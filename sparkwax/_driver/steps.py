"""The steps of an activation, one body each, used by every route
(``routes``): restore (step 1), the due timer and deadline (step 2), the
items (step 3), EOF (step 4: ``_run`` runs 2-4), the commit (step 5), and
the callbacks they make, each validated, with errors naming the step and
key (docs/semantics.md, "One activation of one key").
"""

from __future__ import annotations

import warnings
from pickle import dumps as _dumps
from pickle import loads as _loads
from typing import Any, Callable, List, Optional, Sequence, Tuple

from .. import recovery
from ..clock import Clock
from ..errors import (NO_VALUE, BuilderError, CallbackError, InputError, LogicError,
                      LostStateWarning, NotifyAtError, ReturnValueError, outside_stacklevel)
from ..expiry import TtlLogic
from ..limits import Limited
from ..logic import ItemLogic, Logic, forward_deadline
from ..step_fields import check_deadlines, logic_has_deadlines
from ..timers import from_epoch_ms, is_due, require_aware, timer_ms
from .order import Order
from .results import EventTimes
from .stages import Staged

# The codec's common case, inlined by the restore and commit steps (recovery.decode/encode).
_HEADER, _HEADER_SIZE, _COPY_LIMIT, _PROTOCOL = (recovery.PLAIN_HEADER, recovery.HEADER_SIZE,
                                                 recovery.COPY_LIMIT, recovery.PROTOCOL)
_MISSING = object()


# The steps' results are plain tuples, unpacked by name where they are read:
# named tuples for ``_run``'s and the general route's results (built with
# ``tuple.__new__`` of the subclass) cost ~12% of a general activation
# (10k keys, old and new in one process).
Run = Tuple[Optional[Logic], List[Any], int, int, bool, int]
"""What ``Steps._run`` (steps 2-4) gives: ``(logic, emits, late, fired,
touched, deadlines_fired)``: the live logic after the steps (None: discarded
or none), the emits, the rows dropped as late, the timers fired (both
kinds), whether a callback ran (else the stored bytes are exact) and, of
``fired``, the processing deadlines."""
Commit = Tuple[Optional[bytes], Optional[int], Any, Optional[int], Optional[int]]
"""What ``Steps._commit`` gives: ``(state, timer, snapshot, armed, deadline)``."""
_NO_STATE: Commit = (None, None, None, None, None)


class Steps(Order):
    """The activation steps and callbacks (a ``Driver`` base)."""

    builder: Callable[[Any], Logic]
    batch: bool
    two_clocks: Optional[bool]  # None: a builder function, learnt from its first logic
    lost_state: List[str]
    _tag: Optional[Callable[[Any], Any]]
    _entry: str
    _clock: Optional[Clock]
    _keyed: bool = False  # the step's builder is a chain (``chain.Chain.wants_key``)
    _chain: Optional[Staged] = None  # that chain (its stages' counts)

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
        except LogicError:  # a chain's stage: it names its own step and key
            raise
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
            except LogicError:  # a chain's stage: it names its own step and key
                raise
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
            except LogicError:  # a chain's stage: it names its own step and key
                raise
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
        except LogicError:  # a chain's stage: it names its own step and key
            raise
        except Exception as error:
            raise self._notify_at_raised(key, error) from error
        timer = armed = None
        if moment is not None:
            timer = self._timer_ms(key, moment)
            if now_ms is not None:
                armed = self.time.armed_timeout(timer, now_ms)
        return (state, timer, snapshot, armed,
                self._next_deadline(key, logic) if self.two_clocks else None)

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
        except LogicError:  # a chain's stage: it names its own step and key
            raise
        except Exception as error:
            raise self._builder_raised(key, snapshot, error) from error
        if self._keyed:  # a chain's logic: its stages' errors name the key
            inner: Any = logic
            while getattr(type(inner), "forwards_deadlines", False):  # ttl, state limit
                inner = inner.inner
            inner.key = key
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

    def snapshot(self, key: Any, logic: Logic) -> Any:
        """``logic.snapshot()``, with errors naming the step and key."""
        try:
            return logic.snapshot()
        except LogicError:  # a chain's stage: it names its own step and key
            raise
        except Exception as error:
            raise self._snapshot_raised(key, error) from error

    def _snapshot_raised(self, key: Any, error: Exception) -> CallbackError:
        return CallbackError(self.step_id, key, "snapshot", NO_VALUE,
                             f"snapshot() raised {error!r}")

    def _next_timer(self, key: Any, logic: Logic) -> Optional[int]:
        """``notify_at()`` as epoch ms (rounded up), validated."""
        try:
            moment = logic.notify_at()
        except LogicError:  # a chain's stage: it names its own step and key
            raise
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

    # -- callbacks ------------------------------------------------------------

    def _call(self, key: Any, logic: Logic, name: str, emits: List[Any], *args: Any) -> bool:
        """Call ``logic.<name>(*args)``, validate, extend emits; True if discarded."""
        try:
            result = getattr(logic, name)(*args)
        except LogicError:  # a chain's stage: it names its own step and key
            raise
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

