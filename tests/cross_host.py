"""Cases every host must run the same way (issue 15: one semantics in one place).

Each case is a logic, one micro-batch of ``(key, value)`` items, the step
options and the outputs per key every host must give:
tests/unit/test_cross_host.py runs them offline (restore "always" and
"on_crash", and bounded), tests/spark/test_cross_host_spark.py on Spark
(per-key and packed hosts, streaming and bounded).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List, Optional

import sparkwax as sw

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
INPUT = "key string, ts timestamp, seq long, tag string"


class Tags(sw.StatefulLogic):
    """Emits each value's tag, in the order the host hands the values."""

    def __init__(self, resume=None):
        pass

    def on_item(self, value):
        return [value["tag"]], sw.RETAIN

    def snapshot(self):
        return None


def row(key: str, tag: str, seq: Optional[int] = 0, minute: Optional[int] = 0):
    ts = None if minute is None else T0 + timedelta(minutes=minute)
    return (key, {"ts": ts, "seq": seq, "tag": tag})


@dataclass
class Case:
    name: str
    items: List[tuple]
    expected: Dict[str, List[Any]]
    options: Dict[str, Any] = field(default_factory=dict)
    late: int = 0


CASES = [
    # order_by: nulls first, then ascending (unique values: Spark's shuffle has no
    # arrival order to keep stable)
    Case("order_by_nulls_first",
         [row("a", "three", 3), row("a", "null", None), row("a", "one", 1), row("b", "two", 2),
          row("b", "zero", 0)],
         {"a": ["null", "one", "three"], "b": ["zero", "two"]},
         {"order_by": "seq"}),
    # EventTime without order_by: event-time order; a null event time is late
    Case("event_time_order_and_null_event_time",
         [row("a", "at5", minute=5), row("a", "no-time", minute=None), row("a", "at1", minute=1),
          row("b", "at2", minute=2)],
         {"a": ["at1", "at5"], "b": ["at2"]},
         {"time": sw.EventTime("ts", watermark="10 minutes")}, late=1),
    # order_by beats the event time
    Case("order_by_over_event_time",
         [row("a", "second", 2, minute=1), row("a", "first", 1, minute=5)],
         {"a": ["first", "second"]},
         {"time": sw.EventTime("ts", watermark="10 minutes"), "order_by": "seq"}),
]


# --- the checks every host runs from the Step (issue 20's drift bugs) ---

BAD_TIMES = ["event", sw.EventTime, 5]   # not a time mode: a ConfigError on every entry point


class LockedAtEof(sw.StatefulLogic):
    """Counts and emits the count at EOF, then discards; its snapshot cannot be
    pickled, so the first commit a stream makes fails: bounded mode must fail
    too (it commits nothing when a key discards at EOF)."""

    def __init__(self, resume=None):
        self.n = 0

    def on_item(self, value):
        self.n += 1
        return [], sw.RETAIN

    def on_eof(self):
        return [self.n], sw.DISCARD

    def snapshot(self):
        return threading.Lock()


def builder_holding_a_lock():
    """A builder Spark cannot ship (its closure holds a lock)."""
    lock = threading.Lock()

    def build(resume=None):
        assert lock is not None
        return Tags(resume)
    return build


class TimerOutsideSnapshot(sw.StatefulLogic):
    """Keeps its next timer outside snapshot(): a rebuilt logic has another
    notify_at() than the one that committed (a LostStateWarning)."""

    def __init__(self, resume=None):
        self.count = resume or 0
        self.deadline = None

    def on_item(self, value):
        self.count += 1
        self.deadline = value["ts"] + timedelta(hours=1)
        return [], sw.RETAIN

    def notify_at(self):
        return self.deadline

    def on_eof(self):
        return [self.count], sw.DISCARD

    def snapshot(self):
        return self.count


class Counted(sw.StatefulLogic):
    """Counts a key's values (a small retained state for the state tools)."""

    def __init__(self, resume=None):
        self.n = resume or 0

    def on_item(self, value):
        self.n += 1
        return [self.n], sw.RETAIN

    def snapshot(self):
        return self.n
