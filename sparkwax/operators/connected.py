"""``connect``: several DataFrames with different schemas into one logic.

The sides are tagged and unioned into one keyed stream; the logic sees
``Tagged(side, value)`` items (``side, value = item``), where ``value`` is a
dict of that side's non-key columns. Offline, build such items with
``tag(side, items)``.

On Spark every side keeps its own columns and types: the union holds the key
columns, a side number, the columns named by ``time``/``order_by`` (which
every side must have) and one column per (side, column), null on the other
sides' rows; a thin wrapper turns a row back into ``(side, value)`` before
the logic sees it. All sides must be streaming, or all bounded.
"""

from __future__ import annotations

from functools import reduce
from typing import Any, Callable, List, Optional, Sequence, Tuple

from ..errors import ConfigError
from ..logic import StatefulLogic, overrides_notify_at
from ..timers import EventTime
from .schemas import KeySpec, key_list
from .tagged import Tagged, side_names

SIDE_COLUMN = "__sw_side"

Layout = Tuple[Tuple[str, Tuple[Tuple[str, str], ...]], ...]


class TaggedLogic(StatefulLogic):
    """Turns a union row back into ``Tagged(side, value)`` for the inner logic."""

    __slots__ = ("inner", "layout")

    def __init__(self, inner, layout: Layout):
        self.inner = inner
        self.layout = layout

    def on_item(self, row):
        name, columns = self.layout[row[SIDE_COLUMN]]
        return self.inner.on_item(Tagged(name, {c: row[source] for c, source in columns}))

    def on_notify(self):
        return self.inner.on_notify()

    def on_eof(self):
        return self.inner.on_eof()

    def snapshot(self):
        return self.inner.snapshot()


class TaggedTimerLogic(TaggedLogic):
    """The same, for an inner logic with timers."""

    __slots__ = ()

    def notify_at(self):
        return self.inner.notify_at()


class TaggedBuilder:
    """``builder(resume)`` wrapped so the logic sees ``(side, value)`` items."""

    def __init__(self, builder: Callable, layout: Layout):
        self.builder = builder
        self.layout = layout
        self.__qualname__ = getattr(builder, "__qualname__", None) or type(builder).__name__

    def __call__(self, resume=None):
        inner = self.builder(resume)
        wrapper = TaggedTimerLogic if overrides_notify_at(type(inner)) else TaggedLogic
        return wrapper(inner, self.layout)


def connect(*sides, key: KeySpec, builder: Callable, output_schema,
            names: Optional[Sequence[str]] = None, time=None, order_by=None,
            step_id: Optional[str] = None):
    """Run ``builder``'s logic over several DataFrames at once; it sees
    ``(side, value)`` items, ``side`` being the side's name (``names``,
    default ``left``/``right`` for two sides, else ``side0``, ``side1``...).

    ``key``: key column(s) every side has (cast to the first side's types).
    ``time=EventTime(column, ...)`` and ``order_by`` name columns that every
    side has. Other options as for ``sparkwax.stateful``.
    """
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from ..engine import stateful

    if len(sides) < 1:
        raise ConfigError("connect needs at least one DataFrame")
    names = side_names(len(sides), names)
    keys = key_list(key)
    shared: List[str] = []
    if isinstance(time, EventTime):
        shared.append(time.column)
    order = [order_by] if isinstance(order_by, str) else list(order_by or [])
    shared.extend(c for c in order if c not in shared)
    first = {f.name: f.dataType for f in sides[0].schema.fields}
    for name, side in zip(names, sides):
        present = set(side.columns)
        missing = [c for c in keys + shared if c not in present]
        if missing:
            raise ConfigError(f"connect: side {name!r} lacks column(s) {missing} (key, time "
                              f"and order_by columns must exist on every side); it has "
                              f"{side.columns}")
    if isinstance(time, EventTime):
        for name, side in zip(names, sides):
            kind = side.schema[time.column].dataType
            if kind.typeName() != "timestamp":
                raise ConfigError(f"connect: side {name!r}: the EventTime column "
                                  f"{time.column!r} must be a timestamp on every side (each "
                                  f"side keeps its own watermark), it is "
                                  f"{kind.simpleString()}")
    columns: List[Tuple[int, str, Any, str]] = []
    layout = []
    for number, (name, side) in enumerate(zip(names, sides)):
        own = []
        for field in side.schema.fields:
            if field.name in keys:
                continue
            source = f"__sw{number}_{field.name}"
            columns.append((number, field.name, field.dataType, source))
            own.append((field.name, source))
        layout.append((name, tuple(own)))
    def watermarked(column: str) -> bool:
        return isinstance(time, EventTime) and column == time.column

    frames = []
    for number, side in enumerate(sides):
        if isinstance(time, EventTime) and side.isStreaming:
            # One watermark per input; Spark's default policy takes the minimum,
            # so a side far ahead in event time cannot make the others late.
            side = side.withWatermark(time.column, time.spark_delay)
        selected = [F.col(_q(k)).cast(first[k]).alias(k) for k in keys]
        selected.append(F.lit(number).cast("int").alias(SIDE_COLUMN))
        # the time column keeps its type and its watermark (no cast: a cast
        # would drop the metadata EventTimeTimeout looks for after the union)
        selected.extend(F.col(_q(c)).alias(c) if watermarked(c)
                        else F.col(_q(c)).cast(first[c]).alias(c) for c in shared)
        for owner, column, data_type, source in columns:
            selected.append(F.col(_q(column)).alias(source) if owner == number
                            else F.lit(None).cast(data_type).alias(source))
        frames.append(side.select(*selected))
    union = reduce(DataFrame.union, frames)
    wrapped = TaggedBuilder(builder, tuple(layout))
    return stateful(union, key=keys, builder=wrapped, output_schema=output_schema, time=time,
                    order_by=order or None, input_sides=(SIDE_COLUMN, len(sides)),
                    step_id=step_id or f"connect:{wrapped.__qualname__}")


def side_struct_schema(sides, names: Sequence[str], key: KeySpec):
    """One nullable struct field per side, holding its non-key columns."""
    from pyspark.sql import types as T

    keys = set(key_list(key))
    return T.StructType([
        T.StructField(name, T.StructType([f for f in side.schema.fields if f.name not in keys]),
                      True)
        for name, side in zip(names, sides)])


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
