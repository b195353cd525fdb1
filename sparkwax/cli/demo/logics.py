"""The demo's two per-key logics: web sessions per user, card-testing alerts per card.

Both are plain ``StatefulLogic`` subclasses with plain-data snapshots, so they
run unchanged offline (``sparkwax.testing.run``) and on Spark.

>>> from datetime import datetime, timedelta, timezone
>>> from sparkwax.testing import Batch, Eof, run
>>> t0 = datetime(2024, 3, 1, tzinfo=timezone.utc)
>>> view = lambda minute: {"ts": t0 + timedelta(minutes=minute), "event_type": "page_view",
...                        "amount": None}
>>> [s["events"] for s in run(UserSession, [Batch([("u1", view(0)), ("u1", view(5)),
...                                                 ("u1", view(50))]), Eof()]).by_key["u1"]]
[2, 1]
"""

from __future__ import annotations

import bisect
from datetime import datetime, timedelta
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ...logic import DISCARD, RETAIN, StatefulLogic

SESSION_SCHEMA = ("session_start timestamp, session_end timestamp, events long, "
                  "purchases long, revenue double")
ALERT_SCHEMA = ("rule string, window_start timestamp, detected_at timestamp, "
                "purchases long, amount double")


def to_cents(amount: Optional[float]) -> int:
    """Dollars (float) -> whole cents; None/NaN -> 0."""
    if amount is None or amount != amount:
        return 0
    return int(round(amount * 100))


class UserSession(StatefulLogic[Dict[str, Any], Dict[str, Any], Tuple[Any, ...]]):
    """Web sessions of one user, in event time.

    A session is a run of events with no silence longer than ``gap``. It
    closes when the watermark passes ``last event + gap`` (the timer), when
    an event arrives more than ``gap`` after its last event, or at EOF, and
    emits one row: start, end, events, purchases, revenue. The key is then
    discarded, so idle users hold no state.

    Values are dicts with ``ts`` (aware datetime), ``event_type`` and
    ``amount`` (dollars, for purchases); other fields are ignored. An event
    that arrives out of order but within the open session widens it.
    Revenue is summed in cents, so totals are exact.
    """

    gap = timedelta(minutes=30)

    start: Optional[datetime]
    last: Optional[datetime]

    def __init__(self, resume: Optional[Tuple[Any, ...]] = None) -> None:
        (self.start, self.last, self.events, self.purchases,
         self.cents) = resume or (None, None, 0, 0, 0)

    def on_item(self, event: Dict[str, Any]) -> Tuple[Iterable[Dict[str, Any]], bool]:
        ts = event["ts"]
        emits = []
        if self.last is not None and ts - self.last > self.gap:
            emits.append(self._summary())
            self.start = self.last = None
            self.events = self.purchases = self.cents = 0
        if self.start is None or ts < self.start:
            self.start = ts
        if self.last is None or ts > self.last:
            self.last = ts
        self.events += 1
        if event.get("event_type") == "purchase":
            self.purchases += 1
            self.cents += to_cents(event.get("amount"))
        return emits, RETAIN

    def notify_at(self) -> Optional[datetime]:
        return None if self.last is None else self.last + self.gap

    def on_notify(self) -> Tuple[Iterable[Dict[str, Any]], bool]:
        return [self._summary()], DISCARD

    def on_eof(self) -> Tuple[Iterable[Dict[str, Any]], bool]:
        return [self._summary()], DISCARD

    def snapshot(self) -> Tuple[Any, ...]:
        return (self.start, self.last, self.events, self.purchases, self.cents)

    def _summary(self) -> Dict[str, Any]:
        return {"session_start": self.start, "session_end": self.last, "events": self.events,
                "purchases": self.purchases, "revenue": self.cents / 100}


class CardFraud(StatefulLogic[Dict[str, Any], Dict[str, Any], Tuple[Any, ...]]):
    """Card-testing detection for one card, over its purchases.

    Rules, checked after every purchase (``newest`` = latest purchase time):

    - ``small-amounts``: ``small_count`` (3) or more purchases under
      ``small_cents`` ($2.00) within ``small_window`` (1 minute);
    - ``velocity``: more than ``max_purchases`` (5) purchases within
      ``window`` (2 minutes).

    "Within" means strictly less than the window before ``newest``. The first
    rule that holds emits one alert row and marks the card as in a burst; no
    further alert is emitted until the burst ends. A burst (and all memory of
    the card) ends when the card has been idle for ``window``: the timer at
    ``newest + window`` discards the key, which also forgets old purchases and
    keeps idle cards out of the state store. A purchase that arrives a whole
    ``window`` after the newest one, before the timer could fire (both in one
    micro-batch), starts afresh the same way.

    Values are dicts with ``ts`` (aware datetime) and ``amount`` (dollars).
    """

    window = timedelta(minutes=2)
    max_purchases = 5
    small_window = timedelta(minutes=1)
    small_cents = 200
    small_count = 3

    def __init__(self, resume: Optional[Tuple[Any, ...]] = None) -> None:
        recent, self.alerted = resume or ((), False)
        self.recent: List[Tuple[datetime, int]] = list(recent)  # sorted (ts, cents)

    def on_item(self, purchase: Dict[str, Any]) -> Tuple[Iterable[Dict[str, Any]], bool]:
        ts = purchase["ts"]
        if self.recent and ts >= self.recent[-1][0] + self.window:
            # Idle for a whole window (the timer was not due yet in this
            # micro-batch): the same as on_notify followed by a fresh card.
            self.recent, self.alerted = [], False
        bisect.insort(self.recent, (ts, to_cents(purchase.get("amount"))))
        newest = self.recent[-1][0]
        cutoff = newest - self.window
        if self.recent[0][0] <= cutoff:
            self.recent = [entry for entry in self.recent if entry[0] > cutoff]
        if self.alerted:
            return [], RETAIN
        alert = self._check(newest)
        if alert is None:
            return [], RETAIN
        self.alerted = True
        return [alert], RETAIN

    def _check(self, newest: datetime) -> Optional[Dict[str, Any]]:
        small_cutoff = newest - self.small_window
        small = [e for e in self.recent if e[0] > small_cutoff and e[1] < self.small_cents]
        if len(small) >= self.small_count:
            return self._alert("small-amounts", small, newest)
        if len(self.recent) > self.max_purchases:
            return self._alert("velocity", self.recent, newest)
        return None

    @staticmethod
    def _alert(rule: str, entries: List[Tuple[datetime, int]], newest: datetime
               ) -> Dict[str, Any]:
        return {"rule": rule, "window_start": entries[0][0], "detected_at": newest,
                "purchases": len(entries), "amount": sum(c for _, c in entries) / 100}

    def notify_at(self) -> Optional[datetime]:
        return self.recent[-1][0] + self.window if self.recent else None

    def on_notify(self) -> Tuple[Iterable[Dict[str, Any]], bool]:
        return [], DISCARD

    def on_eof(self) -> Tuple[Iterable[Dict[str, Any]], bool]:
        return [], DISCARD

    def snapshot(self) -> Tuple[Any, ...]:
        return (tuple(self.recent), self.alerted)


__all__ = ["ALERT_SCHEMA", "CardFraud", "SESSION_SCHEMA", "UserSession", "to_cents"]
