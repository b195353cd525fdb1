"""Reference logics, importable by tests, docs and Spark workers.

>>> from sparkwax.testing import Batch, run
>>> run(Counter, [Batch([("k", "a"), ("k", "b")])]).by_key
{'k': [1, 2]}
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..clock import processing_now as now_processing
from ..logic import DISCARD, RETAIN, StatefulBatchLogic, StatefulLogic

_Emits = Tuple[Iterable[Any], bool]


class Counter(StatefulLogic[Any, int, int]):
    """Emits the running count of values per key; never discards."""

    def __init__(self, resume: Optional[int] = None) -> None:
        self.count = resume or 0

    def on_item(self, value: Any) -> Tuple[Iterable[int], bool]:
        self.count += 1
        return [self.count], RETAIN

    def snapshot(self) -> int:
        return self.count


class BatchCounter(StatefulBatchLogic[Any, int, int]):
    """Emits the running count once per activation."""

    def __init__(self, resume: Optional[int] = None) -> None:
        self.count = resume or 0

    def on_batch(self, values: List[Any]) -> Tuple[Iterable[int], bool]:
        self.count += len(values)
        return [self.count], RETAIN

    def snapshot(self) -> int:
        return self.count


class TransitionRecorder(StatefulLogic[Dict[str, Any], Tuple[Any, ...], Dict[str, Any]]):
    """Records every callback, driven by commands in the values.

    A value is a dict; ``value["emit"]`` (default: the value's ``"id"``) is
    emitted as ``("item", id, generation)``; ``value.get("discard")`` returns
    DISCARD; ``value.get("notify")`` (an aware datetime, or None to cancel)
    sets the timer; ``notify_discard`` / ``eof_discard`` in a value decide what
    the next on_notify / on_eof return. ``generation`` is 1 for a logic built
    from scratch (``builder(None)``) and is carried through snapshots;
    ``restores`` counts restores since then.
    """

    def __init__(self, resume: Optional[Dict[str, Any]] = None) -> None:
        state = dict(resume) if resume else {}
        self.generation = state.get("generation", 0) + (0 if resume else 1)
        self.seen: List[Any] = list(state.get("seen", []))
        self.notify: Optional[datetime] = state.get("notify")
        self.notify_discard = state.get("notify_discard", False)
        self.eof_discard = state.get("eof_discard", False)
        self.restores = state.get("restores", -1) + 1

    def on_item(self, value: Any) -> _Emits:
        ident = value.get("id")
        self.seen.append(ident)
        if "notify" in value:
            self.notify = value["notify"]
        self.notify_discard = value.get("notify_discard", self.notify_discard)
        self.eof_discard = value.get("eof_discard", self.eof_discard)
        return [("item", ident, self.generation)], bool(value.get("discard", False))

    def on_notify(self) -> _Emits:
        fired, self.notify = self.notify, None
        return [("notify", fired, self.generation)], self.notify_discard

    def on_eof(self) -> _Emits:
        return [("eof", tuple(self.seen), self.generation)], self.eof_discard

    def notify_at(self) -> Optional[datetime]:
        return self.notify

    def snapshot(self) -> Any:
        return {"generation": self.generation, "seen": list(self.seen), "notify": self.notify,
                "notify_discard": self.notify_discard, "eof_discard": self.eof_discard,
                "restores": self.restores}


class SessionTracker(StatefulLogic):
    """Event-time sessions: values are dicts with a ``ts`` (aware datetime);
    a session closes ``gap`` after its last event (timer) or at EOF and emits
    ``{"start", "end", "events"}``, then discards the key."""

    gap = timedelta(minutes=30)

    def __init__(self, resume: Optional[Tuple[datetime, datetime, int]] = None) -> None:
        self.start: Optional[datetime]
        self.last: Optional[datetime]
        self.start, self.last, self.events = resume or (None, None, 0)

    def on_item(self, value: Any) -> _Emits:
        ts = value["ts"]
        if self.last is not None and ts - self.last > self.gap:
            closed = self._summary()
            self.start, self.last, self.events = ts, ts, 1
            return [closed], RETAIN
        self.start = self.start or ts
        self.last = max(self.last, ts) if self.last else ts
        self.events += 1
        return [], RETAIN

    def notify_at(self) -> Optional[datetime]:
        return None if self.last is None else self.last + self.gap

    def on_notify(self) -> _Emits:
        return [self._summary()], DISCARD

    def on_eof(self) -> _Emits:
        return [self._summary()], DISCARD

    def snapshot(self) -> Any:
        return (self.start, self.last, self.events)

    def _summary(self) -> Dict[str, Any]:
        return {"start": self.start, "end": self.last, "events": self.events}


class Accumulator(StatefulLogic):
    """A logic that walks every path: values are ``{"ts", "value"}`` dicts.

    on_item emits ``("item", value, total)``, arms a timer at the latest event
    time plus ``value % 5`` minutes (cancelled when ``value % 5 == 4``) and
    discards when ``value % 11 == 0``; on_notify emits ``("notify", total, n)``
    and discards when the total is even; on_eof emits ``("eof", total, n)``.
    """

    latest: Optional[datetime]
    timer: Optional[datetime]

    def __init__(self, resume: Optional[Tuple[int, int, Optional[datetime], Optional[datetime]]]
                 = None) -> None:
        self.total: int
        self.count: int
        self.total, self.count, self.latest, self.timer = resume or (0, 0, None, None)

    def on_item(self, value: Any) -> _Emits:
        number, ts = value["value"], value["ts"]
        self.total += number
        self.count += 1
        self.latest = ts if self.latest is None or ts > self.latest else self.latest
        if number % 5 == 4:
            self.timer = None
        else:
            self.timer = self.latest + timedelta(minutes=number % 5)
        return [("item", number, self.total)], number % 11 == 0

    def notify_at(self) -> Optional[datetime]:
        return self.timer

    def on_notify(self) -> _Emits:
        self.timer = None
        return [("notify", self.total, self.count)], self.total % 2 == 0

    def on_eof(self) -> _Emits:
        return [("eof", self.total, self.count)], RETAIN

    def snapshot(self) -> Any:
        return (self.total, self.count, self.latest, self.timer)


class IdleAlarm(StatefulLogic):
    """Both timer kinds in one logic (an ``EventTime`` step): counts a key's
    values in event-time windows of ``WINDOW`` from the first value's time
    (closed by ``notify_at``: emits ``("window", count)``) and raises
    ``("idle", total)`` once no value has come for ``value["idle_ms"]`` of
    processing time (``processing_notify_at``; a value without ``idle_ms``
    or with None cancels the alarm). A value with ``"alarm_discard": True``
    makes that alarm DISCARD the key; ``on_eof`` emits ``("eof", total)``.
    Emits never depend on when the wall
    clock fired, so Spark's and the offline runner's outputs compare.

    >>> import sparkwax as sw
    >>> from datetime import datetime, timedelta, timezone
    >>> from sparkwax.testing import Batch, Tick, run
    >>> t = datetime(2024, 1, 1, tzinfo=timezone.utc)
    >>> script = [Batch([("card", {"ts": t, "idle_ms": 60_000})], now=t),
    ...           Tick(now=t + timedelta(minutes=5))]       # the source stalls: no watermark
    >>> run(IdleAlarm, script, time=sw.EventTime("ts")).by_key
    {'card': [('idle', 1)]}
    """

    WINDOW = timedelta(minutes=10)

    count: int
    total: int
    window_end: Optional[datetime]
    deadline: Optional[datetime]
    discard: bool

    def __init__(self, resume: Optional[Tuple[int, int, Optional[datetime], Optional[datetime],
                                              bool]] = None) -> None:
        self.count, self.total, self.window_end, self.deadline, self.discard = (
            resume or (0, 0, None, None, False))

    def on_item(self, value: Any) -> _Emits:
        if self.window_end is None:
            self.window_end = value["ts"] + self.WINDOW
        self.count += 1
        self.total += 1
        idle = value.get("idle_ms")
        processing = now_processing()
        if idle is None or idle != idle or processing is None:  # None, NaN, or no clock
            self.deadline = None
        else:
            self.deadline = processing + timedelta(milliseconds=int(idle))
        self.discard = bool(value.get("alarm_discard"))
        return [], RETAIN

    def notify_at(self) -> Optional[datetime]:
        return self.window_end

    def on_notify(self) -> _Emits:
        out = [("window", self.count)]
        self.count, self.window_end = 0, None
        return out, RETAIN

    def processing_notify_at(self) -> Optional[datetime]:
        return self.deadline

    def on_processing_notify(self) -> _Emits:
        self.deadline = None
        return [("idle", self.total)], DISCARD if self.discard else RETAIN

    def on_eof(self) -> _Emits:
        return [("eof", self.total)], RETAIN

    def snapshot(self) -> Any:
        return (self.count, self.total, self.window_end, self.deadline, self.discard)
