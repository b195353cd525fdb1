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

from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Tuple

from ..errors import ConfigError
from ..logic import DISCARD, RETAIN, StatefulLogic
from ..builders import OperatorBuilder, two_tuple

Mapper = Callable[[Optional[Any], Any], Tuple[Optional[Any], Any]]
if TYPE_CHECKING:  # PEP 696 defaults (typing has them from 3.13), for mypy --strict users
    from typing_extensions import TypeVar
else:
    from ..logic import TypeVar  # typing.TypeVar, minus the default only checkers read

_V = TypeVar("_V", default=Any)  # a key's values
_W = TypeVar("_W", default=Any)  # what it emits
_S = TypeVar("_S", default=Any)  # its state


class StatefulFlatMapLogic(StatefulLogic[Any, Any, Any]):
    """The logic of ``stateful_flat_map``; its snapshot is the mapper's state."""

    __slots__ = ("mapper", "state")

    def __init__(self, mapper: Mapper, resume: Any = None) -> None:
        self.mapper = mapper
        self.state = resume

    def on_item(self, value: Any) -> Tuple[Iterable[Any], bool]:
        state, outs = two_tuple(self.mapper(self.state, value), "stateful_flat_map's mapper")
        if state is None:
            return outs, DISCARD
        self.state = state
        return outs, RETAIN

    def snapshot(self) -> Any:
        return self.state


class StatefulMapLogic(StatefulFlatMapLogic):
    """The logic of ``stateful_map``: exactly one emit per value."""

    __slots__ = ()

    def on_item(self, value: Any) -> Tuple[Iterable[Any], bool]:
        state, out = two_tuple(self.mapper(self.state, value), "stateful_map's mapper")
        if state is None:
            return [out], DISCARD
        self.state = state
        return [out], RETAIN


class StatefulFilterLogic(StatefulFlatMapLogic):
    """The logic of ``stateful_filter``: the value itself, or nothing."""

    __slots__ = ()

    def on_item(self, value: Any) -> Tuple[Iterable[Any], bool]:
        result = self.mapper(self.state, value)
        if type(result) is not tuple or len(result) != 2:
            raise TypeError(f"stateful_filter's predicate must return a 2-tuple "
                            f"(new_state, keep); got {result!r}")
        state, keep = result
        out: Tuple[Any, ...]
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


_NOTHING: Tuple[()] = ()


def stateful_map(mapper: Callable[[Optional[_S], _V], Tuple[Optional[_S], _W]]
                 ) -> OperatorBuilder[_V, _W, _S]:
    """Transform values one-to-one with a per-key state (Bytewax's ``stateful_map``).

    ``mapper(state_or_None, value) -> (new_state, out)``; ``out`` is emitted
    (exactly one value per item); ``new_state=None`` discards the key's state.
    """
    if not callable(mapper):
        raise ConfigError(f"stateful_map needs a callable mapper, got {mapper!r}")
    return OperatorBuilder("stateful_map", StatefulMapLogic, mapper)


def stateful_flat_map(mapper: Callable[[Optional[_S], _V], Tuple[Optional[_S], Iterable[_W]]]
                      ) -> OperatorBuilder[_V, _W, _S]:
    """Transform values one-to-many with a per-key state (``stateful_flat_map``).

    ``mapper(state_or_None, value) -> (new_state, outs)``; every value of
    ``outs`` is emitted; ``new_state=None`` discards the key's state.
    """
    if not callable(mapper):
        raise ConfigError(f"stateful_flat_map needs a callable mapper, got {mapper!r}")
    return OperatorBuilder("stateful_flat_map", StatefulFlatMapLogic, mapper)


def stateful_filter(predicate: Callable[[Optional[_S], _V], Tuple[Optional[_S], bool]]
                    ) -> OperatorBuilder[_V, _V, _S]:
    """Keep or drop values with a per-key state.

    ``predicate(state_or_None, value) -> (new_state, keep)``: the value is
    emitted, unchanged, when ``keep`` is True (a bool is required);
    ``new_state=None`` discards the key's state.
    """
    if not callable(predicate):
        raise ConfigError(f"stateful_filter needs a callable predicate, got {predicate!r}")
    return OperatorBuilder("stateful_filter", StatefulFilterLogic, predicate)
