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
from typing import Any, Callable, Dict, List, Optional, Tuple, cast

from hypothesis import strategies as st

from ...timers import EventTime, TimeMode
from ..script import Batch, Crash, Eof, ScriptStep, Tick

SearchStrategy = st.SearchStrategy
START = datetime(2024, 1, 1, tzinfo=timezone.utc)

__all__ = ["START", "check_logic", "clock_advances", "crash_points", "event_types",
           "keyed_items", "micro_batches", "records", "scripts", "st", "tagged_items",
           "timestamped_items"]


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

    def build(rows: List[Tuple[Any, Any, timedelta, timedelta]]) -> List[Tuple[Any, Any]]:
        clock, items = start, []
        for key, value, step, back in rows:
            clock += step
            items.append((key, {column: clock - back, "value": value}))
        return items

    return st.lists(one, min_size=min_size, max_size=max_size).map(build)


def _timed(keys: SearchStrategy, values: SearchStrategy, wrap: Callable[[datetime, Any], Any],
           *, column: str,
           start: datetime, steps: Optional[SearchStrategy],
           disorder: Optional[SearchStrategy], min_size: int, max_size: int
           ) -> SearchStrategy:
    """Keyed items ``(key, wrap(event_time, value))``, event times as in
    ``timestamped_items``."""
    steps = steps if steps is not None else st.integers(0, 600).map(lambda s: timedelta(seconds=s))
    disorder = disorder if disorder is not None else st.integers(0, 300).map(
        lambda s: timedelta(seconds=s))

    def build(rows: List[Tuple[Any, Any, timedelta, timedelta]]) -> List[Tuple[Any, Any]]:
        clock, items = start, []
        for key, value, step, back in rows:
            clock += step
            items.append((key, wrap(clock - back, value)))
        return items

    return st.lists(st.tuples(keys, values, steps, disorder), min_size=min_size,
                    max_size=max_size).map(build)


def records(*, fields: Dict[str, SearchStrategy], keys: Optional[SearchStrategy] = None,
            column: str = "ts", start: datetime = START,
            steps: Optional[SearchStrategy] = None, disorder: Optional[SearchStrategy] = None,
            min_size: int = 0, max_size: int = 30) -> SearchStrategy:
    """Keyed items whose values are records ``{column: aware datetime,
    **fields}``, one strategy per field (event times as in ``timestamped_items``).

    >>> from hypothesis import find
    >>> payments = records(fields={"amount": st.integers(1, 500),
    ...                            "country": st.sampled_from(["FR", "US"])})
    >>> key, value = find(payments, lambda items: len(items) == 1)[0]
    >>> sorted(value)
    ['amount', 'country', 'ts']
    """
    keys = keys if keys is not None else st.sampled_from(["a", "b", "c"])
    return _timed(keys, st.fixed_dictionaries(fields), lambda ts, v: {column: ts, **v},
                  column=column, start=start, steps=steps, disorder=disorder,
                  min_size=min_size, max_size=max_size)


def event_types(*, types: Dict[str, Dict[str, SearchStrategy]], type_column: str = "type",
                keys: Optional[SearchStrategy] = None, column: str = "ts",
                start: datetime = START, steps: Optional[SearchStrategy] = None,
                disorder: Optional[SearchStrategy] = None, one_schema: bool = True,
                min_size: int = 0, max_size: int = 30) -> SearchStrategy:
    """One stream of several event types: keyed items whose values are
    ``{column: time, type_column: name, **that type's fields}``, the types
    mixed. With ``one_schema`` (default) every record has every type's
    fields, None where its type has none, as rows of one Spark DataFrame do.

    >>> from hypothesis import find
    >>> clicks = event_types(types={"view": {"page": st.sampled_from(["/", "/cart"])},
    ...                             "purchase": {"amount": st.integers(1, 500)}})
    >>> items = find(clicks, lambda items: {v["type"] for _, v in items} == {"view", "purchase"})
    >>> sorted(items[0][1])
    ['amount', 'page', 'ts', 'type']
    """
    if not types:
        raise ValueError("event_types needs at least one type")
    keys = keys if keys is not None else st.sampled_from(["a", "b", "c"])
    every = {name: None for fields in types.values() for name in fields}
    one = st.one_of([st.fixed_dictionaries(fields).map(_typed(type_column, name))
                     for name, fields in types.items()])

    def wrap(ts: datetime, value: Dict[str, Any]) -> Dict[str, Any]:
        return {column: ts, **(every if one_schema else {}), **value}

    return _timed(keys, one, wrap, column=column, start=start, steps=steps,
                  disorder=disorder, min_size=min_size, max_size=max_size)


def tagged_items(*, sides: Dict[Any, Dict[str, SearchStrategy]],
                 keys: Optional[SearchStrategy] = None, column: str = "ts",
                 start: datetime = START, steps: Optional[SearchStrategy] = None,
                 disorder: Optional[SearchStrategy] = None,
                 min_size: int = 0, max_size: int = 30) -> SearchStrategy:
    """The items of a connected step (``ops.connect``, ``join``): keyed
    ``Tagged(side, record)`` items, the sides mixed in one arrival order,
    each side's records ``{column: time, **its fields}``. Run them with
    ``run(..., sides=list(sides))`` in EventTime mode.

    >>> from hypothesis import find
    >>> both = tagged_items(sides={"orders": {"amount": st.integers(1, 9)},
    ...                            "payments": {"paid": st.integers(1, 9)}})
    >>> key, item = find(both, lambda items: len(items) == 1)[0]
    >>> item.side in ("orders", "payments") and "ts" in item.value
    True
    """
    from ...sides import Tagged

    if not sides:
        raise ValueError("tagged_items needs at least one side")
    keys = keys if keys is not None else st.sampled_from(["a", "b", "c"])
    one = st.one_of([st.fixed_dictionaries(fields).map(_sided(side))
                     for side, fields in sides.items()])
    return _timed(keys, one, lambda ts, pair: Tagged(pair[0], {column: ts, **pair[1]}),
                  column=column, start=start, steps=steps, disorder=disorder,
                  min_size=min_size, max_size=max_size)


def _typed(type_column: str, name: str) -> Callable[[Dict[str, Any]], Dict[str, Any]]:
    return lambda value: {type_column: name, **value}


def _sided(side: Any) -> Callable[[Dict[str, Any]], Tuple[Any, Dict[str, Any]]]:
    return lambda value: (side, value)


@st.composite
def micro_batches(draw: st.DrawFn, *, items: Optional[SearchStrategy] = None,
                  max_batches: int = 8) -> List[List[Any]]:
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

    def build(deltas: List[timedelta]) -> List[datetime]:
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
def scripts(draw: st.DrawFn, *, items: Optional[SearchStrategy] = None,
            time: Optional[TimeMode] = None,
            crashes: bool = True, ticks: bool = True, eof: bool = True,
            max_batches: int = 8, clock: Optional[SearchStrategy] = None,
            two_clocks: bool = False) -> List[ScriptStep]:
    """Whole scripts: batches of ``items`` (default: keyed ints, or timestamped
    items in EventTime mode), processing times in ProcessingTime mode (and in
    EventTime mode with ``two_clocks``, for a logic with processing deadlines:
    batches and ticks then advance the processing clock beside the
    watermark), crash points, a few no-data batches, and (if ``eof``) a final
    Eof."""
    event = isinstance(time, EventTime)
    if items is None:
        items = timestamped_items(column=cast(EventTime, time).column) if event else keyed_items()
    batches = draw(micro_batches(items=items, max_batches=max_batches))
    crash_at = set(draw(crash_points(batches=len(batches)))) if crashes else set()
    tick_at = set(draw(st.lists(st.integers(0, len(batches)), max_size=2))) if ticks else set()
    nows = None if event and not two_clocks else draw(clock if clock is not None else clock_advances(
        count=len(batches) + len(tick_at)))
    script: List[ScriptStep] = []
    now_index = 0

    def next_now() -> Optional[datetime]:
        nonlocal now_index
        if nows is None:
            return None
        now_index += 1
        moment: datetime = nows[now_index - 1]
        return moment

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


def __getattr__(name: str) -> Any:
    if name == "check_logic":
        from .logic_check import check_logic

        return check_logic
    raise AttributeError(name)
