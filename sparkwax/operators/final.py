"""Emit once, at EOF: ``fold_final``, ``reduce_final``, ``count_final``,
``max_final``, ``min_final`` (Bytewax's ``*_final`` family).

EOF is the end of a bounded DataFrame (or of an offline script), or
``sparkwax.finish`` for a stream. Ties in ``max_final``/``min_final`` keep
the earlier value. A key's snapshot is Bytewax's: the accumulator (the count,
the value kept), except that None and 1-tuples are stored as ``(acc,)`` (the
form every accumulator had before; see ``_box``).

>>> from sparkwax.testing import run_bounded
>>> items = [("a", 3), ("a", 5), ("b", 2), ("a", 5)]
>>> run_bounded(count_final(), items).by_key
{'a': [3], 'b': [1]}
>>> run_bounded(fold_final(list, lambda acc, v: acc + [v]), items).by_key
{'a': [[3, 5, 5]], 'b': [[2]]}
>>> run_bounded(max_final(), items).by_key, run_bounded(min_final(), items).by_key
({'a': [5], 'b': [2]}, {'a': [3], 'b': [2]})
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Tuple

from ..errors import ConfigError
from ..logic import DISCARD, RETAIN, StatefulLogic
from ..builders import FieldSpec, OperatorBuilder, field_getter, identity

_NOTHING: Tuple[()] = ()
if TYPE_CHECKING:  # PEP 696 defaults (typing has them from 3.13), for mypy --strict users
    from typing_extensions import TypeVar
else:
    from ..logic import TypeVar  # typing.TypeVar, minus the default only checkers read

_V = TypeVar("_V", default=Any)  # a key's values
_A = TypeVar("_A", default=Any)  # an accumulator
_Emits = Tuple[Iterable[_A], bool]


# -- snapshots --------------------------------------------------------------------
#
# A snapshot is the accumulator itself, Bytewax's shape, with one exception that
# keeps restoring exact: an accumulator that is None or a 1-tuple is stored
# boxed, as ``(acc,)``. Earlier sparkwax (0.1.0) stored ``(acc,)`` for every
# accumulator of fold_final, reduce_final, max_final and min_final, so any
# 1-tuple snapshot reads as ``(acc,)``, whoever wrote it, and anything else is
# the accumulator:
#
#   written           stored                  read back
#   acc (new)         acc                     acc    (acc is not None or a 1-tuple)
#   None, (x,) (new)  (None,), ((x,),)        None, (x,)
#   acc (old)         (acc,)                  acc
#
# None is boxed because a snapshot of None would restore as builder(None), a
# new key (Bytewax's own fold_final restores a None accumulator as builder()).
# A marker or a version in the blob cannot tell: the builder only sees the
# decoded snapshot, and an old ``(acc,)`` of acc=x and a new snapshot of
# acc=(x,) are the same bytes.


def _box(acc: Any) -> Any:
    """The snapshot of ``acc``: ``acc`` itself, or ``(acc,)`` for None and 1-tuples.

    >>> _box([1, 2]), _box(3), _box(None), _box((3,)), _box((3, 4))
    ([1, 2], 3, (None,), ((3,),), (3, 4))
    """
    if acc is None or (type(acc) is tuple and len(acc) == 1):
        return (acc,)
    return acc


def _unbox(snapshot: Any) -> Any:
    """The accumulator a snapshot holds: written by :func:`_box`, or by earlier
    sparkwax (always ``(acc,)``).

    >>> _unbox([1, 2]), _unbox(3), _unbox((None,)), _unbox(((3,),)), _unbox((3, 4))
    ([1, 2], 3, None, (3,), (3, 4))
    >>> _unbox(([1, 2],))   # the old form of [1, 2]
    [1, 2]
    """
    if type(snapshot) is tuple and len(snapshot) == 1:
        return snapshot[0]
    return snapshot


# -- the logics -------------------------------------------------------------------


class FoldFinalLogic(StatefulLogic[_V, _A, Any]):
    """``acc = folder(acc, value)`` per value; emits ``acc`` at EOF.

    Snapshot: the accumulator, as in Bytewax (``(acc,)`` when it is None or a
    1-tuple: see ``_box``).
    """

    def __init__(self, config: Tuple[Callable[[], _A], Callable[[_A, _V], _A]],
                 resume: Any = None) -> None:
        builder, self.folder = config
        self.acc: _A = _unbox(resume) if resume is not None else builder()

    def on_item(self, value: _V) -> _Emits[_A]:
        self.acc = self.folder(self.acc, value)
        return _NOTHING, RETAIN

    def on_eof(self) -> _Emits[_A]:
        return [self.acc], DISCARD

    def snapshot(self) -> Any:
        return _box(self.acc)


class ReduceFinalLogic(StatefulLogic[_V, _V, Any]):
    """The first value is the accumulator; ``reducer(acc, value)`` after that.

    Snapshot: the accumulator, as in Bytewax (``(acc,)`` when it is None or a
    1-tuple: see ``_box``); None before any value.
    """

    def __init__(self, reducer: Callable[[_V, _V], _V], resume: Any = None) -> None:
        self.reducer = reducer
        # (acc,) once a value arrived
        self.acc: Optional[Tuple[_V]] = None if resume is None else (_unbox(resume),)

    def on_item(self, value: _V) -> _Emits[_V]:
        acc = self.acc
        self.acc = (value,) if acc is None else (self.reducer(acc[0], value),)
        return _NOTHING, RETAIN

    def on_eof(self) -> _Emits[_V]:
        return ([self.acc[0]] if self.acc is not None else _NOTHING), DISCARD

    def snapshot(self) -> Any:
        return None if self.acc is None else _box(self.acc[0])


class CountFinalLogic(StatefulLogic[Any, int, int]):
    """Counts values; emits the count at EOF. Snapshot: the count (Bytewax's)."""

    def __init__(self, _config: None = None, resume: Optional[int] = None) -> None:
        self.count = resume or 0

    def on_item(self, value: Any) -> _Emits[int]:
        self.count += 1
        return _NOTHING, RETAIN

    def on_eof(self) -> _Emits[int]:
        return [self.count], DISCARD

    def snapshot(self) -> int:
        return self.count


class ExtremeFinalLogic(StatefulLogic[_V, _V, Any]):
    """Keeps the max (``sign=1``) or min (``sign=-1``) value by ``by(value)``;
    a tie keeps the earlier value.

    Snapshot: the value kept, as in Bytewax (``(value,)`` when it is None or a
    1-tuple: see ``_box``); None before any value.
    """

    def __init__(self, config: Tuple[Callable[[_V], Any], int], resume: Any = None) -> None:
        self.by, self.sign = config
        # (value,) once one arrived
        self.best: Optional[Tuple[_V]] = None if resume is None else (_unbox(resume),)

    def on_item(self, value: _V) -> _Emits[_V]:
        best = self.best
        if best is None:
            self.best = (value,)
        else:
            new, old = self.by(value), self.by(best[0])
            if (new > old) if self.sign > 0 else (new < old):
                self.best = (value,)
        return _NOTHING, RETAIN

    def on_eof(self) -> _Emits[_V]:
        return ([self.best[0]] if self.best is not None else _NOTHING), DISCARD

    def snapshot(self) -> Any:
        return None if self.best is None else _box(self.best[0])


def fold_final(builder: Callable[[], _A], folder: Callable[[_A, _V], _A]
               ) -> OperatorBuilder[_V, _A, Any]:
    """``builder()`` makes a key's empty accumulator, ``folder(acc, value)``
    combines each value into it; the accumulator is emitted at EOF."""
    if not callable(builder) or not callable(folder):
        raise ConfigError("fold_final needs callables builder() and folder(acc, value)")
    return OperatorBuilder("fold_final", FoldFinalLogic, (builder, folder))


def reduce_final(reducer: Callable[[_V, _V], _V]) -> OperatorBuilder[_V, _V, Any]:
    """``reducer(acc, value)`` over a key's values (the first value starts the
    accumulator); emitted at EOF."""
    if not callable(reducer):
        raise ConfigError(f"reduce_final needs a callable reducer, got {reducer!r}")
    return OperatorBuilder("reduce_final", ReduceFinalLogic, reducer)


def count_final() -> OperatorBuilder[Any, int, int]:
    """The number of values per key, emitted at EOF."""
    return OperatorBuilder("count_final", CountFinalLogic, None)


def max_final(by: FieldSpec = None) -> OperatorBuilder[Any, Any, Any]:
    """The largest value per key (compared by ``by``: a field name or a
    callable; default the value itself), emitted at EOF. Ties keep the earlier."""
    return OperatorBuilder("max_final", ExtremeFinalLogic,
                           (field_getter(by, "by") or identity, 1))


def min_final(by: FieldSpec = None) -> OperatorBuilder[Any, Any, Any]:
    """The smallest value per key (see ``max_final``), emitted at EOF."""
    return OperatorBuilder("min_final", ExtremeFinalLogic,
                           (field_getter(by, "by") or identity, -1))


