"""Values from several inputs in one logic: ``(side, value)`` pairs.

A connected step (``connect``, ``join``) hands its logic ``Tagged(side,
value)`` items: a 2-tuple (``side, value = item``) that also reads fields of
the value (``item["ts"]``), so event-time modes and ``order_by`` work on
tagged values offline just as on Spark.

A step's :class:`Sides` (part of its ``sparkwax.step.Step``) names its
inputs; the driver reads each value's input from it (Spark keeps a watermark
per input, see ``sparkwax.timers``) and, on Spark, where rows arrive as one
union with a side-number column, turns each row back into ``Tagged``.

>>> item = Tagged("orders", {"ts": 1, "amount": 3.5})
>>> side, value = item
>>> side, value["amount"], item["ts"], item == ("orders", {"ts": 1, "amount": 3.5})
('orders', 3.5, 1, True)
>>> tag("orders", [("k1", {"ts": 1})])
[('k1', Tagged('orders', {'ts': 1}))]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .errors import ConfigError, InputError

SIDE_COLUMN = "__sw_side"   # the union's side number (``sparkwax.engine.planning.connecting``)

Layout = Tuple[Tuple[Tuple[str, str], ...], ...]
"""Per side, its ``(column, union column)`` pairs (Spark's union of the sides)."""


class Tagged(tuple[Any, Any]):  # the base class is plain tuple at run time
    """``(side, value)``; ``item[field]`` reads ``value[field]``."""

    __slots__ = ()

    def __new__(cls, side: Any, value: Any) -> Tagged:
        return tuple.__new__(cls, (side, value))

    def __getnewargs__(self) -> Tuple[Any, Any]:
        return tuple.__getitem__(self, 0), tuple.__getitem__(self, 1)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, str):
            return tuple.__getitem__(self, 1)[index]
        return tuple.__getitem__(self, index)

    @property
    def side(self) -> Any:
        return tuple.__getitem__(self, 0)

    @property
    def value(self) -> Any:
        return tuple.__getitem__(self, 1)

    def __repr__(self) -> str:
        return f"Tagged({self.side!r}, {self.value!r})"


def tag(side: Any, items: Iterable[Tuple[Any, Any]]) -> List[Tuple[Any, Tagged]]:
    """Offline: mark ``(key, value)`` items as coming from ``side``."""
    return [(key, Tagged(side, value)) for key, value in items]


def side_names(count: int, names: Optional[Sequence[str]] = None) -> List[str]:
    """Default side names: ``left``/``right`` for two sides, else ``side0``..."""
    if names is None:
        return ["left", "right"] if count == 2 else [f"side{i}" for i in range(count)]
    names = list(names)
    if len(names) != count or len(set(names)) != count:
        raise ConfigError(f"names must be {count} distinct names, one per side; got {names!r}")
    return names


@dataclass(frozen=True)
class Sides:
    """The inputs of a connected step: their ``names`` (tags, in order) and,
    on Spark, the union ``layout`` (per side, ``(column, union column)``
    pairs) whose rows carry their side number in ``SIDE_COLUMN``.

    >>> sides = Sides(("orders", "payments"))
    >>> sides.index_of("step", "k", Tagged("payments", {})), len(sides)
    (1, 2)
    >>> union = Sides(("a", "b"), layout=((("x", "__sw0_x"),), (("x", "__sw1_x"),)))
    >>> union.index_of("step", "k", {SIDE_COLUMN: 1, "__sw1_x": 5})
    1
    >>> union.tagged({SIDE_COLUMN: 1, "__sw0_x": None, "__sw1_x": 5})
    Tagged('b', {'x': 5})
    """

    names: Tuple[Any, ...]
    layout: Optional[Layout] = None
    index: Dict[Any, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = tuple(self.names)
        try:
            distinct = len(set(names)) == len(names)
        except TypeError:
            distinct = False
        if not names or not distinct:
            raise ConfigError(f"sides must be distinct side names, got {self.names!r}")
        if self.layout is not None and len(self.layout) != len(names):
            raise ConfigError(f"{len(self.layout)} union layouts for {len(names)} sides")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "index", {name: i for i, name in enumerate(names)})

    def __len__(self) -> int:
        return len(self.names)

    def index_of(self, step_id: str, key: Any, value: Any) -> int:
        """The input number of ``value``: a union row's side column on Spark,
        else its ``Tagged`` side."""
        if self.layout is not None:
            return int(value[SIDE_COLUMN])
        if not isinstance(value, Tagged):
            raise InputError(step_id, key, "event time", value,
                             f"a step with sides {list(self.names)} needs Tagged values "
                             f"(use tag(side, items))")
        try:
            return self.index[value.side]
        except (KeyError, TypeError):
            raise InputError(step_id, key, "event time", value,
                             f"unknown side {value.side!r}; the sides are "
                             f"{list(self.names)}") from None

    def tagged(self, row: Mapping[str, Any]) -> "Tagged":
        """A union row (Spark) as the ``Tagged`` item the logic sees."""
        number = row[SIDE_COLUMN]
        assert self.layout is not None
        return Tagged(self.names[number], {c: row[source] for c, source in self.layout[number]})


def untagged_side(step_id: str, value: Any) -> None:
    """A ``Tagged`` value in EventTime mode where the step has no sides: refuse
    it (Spark keeps a watermark per side; the run must know them all)."""
    if isinstance(value, Tagged):
        raise ConfigError(
            f"step {step_id!r}: a Tagged value from side {value.side!r} in EventTime mode, "
            f"but the run does not know the step's sides; pass sides=[...] (all of them: "
            f"Spark keeps a watermark per side and uses the smallest, so a side without "
            f"data holds it back)")
