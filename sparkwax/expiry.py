"""``with_ttl(builder, ttl)``: drop a key's state after it was idle for ``ttl``.

A wrapper logic around any ``StatefulLogic`` builder: it remembers the
latest time of the key's values (read with ``ts``, or the activation's clock
with ``ts=None``) and, once the watermark (or, in ProcessingTime mode, the
clock) passes that time plus ``ttl``, drops the key's state. With
``flush=True`` the inner logic's ``on_eof`` runs first and its emits go out
(an EOF for that key alone); ``flush=callable`` emits
``callable(inner_snapshot)`` instead. A value that comes ``ttl``
or more after the key's latest one finds the old state expired even when the
watermark has not fired the timer yet. The inner logic's own timers keep
working; its snapshot is stored inside the wrapper's. When the clock passes
the inner logic's timer and the expiry at once, both happen in that
activation: the inner ``on_notify`` first, unless the key expired before its
timer.

>>> from datetime import datetime, timedelta, timezone
>>> import sparkwax as sw
>>> from sparkwax.testing import Batch, Eof, run
>>> from sparkwax.operators import count_final
>>> t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
>>> at = lambda m: {"ts": t0 + timedelta(minutes=m)}
>>> script = [Batch([("a", at(0)), ("b", at(0))]), Batch([("a", at(30))]), Batch([("a", at(61))])]
>>> out = run(with_ttl(count_final(), timedelta(minutes=20), flush=True), script,
...           time=sw.EventTime("ts"))
>>> out.by_key    # a: idle 30 and 31 minutes before its next values; b: by its timer
{'a': [1, 1], 'b': [1]}
>>> out.snapshots  # a's last value, not idle yet
{'a': (1, datetime.datetime(2024, 1, 1, 1, 1, tzinfo=datetime.timezone.utc))}

A step's ``ttl=`` (``sparkwax.stateful``, the offline runners, ``finish``) is
part of its ``sparkwax.step.Step``; the driver wraps the step's builder with
:func:`step_ttl`: idle time is measured on the event-time column in EventTime
mode and on the clock in ProcessingTime mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, List, Optional, Tuple, Union, cast

from .clock import now
from .errors import ConfigError
from .logic import (DISCARD, RETAIN, Builder, ItemLogic, StatefulLogic, forward_deadline,
                    forward_processing_notify)
from .timers import EventTime, TimeMode
from .builders import (Duration, FieldSpec, OperatorBuilder, TimeOf, as_timedelta, later,
                       time_getter)

_NOTHING: Tuple[()] = ()

Flush = Union[bool, Callable[[Any], Any]]

TtlConfig = Tuple[Callable[[Any], Any], timedelta, Optional[TimeOf], Flush]
"""``TtlLogic``'s config: the inner builder, the ttl, how to read a value's
time (None: the activation's clock) and ``flush``."""


class TtlLogic(StatefulLogic):
    """Snapshot: ``(inner_snapshot, last_seen)``."""

    inner: ItemLogic        # the wrapped logic (a StatefulLogic's builder made it)
    last: Optional[datetime]
    forwards_deadlines = True  # processing deadlines are the inner logic's (uses_deadlines)

    @staticmethod
    def wrapped_builder(config: TtlConfig) -> Callable[[Any], Any]:
        """The inner builder of a ``with_ttl`` operator builder's config."""
        return config[0]

    def __init__(self, config: TtlConfig, resume: Any = None) -> None:
        self.builder, self.ttl, self.time_of, self.flush = config
        if resume is None:
            self.inner, self.last = self.builder(None), None
        else:
            inner_snapshot, self.last = resume
            self.inner = self.builder(inner_snapshot)

    def on_item(self, value: Any) -> Tuple[Iterable[Any], bool]:
        ts = self.time_of(value) if self.time_of is not None else now()
        if ts is None:  # measured on the clock, and there is none (bounded input)
            return self.inner.on_item(value)
        flushed: Union[Tuple[()], List[Any]] = _NOTHING
        if self.last is not None and ts >= self.last + self.ttl:
            # Idle for ttl before this value (the watermark had not fired the
            # timer yet): the old state goes first.
            flushed = self._flushed()
            self.inner, self.last = self.builder(None), None
        if self.last is None or ts > self.last:
            self.last = ts
        out, discard = self.inner.on_item(value)
        if flushed:
            out = flushed + list(out)
        return out, discard

    def _flushed(self) -> List[Any]:
        """What the inner logic emits when its key expires."""
        if self.flush is True:
            out, _ = self.inner.on_eof()
            return list(out)
        if self.flush:
            return list(self.flush(self.inner.snapshot()))
        return []

    def _expiry(self) -> Optional[datetime]:
        return None if self.last is None else self.last + self.ttl

    def notify_at(self) -> Optional[datetime]:
        inner, expiry = self.inner.notify_at(), self._expiry()
        if inner is None:
            return expiry
        if expiry is None or inner < expiry:
            return inner
        return expiry

    def on_notify(self) -> Tuple[Iterable[Any], bool]:
        inner, expiry = self.inner.notify_at(), self._expiry()
        # Everything due by the activation's clock (without one: the timer's
        # time): the inner timer first, unless the key expired before it.
        # Compared only when inner or expiry is set: notify_at() is then too.
        reached = cast(datetime, later(self.notify_at(), now()))
        emits: List[Any] = []
        if inner is not None and inner <= reached and (expiry is None or inner <= expiry):
            out, discard = self.inner.on_notify()
            emits.extend(out)
            if discard:
                return emits, DISCARD
        if expiry is not None and expiry <= reached:
            emits.extend(self._flushed())
            return emits, DISCARD
        return emits, RETAIN

    def on_eof(self) -> Tuple[Iterable[Any], bool]:
        return self.inner.on_eof()

    def processing_notify_at(self) -> Optional[datetime]:
        return forward_deadline(self.inner)

    def on_processing_notify(self) -> Tuple[Iterable[Any], bool]:
        return forward_processing_notify(self.inner)

    def snapshot(self) -> Tuple[Any, Optional[datetime]]:
        return (self.inner.snapshot(), self.last)


def with_ttl(builder: Builder, ttl: Duration, *, ts: FieldSpec = "ts",
             flush: Flush = False) -> OperatorBuilder:
    """Wrap ``builder``'s logic so a key idle for ``ttl`` (no value with a
    later ``ts``) has its state dropped. ``flush=True`` emits what the inner
    logic's ``on_eof()`` emits first; ``flush=fn`` emits
    ``fn(inner_snapshot)`` (an iterable of values) instead. ``ts=None``
    measures idle time on the activation's clock (``sparkwax.now()``) rather
    than on a field of the values: meant for ProcessingTime mode (in
    EventTime mode the clock is the watermark, which starts at the epoch).
    Works for any ``StatefulLogic`` (not ``StatefulBatchLogic``)."""
    if not callable(builder):
        raise ConfigError(f"with_ttl needs a builder, got {builder!r}")
    if not (isinstance(flush, bool) or callable(flush)):
        raise ConfigError(f"with_ttl: flush must be a bool or a callable taking the inner "
                          f"logic's snapshot, got {flush!r}")
    name = getattr(builder, "__qualname__", None) or type(builder).__name__
    return OperatorBuilder(f"with_ttl({name})", TtlLogic,
                           (builder, as_timedelta(ttl, "ttl"),
                            None if ts is None else time_getter(ts), flush))


# -- step-level ttl: sparkwax.stateful(..., ttl=...) and the offline runners ----------

STEP_TIME = "<the step's time>"


@dataclass(frozen=True)
class Ttl:
    """A step's ``ttl=`` with options: ``Ttl("30 minutes", flush=True)``.

    ``after``: how long a key may stay idle. ``flush``: as for
    :func:`with_ttl`. ``ts``: what "idle" is measured on; by default the
    step's event-time column in EventTime mode and the clock (``ts=None``) in
    ProcessingTime mode; a field name or a callable to read it from the values.
    """

    after: Duration
    flush: Flush = False
    ts: FieldSpec = STEP_TIME


def step_ttl(builder: Callable[[Any], Any], spec: Ttl, time: TimeMode) -> OperatorBuilder:
    """``builder`` wrapped for a step's ``ttl=`` (``sparkwax.step.Step``
    validated it): idle time on the event-time column in EventTime mode, on
    the clock in ProcessingTime mode, unless ``spec.ts`` names what to read."""
    ts = spec.ts
    if ts is STEP_TIME or (isinstance(ts, str) and ts == STEP_TIME):
        ts = time.column if isinstance(time, EventTime) else None
    return with_ttl(builder, spec.after, ts=ts, flush=spec.flush)
