"""Fraud rule with both timer kinds: an event-time window per card, and an
idle alarm on the wall clock that fires even when the source stalls.

Per card: the spend of each 10-minute event-time window is checked when the
watermark closes the window (``notify_at``: a "burst" when it is over
LIMIT); and a card silent for IDLE of processing time after a burst
raises "idle-after-burst" (``processing_notify_at``), the classic pattern of
a stolen card tested, then put aside. No data, no watermark: only the
processing-time deadline can fire then.

    python examples/fraud_alarm.py            # offline, in-process
    python examples/fraud_alarm.py --spark    # a streaming query on local Spark
"""

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

import sparkwax as sw
from sparkwax.testing import Batch, Tick, run

WINDOW = timedelta(minutes=10)
LIMIT = 1000
IDLE = timedelta(seconds=2)


class CardRule(sw.StatefulLogic):
    """Snapshot: ``(window_end, spent, alarm_at)``."""

    def __init__(self, resume=None):
        self.window_end, self.spent, self.alarm_at = resume or (None, 0, None)

    def on_item(self, tx):
        if self.window_end is None:
            self.window_end = tx["ts"] + WINDOW
        self.spent += tx["amount"]
        self.alarm_at = None          # the card is in use: no idle alarm pending
        return [], sw.RETAIN

    def notify_at(self):              # event time: the watermark closes the window
        return self.window_end

    def on_notify(self):
        out = []
        if self.spent > LIMIT:
            out.append(("burst", self.spent))
            arrived = sw.processing_now()   # None on bounded input: no alarm there
            self.alarm_at = None if arrived is None else arrived + IDLE
        self.window_end, self.spent = None, 0
        return out, sw.RETAIN

    def processing_notify_at(self):   # processing time: the wall clock
        return self.alarm_at

    def on_processing_notify(self):
        return [("idle-after-burst", 0)], sw.DISCARD

    def snapshot(self):
        return (self.window_end, self.spent, self.alarm_at)


T0 = datetime(2024, 1, 1, 12, tzinfo=timezone.utc)
TXS = [
    [("card-1", {"ts": T0, "amount": 900}), ("card-1", {"ts": T0 + timedelta(minutes=4),
                                                         "amount": 400}),
     ("card-2", {"ts": T0, "amount": 30})],
    [("card-2", {"ts": T0 + timedelta(minutes=11), "amount": 20})],
]


def offline():
    script = [Batch(TXS[0], now=T0), Batch(TXS[1], now=T0),
              Tick(now=T0),                             # the watermark (12:11) closes windows
              Tick(now=T0 + timedelta(minutes=1))]      # the source stalled: wall clock only
    return run(CardRule, script, time=sw.EventTime("ts")).by_key


def on_spark(spark):
    work = tempfile.mkdtemp(prefix="fraud-alarm-")
    source = os.path.join(work, "in")
    os.makedirs(source)
    rows = []
    stream = spark.readStream.schema("card string, ts timestamp, amount long").json(source)
    alerts = sw.stateful(stream, key="card", builder=CardRule, time=sw.EventTime("ts"),
                         output_schema="alert string, amount long")
    query = sw.start(alerts, checkpoint=os.path.join(work, "checkpoint"),
                     foreach_batch=lambda frame, _: rows.extend(frame.collect()),
                     trigger={"processingTime": "500 milliseconds"}, stop_on_signal=False)
    try:
        for number, batch in enumerate(TXS):
            with open(os.path.join(source, f"{number}.json"), "w") as handle:
                for card, tx in batch:
                    handle.write(json.dumps({"card": card, **tx}, default=str) + "\n")
            time.sleep(2)
        give_up = time.monotonic() + 120   # the source has stalled; wait for the alarm
        while not any(r.alert == "idle-after-burst" for r in rows) \
                and time.monotonic() < give_up:
            time.sleep(0.5)
    finally:
        query.stop()
    by_key = {}
    for r in rows:
        by_key.setdefault(r.card, []).append((r.alert, r.amount))
    return by_key


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spark", action="store_true")
    args = parser.parse_args(argv)
    if args.spark:
        spark = sw.local_session("local[2]", shuffle_partitions=2)
        try:
            result = on_spark(spark)
        finally:
            spark.stop()
    else:
        result = offline()
    for card, alerts in sorted(result.items()):
        print(card, alerts)
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
