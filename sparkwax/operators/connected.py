"""``connect``: several DataFrames with different schemas into one logic.

The sides are tagged and unioned into one keyed stream; the logic sees
``Tagged(side, value)`` items (``side, value = item``), where ``value`` is a
dict of that side's non-key columns. Offline, build such items with
``tag(side, items)``.

On Spark every side keeps its own columns and types: the union holds the key
columns, a side number, the columns named by ``time``/``order_by`` (which
every side must have) and one column per (side, column), null on the other
sides' rows (``sparkwax.engine.connecting`` builds it); a thin wrapper turns
a row back into ``(side, value)`` before the logic sees it. All sides must
be streaming, or all bounded.

>>> class Echo(StatefulLogic):
...     def on_item(self, value): return [value], False
...     def snapshot(self): return None
>>> wrapped = TaggedBuilder(lambda resume: Echo(), (("left", (("x", "__sw0_x"),)),))
>>> wrapped(None).on_item({SIDE_COLUMN: 0, "__sw0_x": 5})
([Tagged('left', {'x': 5})], False)
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence, Tuple

from ..errors import ConfigError
from ..logic import StatefulLogic, overrides_notify_at
from .schemas import KeySpec, key_list
from .tagged import Tagged, side_names

SIDE_COLUMN = "__sw_side"   # the union's side number (sparkwax.engine.connecting)

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
    side has. Other options as for ``sparkwax.stateful``. The DataFrame work
    (one union with a side column) is ``sparkwax.engine.connecting``'s.
    """
    from ..engine import stateful
    from ..engine.connecting import union_of_sides

    if len(sides) < 1:
        raise ConfigError("connect needs at least one DataFrame")
    names = side_names(len(sides), names)
    keys = key_list(key)
    order = [order_by] if isinstance(order_by, str) else list(order_by or [])
    union, layout = union_of_sides(sides, names, keys, time, order)
    wrapped = TaggedBuilder(builder, layout)
    return stateful(union, key=keys, builder=wrapped, output_schema=output_schema, time=time,
                    order_by=order or None, input_sides=(SIDE_COLUMN, len(sides)),
                    step_id=step_id or f"connect:{wrapped.__qualname__}")
