"""``stateful_map``, ``stateful_flat_map`` (Bytewax's per-key mappers) and
``stateful_filter``.

``mapper(state_or_None, value) -> (new_state, out)`` (``(new_state, outs)``
for the flat version, ``(new_state, keep)`` for the filter). Returning
``None`` as the state discards the key's state; the next value starts again
from ``None``.

>>> from sparkwax.testing import Batch, run
>>> def running_count(count, _value):
...     count = (count or 0) + 1
...     return count, count
>>> run(stateful_map(running_count), [Batch([("a", "x"), ("a", "y"), ("b", "z")])]).by_key
{'a': [1, 2], 'b': [1]}
>>> def rising(last, value):                  # keep a value above the key's previous one
...     return value, last is None or value > last
>>> run(stateful_filter(rising), [Batch([("a", 3), ("a", 1), ("a", 2), ("a", 5)])]).by_key
{'a': [3, 2, 5]}
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Tuple

from ..errors import ConfigError
from ..logic import DISCARD, RETAIN, StatefulLogic
from ._base import OperatorBuilder, two_tuple

Mapper = Callable[[Optional[Any], Any], Tuple[Optional[Any], Any]]


class StatefulFlatMapLogic(StatefulLogic):
    """The logic of ``stateful_flat_map``; its snapshot is the mapper's state."""

    __slots__ = ("mapper", "state")

    def __init__(self, mapper: Mapper, resume=None):
        self.mapper = mapper
        self.state = resume

    def on_item(self, value):
        state, outs = two_tuple(self.mapper(self.state, value), "stateful_flat_map's mapper")
        if state is None:
            return outs, DISCARD
        self.state = state
        return outs, RETAIN

    def snapshot(self):
        return self.state


class StatefulMapLogic(StatefulFlatMapLogic):
    """The logic of ``stateful_map``: exactly one emit per value."""

    __slots__ = ()

    def on_item(self, value):
        state, out = two_tuple(self.mapper(self.state, value), "stateful_map's mapper")
        if state is None:
            return [out], DISCARD
        self.state = state
        return [out], RETAIN


class StatefulFilterLogic(StatefulFlatMapLogic):
    """The logic of ``stateful_filter``: the value itself, or nothing."""

    __slots__ = ()

    def on_item(self, value):
        result = self.mapper(self.state, value)
        if type(result) is not tuple or len(result) != 2:
            raise TypeError(f"stateful_filter's predicate must return a 2-tuple "
                            f"(new_state, keep); got {result!r}")
        state, keep = result
        if keep is True:
            out = (value,)
        elif keep is False:
            out = _NOTHING
        else:
            raise TypeError(f"stateful_filter's predicate must return keep as a bool "
                            f"(True keeps the value); got {keep!r}")
        if state is None:
            return out, DISCARD
        self.state = state
        return out, RETAIN


_NOTHING = ()


def stateful_map(mapper: Mapper) -> OperatorBuilder:
    """Transform values one-to-one with a per-key state (Bytewax's ``stateful_map``).

    ``mapper(state_or_None, value) -> (new_state, out)``; ``out`` is emitted
    (exactly one value per item); ``new_state=None`` discards the key's state.
    """
    if not callable(mapper):
        raise ConfigError(f"stateful_map needs a callable mapper, got {mapper!r}")
    return OperatorBuilder("stateful_map", StatefulMapLogic, mapper)


def stateful_flat_map(mapper: Callable[[Optional[Any], Any],
                                       Tuple[Optional[Any], Iterable[Any]]]) -> OperatorBuilder:
    """Transform values one-to-many with a per-key state (``stateful_flat_map``).

    ``mapper(state_or_None, value) -> (new_state, outs)``; every value of
    ``outs`` is emitted; ``new_state=None`` discards the key's state.
    """
    if not callable(mapper):
        raise ConfigError(f"stateful_flat_map needs a callable mapper, got {mapper!r}")
    return OperatorBuilder("stateful_flat_map", StatefulFlatMapLogic, mapper)


def stateful_filter(predicate: Callable[[Optional[Any], Any],
                                        Tuple[Optional[Any], bool]]) -> OperatorBuilder:
    """Keep or drop values with a per-key state.

    ``predicate(state_or_None, value) -> (new_state, keep)``: the value is
    emitted, unchanged, when ``keep`` is True (a bool is required);
    ``new_state=None`` discards the key's state.
    """
    if not callable(predicate):
        raise ConfigError(f"stateful_filter needs a callable predicate, got {predicate!r}")
    return OperatorBuilder("stateful_filter", StatefulFilterLogic, predicate)
