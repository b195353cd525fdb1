"""Hypothesis strategies for property-testing stateful logic (needs hypothesis).

Every function is keyword-only and accepts strategies for its parts.

>>> from hypothesis import given, settings
>>> from sparkwax.testing import run
>>> from sparkwax.testing.reference import Counter
>>> @settings(max_examples=20)
... @given(scripts(items=keyed_items(keys=st.sampled_from("ab"))))
... def test_counts_never_skip(script):
...     for key, counts in run(Counter, script).by_key.items():
...         assert counts == list(range(1, len(counts) + 1))
>>> test_counts_never_skip()
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, List, Optional, Tuple

from hypothesis import strategies as st

from ...timers import EventTime
from ..script import Batch, Crash, Eof, Tick

SearchStrategy = st.SearchStrategy
START = datetime(2024, 1, 1, tzinfo=timezone.utc)

__all__ = ["START", "check_logic", "clock_advances", "crash_points", "keyed_items",
           "micro_batches", "scripts", "st", "timestamped_items"]


def keyed_items(*, keys: Optional[SearchStrategy] = None, values: Optional[SearchStrategy] = None,
                min_size: int = 0, max_size: int = 30) -> SearchStrategy:
    """Lists of ``(key, value)`` pairs (a keyed stream in arrival order)."""
    keys = keys if keys is not None else st.sampled_from(["a", "b", "c", "d"])
    values = values if values is not None else st.integers(-1000, 1000)
    return st.lists(st.tuples(keys, values), min_size=min_size, max_size=max_size)


def timestamped_items(*, keys: Optional[SearchStrategy] = None,
                      values: Optional[SearchStrategy] = None, column: str = "ts",
                      start: datetime = START,
                      steps: Optional[SearchStrategy] = None,
                      disorder: Optional[SearchStrategy] = None,
                      min_size: int = 0, max_size: int = 30) -> SearchStrategy:
    """Keyed items whose values are ``{column: aware datetime, "value": v}``.

    Event times move forward by ``steps`` (default 0-10 min, whole seconds)
    and each item is shifted back by ``disorder`` (default 0-5 min) so some
    arrive out of order and some are late.
    """
    keys = keys if keys is not None else st.sampled_from(["a", "b", "c"])
    values = values if values is not None else st.integers(0, 100)
    steps = steps if steps is not None else st.integers(0, 600).map(lambda s: timedelta(seconds=s))
    disorder = disorder if disorder is not None else st.integers(0, 300).map(
        lambda s: timedelta(seconds=s))
    one = st.tuples(keys, values, steps, disorder)

    def build(rows: List[Tuple[Any, Any, timedelta, timedelta]]):
        clock, items = start, []
        for key, value, step, back in rows:
            clock += step
            items.append((key, {column: clock - back, "value": value}))
        return items

    return st.lists(one, min_size=min_size, max_size=max_size).map(build)


@st.composite
def micro_batches(draw, *, items: Optional[SearchStrategy] = None,
                  max_batches: int = 8) -> List[list]:
    """A stream (drawn from ``items``) split into consecutive micro-batches,
    order kept; empty batches allowed."""
    stream = draw(items if items is not None else keyed_items())
    cuts = draw(st.lists(st.integers(0, len(stream)), max_size=max(max_batches - 1, 0)))
    bounds = [0, *sorted(cuts), len(stream)]
    return [stream[a:b] for a, b in zip(bounds, bounds[1:])]


def clock_advances(*, count: int, start: datetime = START,
                   steps: Optional[SearchStrategy] = None) -> SearchStrategy:
    """``count`` non-decreasing aware datetimes (processing times of batches)."""
    steps = steps if steps is not None else st.integers(0, 3600).map(
        lambda s: timedelta(seconds=s))

    def build(deltas):
        clock, times = start, []
        for delta in deltas:
            clock += delta
            times.append(clock)
        return times

    return st.lists(steps, min_size=count, max_size=count).map(build)


def crash_points(*, batches: int, max_crashes: int = 3) -> SearchStrategy:
    """Sorted positions (0..batches) before which the query crashes."""
    return st.lists(st.integers(0, batches), max_size=max_crashes).map(sorted)


@st.composite
def scripts(draw, *, items: Optional[SearchStrategy] = None, time=None,
            crashes: bool = True, ticks: bool = True, eof: bool = True,
            max_batches: int = 8, clock: Optional[SearchStrategy] = None,
            two_clocks: bool = False) -> list:
    """Whole scripts: batches of ``items`` (default: keyed ints, or timestamped
    items in EventTime mode), processing times in ProcessingTime mode (and in
    EventTime mode with ``two_clocks``, for a logic with processing deadlines:
    batches and ticks then advance the processing clock beside the
    watermark), crash points, a few no-data batches, and (if ``eof``) a final
    Eof."""
    event = isinstance(time, EventTime)
    if items is None:
        items = timestamped_items(column=time.column) if event else keyed_items()
    batches = draw(micro_batches(items=items, max_batches=max_batches))
    crash_at = set(draw(crash_points(batches=len(batches)))) if crashes else set()
    tick_at = set(draw(st.lists(st.integers(0, len(batches)), max_size=2))) if ticks else set()
    nows = None if event and not two_clocks else draw(clock if clock is not None else clock_advances(
        count=len(batches) + len(tick_at)))
    script: list = []
    now_index = 0

    def next_now():
        nonlocal now_index
        if nows is None:
            return None
        now_index += 1
        return nows[now_index - 1]

    for position in range(len(batches) + 1):
        if position in crash_at:
            script.append(Crash())
        if position in tick_at:
            script.append(Tick(now=next_now()))
        if position < len(batches):
            script.append(Batch(batches[position], now=next_now()))
    if eof:
        script.append(Eof())
    return script


def __getattr__(name):
    if name == "check_logic":
        from .check import check_logic

        return check_logic
    raise AttributeError(name)
