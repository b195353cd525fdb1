"""A two-step event-time dataflow whose steps share Spark's one query
watermark (docs/semantics.md, "Re-keyed steps in one query"): sessions per
user (``Sessions``, event-time gap), re-keyed by country into hourly windows
of session starts (``Hourly``). Each row carries the ``now`` its step saw, so
a comparison covers the watermark mid-stream, not only what closes. Used
offline (tests/unit/testing/test_flow_watermark.py) and on Spark
(tests/spark/planning/test_flow_watermark_spark.py). Never imports pyspark.
"""

from __future__ import annotations

from datetime import timedelta

import sparkwax as sw
from sparkwax.testing import Batch, Crash

from kit import at

INPUT = "user string, country string, ts timestamp"
GAP = timedelta(minutes=10)


class Sessions(sw.StatefulLogic):
    """A user's session: its start goes out at once (``kind`` "start"), its
    end when the watermark passes the last event plus ``GAP`` ("end", at the
    last event's time: behind the query's watermark when it arrives)."""

    def __init__(self, resume=None):
        self.country, self.start, self.last = resume or (None, None, None)

    def on_item(self, event):
        emits = []
        if self.start is None:
            self.country, self.start = event["country"], event["ts"]
            emits.append(self._row("start", self.start))
        self.last = event["ts"] if self.last is None else max(self.last, event["ts"])
        return emits, sw.RETAIN

    def notify_at(self):
        return self.last + GAP

    def on_notify(self):
        return [self._row("end", self.last)], sw.DISCARD

    def snapshot(self):
        return (self.country, self.start, self.last)

    def _row(self, kind, ts):
        return {"country": self.country, "kind": kind, "ts": ts, "seen_at": sw.now()}


class Hourly(sw.StatefulLogic):
    """Session starts per country and hour, each hour emitted when the
    watermark passes its end, with the ``now`` of both steps."""

    def __init__(self, resume=None):
        self.hours = dict(resume or ())

    def on_item(self, row):
        hour = row["ts"].replace(minute=0, second=0, microsecond=0)
        starts, _ = self.hours.get(hour, (0, None))
        self.hours[hour] = (starts + (row["kind"] == "start"), row["seen_at"])
        return [], sw.RETAIN

    def notify_at(self):
        return min(self.hours) + timedelta(hours=1) if self.hours else None

    def on_notify(self):
        hour = min(self.hours)
        starts, seen_at = self.hours.pop(hour)
        out = {"hour": hour, "starts": starts, "seen_at": seen_at, "closed_at": sw.now()}
        return [out], sw.RETAIN if self.hours else sw.DISCARD

    def snapshot(self):
        return sorted(self.hours.items())


SESSIONS = sw.Step.of(Sessions, step_id="sessions",
                      time=sw.EventTime("ts", watermark="30 minutes"),
                      output_schema="country string, kind string, ts timestamp, "
                                    "seen_at timestamp")
HOURLY = sw.Step.of(Hourly, step_id="hourly", time=sw.EventTime("ts", watermark="0 seconds"),
                    output_schema="hour timestamp, starts long, seen_at timestamp, "
                                  "closed_at timestamp")


def by_country(user, row):
    """The DataFrame code between the steps: ``select`` with country as key."""
    return row["country"], {"kind": row["kind"], "ts": row["ts"], "seen_at": row["seen_at"]}


def visit(user, country, minutes):
    return (user, {"country": country, "ts": at(minutes)})


# Batch 3, after the restart, starts no session: the hourly step's input has no
# rows, so the query's watermark stays where it was (a restart forgets each
# input's max); the last batch's hours close only in the no-data batches after it.
SCRIPT = [
    Batch([visit("u1", "de", 0), visit("u2", "fr", 1)]),
    Batch([visit("u1", "de", 3), visit("u3", "de", 20)]),
    Batch([visit("u2", "fr", 50), visit("u4", "fr", 70)]),
    Crash(),
    Batch([visit("u4", "fr", 95), visit("u4", "fr", 100)]),
    Batch([visit("u5", "de", 130), visit("u1", "de", 131)]),
    Batch([visit("u6", "fr", 250), visit("u7", "de", 262)]),
]
