"""sw.now(): the activation's clock, as the driver sees it, in every mode."""

from datetime import datetime, timedelta, timezone

import sparkwax as sw
from sparkwax.testing import Batch, Eof, Tick, run, run_bounded

from kit import T0, event as at
from test_driver_steps import TIME, driver


class SeesNow(sw.StatefulLogic):
    """Emits ("item"|"notify"|"eof", sw.now()) and keeps a 1 minute timer."""

    def __init__(self, resume=None):
        self.last = resume

    def on_item(self, value):
        self.last = value["ts"] if isinstance(value, dict) else None
        return [("item", sw.now())], sw.RETAIN

    def notify_at(self):
        return None if self.last is None else self.last + timedelta(minutes=1)

    def on_notify(self):
        self.last = None
        return [("notify", sw.now())], sw.RETAIN

    def on_eof(self):
        return [("eof", sw.now())], sw.DISCARD

    def snapshot(self):
        return self.last


def test_now_is_the_watermark_in_event_time():
    script = [Batch([("k", at(0))]), Batch([("j", at(5))]), Batch([("k", at(6))]), Eof()]
    result = run(SeesNow, script, time=sw.EventTime("ts", watermark="1 minute"))
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    four, five = T0 + timedelta(minutes=4), T0 + timedelta(minutes=5)
    assert result.by_key["k"] == [("item", epoch), ("notify", four), ("item", four),
                                  ("eof", five)]
    assert result.by_key["j"] == [("item", T0 - timedelta(minutes=1)), ("eof", five)]


def test_now_is_the_processing_time_of_the_batch():
    script = [Batch([("k", 1)], now=T0), Tick(now=T0 + timedelta(hours=1))]
    result = run(SeesNow, script)
    assert result.by_key["k"] == [("item", T0)]


def test_now_advances_item_by_item_in_bounded_event_time():
    items = [("k", at(0)), ("k", at(3)), ("k", at(10))]
    result = run_bounded(SeesNow, items, time=sw.EventTime("ts"))
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    assert result.by_key["k"] == [
        ("item", epoch), ("item", T0), ("item", T0 + timedelta(minutes=3)),
        ("eof", T0 + timedelta(minutes=10))]


def test_now_is_none_without_a_clock():
    result = run_bounded(SeesNow, [("k", 1)])
    assert result.by_key["k"] == [("item", None), ("eof", None)]


def test_now_is_the_watermark_or_the_processing_time():
    def watermark():
        return 1

    def processing():
        return 2

    assert driver().now_ms(watermark, processing) == 2
    assert driver(time=TIME).now_ms(watermark, processing) == 1
