"""The activation clock: which ``now`` a key's callbacks run at.

The driver sets it for the span of each activation (a context variable, so
threads and nested runs do not see each other's) and resets it after;
outside an activation there is none.

>>> from sparkwax.clock import Clock, current_clock, running_at
>>> current_clock() is None, now() is None
(True, True)
>>> with running_at(Clock(60_000, "event")):
...     current_clock().now.isoformat(), current_clock().is_watermark
('1970-01-01T00:01:00+00:00', True)
>>> current_clock() is None
True

The driver, which sets a clock for every activation, uses the token form
(``set_clock``/``reset_clock``: no generator per activation):

>>> token = set_clock(Clock(0, "processing"))
>>> current_clock().is_watermark
False
>>> reset_clock(token)
>>> current_clock() is None
True
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Iterator, Optional

from .timers import EventTime, from_epoch_ms


@dataclass(frozen=True)
class Clock:
    """``now_ms`` (epoch ms) of one activation; ``kind`` is the time mode's
    (``EventTime.kind``, "event": ``now`` is the watermark, or
    ``ProcessingTime.kind``, "processing": the micro-batch's processing time).
    ``processing_ms``: the processing time of an EventTime step with both
    timer kinds (None: none)."""

    now_ms: int
    kind: str
    processing_ms: Optional[int] = None

    @property
    def now(self) -> datetime:
        """``now_ms`` as an aware UTC datetime."""
        return from_epoch_ms(self.now_ms)

    @property
    def is_watermark(self) -> bool:
        return self.kind == EventTime.kind


_CURRENT: ContextVar[Optional[Clock]] = ContextVar("sparkwax_clock", default=None)

set_clock = _CURRENT.set
"""``set_clock(clock) -> token``: make ``clock`` (or None) current until
``reset_clock(token)``. The context variable's own bound method: the driver
sets a clock per activation with no Python-level call or generator (as
``running_at`` would cost)."""

reset_clock = _CURRENT.reset
"""``reset_clock(token)``: restore the clock that was current before the
``set_clock`` call that returned ``token``."""


def current_clock() -> Optional[Clock]:
    """The running activation's clock; None outside an activation and when
    the host has no clock (bounded input in ProcessingTime mode)."""
    return _CURRENT.get()


def now() -> Optional[datetime]:
    """The current activation's ``now`` (the watermark in EventTime mode, the
    micro-batch's processing time otherwise) as an aware UTC datetime; None
    outside an activation or when the host has no clock (bounded input in
    ProcessingTime mode). Read it in ``on_notify`` to close everything that is
    due at once, e.g. all windows whose close time passed:

    >>> import sparkwax as sw
    >>> from datetime import datetime, timezone
    >>> from sparkwax.testing import Batch, run
    >>> class Clock(sw.StatefulLogic):
    ...     def __init__(self, resume=None): pass
    ...     def on_item(self, value): return [sw.now().isoformat()], sw.DISCARD
    ...     def snapshot(self): return None
    >>> run(Clock, [Batch([("k", 1)], now=datetime(2024, 1, 1, tzinfo=timezone.utc))]).by_key
    {'k': ['2024-01-01T00:00:00+00:00']}
    >>> sw.now() is None
    True
    """
    clock = _CURRENT.get()
    return None if clock is None else clock.now


def processing_now() -> Optional[datetime]:
    """The current activation's processing time (the micro-batch's wall
    clock) as an aware UTC datetime: ``now()`` in a ProcessingTime step; in
    an EventTime step whose logic has processing deadlines
    (``processing_notify_at``), the second clock beside the watermark; None
    otherwise (and on bounded input and at ``finish``, where there is none).
    Read it to set a deadline relative to the arrival of a value:

    >>> import sparkwax as sw
    >>> from datetime import datetime, timezone
    >>> from sparkwax.testing import Batch, run
    >>> t = datetime(2024, 1, 1, 12, tzinfo=timezone.utc)
    >>> class Seen(sw.StatefulLogic):
    ...     def __init__(self, resume=None): pass
    ...     def on_item(self, value): return [sw.processing_now().hour], sw.DISCARD
    ...     def processing_notify_at(self): return None
    ...     def snapshot(self): return None
    >>> run(Seen, [Batch([("k", {"ts": t})], now=t)], time=sw.EventTime("ts")).by_key
    {'k': [12]}
    """
    clock = _CURRENT.get()
    if clock is None:
        return None
    if not clock.is_watermark:
        return clock.now
    return None if clock.processing_ms is None else from_epoch_ms(clock.processing_ms)


@contextmanager
def running_at(clock: Optional[Clock]) -> Iterator[None]:
    """Make ``clock`` current for the block, then restore the previous one."""
    token = _CURRENT.set(clock)
    try:
        yield
    finally:
        _CURRENT.reset(token)


__all__ = ["Clock", "current_clock", "now", "processing_now", "reset_clock", "running_at",
           "set_clock"]
