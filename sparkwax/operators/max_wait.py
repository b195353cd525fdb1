"""``with_max_wait(builder, max_wait)``: flush a key when its source stalls.

In an ``EventTime`` step a key's windows close when the watermark passes
them, and the watermark only moves with data: when the source stalls, an open
session waits forever. ``with_max_wait`` wraps any ``StatefulLogic``
(a window operator, a session) and adds a processing-time deadline
(``processing_notify_at``): once no value has reached the key for
``max_wait`` of processing time (wall clock on Spark), the inner logic's
``on_eof()`` runs (a window operator emits its open windows) and its emits go
out; the key is then dropped (DISCARD), so a later value starts afresh.
The inner logic's event-time timers keep working; while values keep coming
nothing changes. On bounded input and at ``finish`` there is no processing
clock: ``on_eof`` runs there anyway. See docs/semantics.md, "Both timer
kinds".

>>> from datetime import datetime, timedelta, timezone
>>> import sparkwax as sw
>>> from sparkwax.operators import SessionWindower, count_window
>>> from sparkwax.testing import Batch, Tick, run
>>> t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
>>> sessions = count_window(SessionWindower(gap=timedelta(minutes=30)))
>>> script = [Batch([("u", {"ts": t0}), ("u", {"ts": t0 + timedelta(minutes=5)})], now=t0),
...           Tick(now=t0 + timedelta(hours=1))]      # the source stalled for an hour
>>> [w.value for w in run(with_max_wait(sessions, "1 hour"), script,
...                        time=sw.EventTime("ts")).by_key["u"]]
[2]
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Iterable, List, Optional, Tuple, cast

from ..clock import processing_now
from ..errors import ConfigError
from ..logic import DISCARD, Builder, ItemLogic, StatefulLogic
from ..builders import Duration, OperatorBuilder, as_timedelta

MaxWaitConfig = Tuple[Builder, timedelta]


class MaxWaitLogic(StatefulLogic):
    """Snapshot: ``(inner_snapshot, deadline)``; ``deadline`` is the last
    value's processing time plus ``max_wait`` (None: no processing clock)."""

    inner: ItemLogic

    def __init__(self, config: MaxWaitConfig, resume: Any = None) -> None:
        self.builder, self.max_wait = config
        self.deadline: Optional[datetime]
        inner_snapshot, self.deadline = (None, None) if resume is None else resume
        self.inner = cast(ItemLogic, self.builder(inner_snapshot))

    def on_item(self, value: Any) -> Tuple[Iterable[Any], bool]:
        arrived = processing_now()
        self.deadline = None if arrived is None else arrived + self.max_wait
        return self.inner.on_item(value)

    def notify_at(self) -> Optional[datetime]:
        return self.inner.notify_at()

    def on_notify(self) -> Tuple[Iterable[Any], bool]:
        return self.inner.on_notify()

    def processing_notify_at(self) -> Optional[datetime]:
        return self.deadline

    def on_processing_notify(self) -> Tuple[Iterable[Any], bool]:
        out: List[Any] = list(self.inner.on_eof()[0])
        return out, DISCARD

    def on_eof(self) -> Tuple[Iterable[Any], bool]:
        return self.inner.on_eof()

    def snapshot(self) -> Tuple[Any, Optional[datetime]]:
        return (self.inner.snapshot(), self.deadline)


def with_max_wait(builder: Builder, max_wait: Duration) -> OperatorBuilder:
    """Wrap ``builder``'s logic so a key that received no value for
    ``max_wait`` of processing time is flushed (its ``on_eof`` emits) and
    dropped. Needs an ``EventTime`` step (the watermark stays the step's
    clock; the processing time is the second one)."""
    if not callable(builder):
        raise ConfigError(f"with_max_wait needs a builder, got {builder!r}")
    wait = as_timedelta(max_wait, "max_wait")
    if wait <= timedelta(0):
        raise ConfigError(f"max_wait must be positive, got {max_wait!r}")
    name = getattr(builder, "__qualname__", None) or type(builder).__name__
    return OperatorBuilder(f"with_max_wait({name})", MaxWaitLogic, (builder, wait))


__all__ = ["MaxWaitLogic", "with_max_wait"]
