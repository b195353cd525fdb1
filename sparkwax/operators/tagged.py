"""Values from several inputs in one logic: ``(side, value)`` pairs.

A connected step (``connect``, ``join``) hands its logic ``Tagged(side,
value)`` items: a 2-tuple (``side, value = item``) that also reads fields of
the value (``item["ts"]``), so event-time modes and ``order_by`` work on
tagged values offline just as on Spark.

>>> item = Tagged("orders", {"ts": 1, "amount": 3.5})
>>> side, value = item
>>> side, value["amount"], item["ts"], item == ("orders", {"ts": 1, "amount": 3.5})
('orders', 3.5, 1, True)
>>> tag("orders", [("k1", {"ts": 1})])
[('k1', Tagged('orders', {'ts': 1}))]
"""

from __future__ import annotations

from typing import Any, Iterable, List, Optional, Sequence, Tuple

from ..errors import ConfigError


class Tagged(tuple):
    """``(side, value)``; ``item[field]`` reads ``value[field]``."""

    __slots__ = ()

    def __new__(cls, side: Any, value: Any):
        return tuple.__new__(cls, (side, value))

    def __getnewargs__(self):
        return tuple(self)

    def __getitem__(self, index):
        if isinstance(index, str):
            return tuple.__getitem__(self, 1)[index]
        return tuple.__getitem__(self, index)

    @property
    def side(self):
        return tuple.__getitem__(self, 0)

    @property
    def value(self):
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
