"""Running aggregations: ``fold`` and ``reduce`` emit the accumulator after
every value (``fold_final`` and ``reduce_final`` emit it once, at EOF).

A key's accumulator lives until EOF (the end of a bounded input, or
``sparkwax.finish``), where it is discarded without a further emit (the last
value already emitted it). On an unbounded stream give the step a ``ttl=`` (or
wrap the builder with ``with_ttl``) so idle keys do not stay forever.

>>> from sparkwax.testing import Batch, Crash, Eof, run
>>> script = [Batch([("a", 3), ("b", 1), ("a", 4)]), Crash(), Batch([("a", 2)]), Eof()]
>>> run(fold(list, lambda acc, v: acc + [v]), script).by_key
{'a': [[3], [3, 4], [3, 4, 2]], 'b': [[1]]}
>>> run(reduce(max), script).by_key
{'a': [3, 4, 4], 'b': [1]}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Tuple

from ..errors import ConfigError
from ..logic import DISCARD, RETAIN, StatefulLogic
from ..builders import OperatorBuilder

_NOTHING: Tuple[()] = ()
if TYPE_CHECKING:  # PEP 696 defaults (typing has them from 3.13), for mypy --strict users
    from typing_extensions import TypeVar
else:
    from ..logic import TypeVar  # typing.TypeVar, minus the default only checkers read

_V = TypeVar("_V", default=Any)  # a key's values
_A = TypeVar("_A", default=Any)  # an accumulator


class FoldLogic(StatefulLogic[_V, _A, Tuple[_A]]):
    """``acc = folder(acc, value)`` per value, emitted each time.

    Snapshot: ``(acc,)`` (a 1-tuple, so an accumulator of None survives).
    """

    def __init__(self, config: Tuple[Callable[[], _A], Callable[[_A, _V], _A]],
                 resume: Optional[Tuple[_A]] = None) -> None:
        builder, self.folder = config
        self.acc = resume[0] if resume is not None else builder()

    def on_item(self, value: _V) -> Tuple[Iterable[_A], bool]:
        acc = self.acc = self.folder(self.acc, value)
        return [acc], RETAIN

    def on_eof(self) -> Tuple[Iterable[_A], bool]:
        return _NOTHING, DISCARD

    def snapshot(self) -> Tuple[_A]:
        return (self.acc,)


class ReduceLogic(StatefulLogic[_V, _V, Optional[Tuple[_V]]]):
    """The first value is the accumulator, ``reducer(acc, value)`` after that;
    emitted after every value. Snapshot: ``(acc,)``, None before any value."""

    def __init__(self, reducer: Callable[[_V, _V], _V],
                 resume: Optional[Tuple[_V]] = None) -> None:
        self.reducer = reducer
        self.acc = resume

    def on_item(self, value: _V) -> Tuple[Iterable[_V], bool]:
        acc = self.acc
        new = value if acc is None else self.reducer(acc[0], value)
        self.acc = (new,)
        return [new], RETAIN

    def on_eof(self) -> Tuple[Iterable[_V], bool]:
        return _NOTHING, DISCARD

    def snapshot(self) -> Optional[Tuple[_V]]:
        return self.acc


def fold(builder: Callable[[], _A], folder: Callable[[_A, _V], _A]
         ) -> OperatorBuilder[_V, _A, Tuple[_A]]:
    """``builder()`` makes a key's empty accumulator, ``folder(acc, value)``
    combines each value into it; the accumulator is emitted after every value."""
    if not callable(builder) or not callable(folder):
        raise ConfigError("fold needs callables builder() and folder(acc, value)")
    return OperatorBuilder("fold", FoldLogic, (builder, folder))


def reduce(reducer: Callable[[_V, _V], _V]) -> OperatorBuilder[_V, _V, Optional[Tuple[_V]]]:
    """``reducer(acc, value)`` over a key's values (the first value starts the
    accumulator); the accumulator is emitted after every value."""
    if not callable(reducer):
        raise ConfigError(f"reduce needs a callable reducer, got {reducer!r}")
    return OperatorBuilder("reduce", ReduceLogic, reducer)
