"""Time modes, duration parsing, epoch-ms conversions and the host timeout rules."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone, tzinfo

import pytest

from sparkwax import ConfigError, EventTime, ProcessingTime
from sparkwax.timers import (EPOCH, UTC, duration_ms, event_timeout_ms,
                             from_epoch_ms, is_due, processing_timeout_duration_ms,
                             require_aware, timeout_fired, timer_ms, to_epoch_ms, to_epoch_us)

from kit import MS, US


# --- durations -----------------------------------------------------------------------


@pytest.mark.parametrize("text, ms", [
    ("10 minutes", 600_000),
    ("1 minute", 60_000),
    ("1 hour 30 minutes", 5_400_000),
    ("500 milliseconds", 500),
    ("1 millisecond", 1),
    ("0 seconds", 0),
    ("2 seconds", 2_000),
    ("1.5 seconds", 1_500),
    ("3 days", 259_200_000),
    ("1 week", 604_800_000),
    ("2 hours", 7_200_000),
    ("  10 Minutes  ", 600_000),
    ("interval 10 minutes", 600_000),
    ("1h30m", 5_400_000),
    ("10 mins", 600_000),
    ("2 secs", 2_000),
    ("1 day 1 second", 86_401_000),
])
def test_duration_strings(text, ms):
    assert duration_ms(text) == ms


@pytest.mark.parametrize("text, ms", [("500 ms", 500), ("5 ms", 5), ("1 ms", 1)])
def test_duration_ms_abbreviation(text, ms):
    assert duration_ms(text) == ms


def test_event_time_watermark_in_ms_abbreviation():
    assert EventTime("ts", watermark="500 ms").delay_ms == 500


@pytest.mark.parametrize("delta, ms", [
    (timedelta(0), 0), (timedelta(seconds=2), 2_000), (timedelta(minutes=10), 600_000),
    (timedelta(milliseconds=1), 1), (timedelta(days=1, milliseconds=5), 86_400_005),
])
def test_duration_timedelta(delta, ms):
    assert duration_ms(delta) == ms


@pytest.mark.parametrize("bad", [
    "", "   ", "ten minutes", "10", "minutes", "10 parsecs", "-10 minutes", "10 minutes ago",
    "10 minutes and 5 seconds", "0.0001 seconds", "1 month", "10 hrs", "10 minutes 5",
    timedelta(seconds=-1), timedelta(microseconds=500), None, 1.5, [10, "minutes"],
])
def test_bad_durations(bad):
    with pytest.raises(ConfigError):
        duration_ms(bad)


# --- time modes -----------------------------------------------------------------------


def test_event_time():
    mode = EventTime("ts", watermark="10 minutes")
    assert (mode.column, mode.delay_ms, mode.kind) == ("ts", 600_000, "event")
    assert mode.spark_delay == "600000 milliseconds"
    assert EventTime("ts").delay_ms == 0
    assert EventTime("ts", watermark=timedelta(seconds=3)).delay_ms == 3_000
    assert EventTime("ts", watermark="10 minutes") == EventTime("ts", watermark="10 minutes")
    with pytest.raises(dataclasses.FrozenInstanceError):
        mode.column = "other"   # frozen


@pytest.mark.parametrize("column", ["", None, 5])
def test_event_time_needs_a_column(column):
    with pytest.raises(ConfigError):
        EventTime(column)


@pytest.mark.parametrize("watermark", ["soon", "-1 minute", 7.5])
def test_event_time_bad_watermark(watermark):
    with pytest.raises(ConfigError):
        EventTime("ts", watermark=watermark)


def test_processing_time():
    assert ProcessingTime().kind == "processing"
    assert ProcessingTime() == ProcessingTime()


# --- conversions ------------------------------------------------------------------------


def at_us(micros):
    return EPOCH + timedelta(microseconds=micros)


@pytest.mark.parametrize("micros, floor_ms, ceil_ms", [
    (0, 0, 0), (1, 0, 1), (999, 0, 1), (1000, 1, 1), (1001, 1, 2), (1999, 1, 2),
    (-1, -1, 0), (-999, -1, 0), (-1000, -1, -1), (-1001, -2, -1),
    (1_704_110_400_000_500, 1_704_110_400_000, 1_704_110_400_001),
])
def test_to_epoch_ms_floors_and_timer_ms_ceils(micros, floor_ms, ceil_ms):
    moment = at_us(micros)
    assert to_epoch_us(moment) == micros
    assert to_epoch_ms(moment) == floor_ms
    assert timer_ms(moment) == ceil_ms


def test_conversions_respect_timezones():
    plus9 = timezone(timedelta(hours=9))
    utc_moment = datetime(2024, 1, 1, 3, 0, 0, 250_000, tzinfo=UTC)
    local = utc_moment.astimezone(plus9)
    assert to_epoch_ms(local) == to_epoch_ms(utc_moment) == 1_704_078_000_250
    assert timer_ms(local) == 1_704_078_000_250
    assert to_epoch_us(local) == 1_704_078_000_250_000


def test_timer_ms_due_exactly_when_moment_reached():
    moment = datetime(2024, 1, 1, 12, 0, 0, 500, tzinfo=UTC)
    now_ms = to_epoch_ms(moment)          # now truncated to ms is before the moment
    assert not is_due(timer_ms(moment), now_ms)
    assert is_due(timer_ms(moment), now_ms + 1)


@pytest.mark.parametrize("ms", [0, 1, -1, 1_704_110_400_123, -86_400_001])
def test_from_epoch_ms(ms):
    moment = from_epoch_ms(ms)
    assert moment.tzinfo is UTC
    assert moment == EPOCH + timedelta(milliseconds=ms)
    assert to_epoch_ms(moment) == ms == timer_ms(moment)


def test_from_epoch_ms_known_value():
    assert from_epoch_ms(1_704_110_400_001) == datetime(2024, 1, 1, 12, 0, 0, 1000, tzinfo=UTC)


def test_naive_datetime_not_converted_silently():
    with pytest.raises(TypeError):
        to_epoch_ms(datetime(2024, 1, 1))


# --- due and host timeouts --------------------------------------------------------------


@pytest.mark.parametrize("timer, now, due", [
    (10, 10, True), (10, 11, True), (10, 9, False), (None, 10, False), (10, None, False),
    (None, None, False), (-5, 0, True),
])
def test_is_due(timer, now, due):
    assert is_due(timer, now) is due


@pytest.mark.parametrize("timer, now, armed", [
    (100, 0, 99), (100, 98, 99), (100, 99, 99), (100, 100, 100), (100, 150, 150),
    (1, 0, 1), (0, 0, 1), (-5, 0, 1),    # Spark refuses timestamps <= 0
])
def test_event_timeout_ms(timer, now, armed):
    assert event_timeout_ms(timer, now) == armed
    assert EventTime("ts").armed_timeout(timer, now) == armed


@pytest.mark.parametrize("timer, now, duration", [
    (100, 0, 99), (100, 98, 1), (100, 99, 1), (100, 100, 1), (100, 500, 1),
])
def test_processing_timeout_duration_is_positive(timer, now, duration):
    assert processing_timeout_duration_ms(timer, now) == duration
    assert ProcessingTime().armed_timeout(timer, now) == now + duration


@pytest.mark.parametrize("timeout, now, fired", [
    (99, 100, True), (100, 100, False), (101, 100, False), (None, 100, False),
])
def test_timeout_fired_is_strict(timeout, now, fired):
    assert timeout_fired(timeout, now) is fired


MODES = {"event": EventTime("ts"), "processing": ProcessingTime()}


@pytest.mark.parametrize("kind", ["event", "processing"])
def test_host_wakes_a_future_timer_exactly_when_due(kind):
    armed_at = 1_000
    for timer in range(armed_at + 2, armed_at + 6):
        timeout = MODES[kind].armed_timeout(timer, armed_at)
        wakes = [now for now in range(armed_at, timer + 5) if timeout_fired(timeout, now)]
        assert wakes[0] == timer


def test_processing_timer_one_ms_ahead_wakes_one_ms_late():
    # Spark's ProcessingTimeTimeout needs a duration > 0 and fires on timeout < now
    timeout = ProcessingTime().armed_timeout(1_001, 1_000)
    assert not timeout_fired(timeout, 1_001)
    assert timeout_fired(timeout, 1_002)
    # event time can arm exactly
    assert timeout_fired(EventTime("ts").armed_timeout(1_001, 1_000), 1_001)


@pytest.mark.parametrize("kind", ["event", "processing"])
def test_still_due_timer_is_not_refired_at_the_same_now(kind):
    for timer in (900, 1_000):
        timeout = MODES[kind].armed_timeout(timer, 1_000)
        assert not timeout_fired(timeout, 1_000)
        assert timeout_fired(timeout, 1_002)


# --- require_aware ----------------------------------------------------------------------


class NoOffset(tzinfo):
    def utcoffset(self, dt):
        return None


def test_require_aware():
    plus2 = timezone(timedelta(hours=2))
    converted = require_aware(datetime(2024, 1, 1, 14, tzinfo=plus2))
    assert converted == datetime(2024, 1, 1, 12, tzinfo=UTC) and converted.tzinfo is UTC
    with pytest.raises(ValueError):
        require_aware(datetime(2024, 1, 1))
    with pytest.raises(ValueError):
        require_aware(datetime(2024, 1, 1, tzinfo=NoOffset()))
    for bad in ("2024-01-01", 0, None):
        with pytest.raises(TypeError):
            require_aware(bad)
