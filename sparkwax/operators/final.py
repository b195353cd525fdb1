"""Emit once, at EOF: ``fold_final``, ``reduce_final``, ``count_final``,
``max_final``, ``min_final`` (Bytewax's ``*_final`` family).

EOF is the end of a bounded DataFrame (or of an offline script), or
``sparkwax.finish`` for a stream. Ties in ``max_final``/``min_final`` keep
the earlier value.

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

from typing import Any, Callable

from ..errors import ConfigError
from ..logic import DISCARD, RETAIN, StatefulLogic
from ._base import FieldSpec, OperatorBuilder, field_getter, identity

_NOTHING = ()


class FoldFinalLogic(StatefulLogic):
    """``acc = folder(acc, value)`` per value; emits ``acc`` at EOF.

    Snapshot: ``(acc,)`` (a 1-tuple, so an accumulator of None survives).
    """

    def __init__(self, config, resume=None):
        builder, self.folder = config
        self.acc = resume[0] if resume is not None else builder()

    def on_item(self, value):
        self.acc = self.folder(self.acc, value)
        return _NOTHING, RETAIN

    def on_eof(self):
        return [self.acc], DISCARD

    def snapshot(self):
        return (self.acc,)


class ReduceFinalLogic(StatefulLogic):
    """The first value is the accumulator; ``reducer(acc, value)`` after that."""

    def __init__(self, reducer, resume=None):
        self.reducer = reducer
        self.acc = resume  # a 1-tuple once a value arrived

    def on_item(self, value):
        acc = self.acc
        self.acc = (value,) if acc is None else (self.reducer(acc[0], value),)
        return _NOTHING, RETAIN

    def on_eof(self):
        return ([self.acc[0]] if self.acc is not None else _NOTHING), DISCARD

    def snapshot(self):
        return self.acc


class CountFinalLogic(StatefulLogic):
    """Counts values; emits the count at EOF."""

    def __init__(self, _config=None, resume=None):
        self.count = resume or 0

    def on_item(self, value):
        self.count += 1
        return _NOTHING, RETAIN

    def on_eof(self):
        return [self.count], DISCARD

    def snapshot(self):
        return self.count


class ExtremeFinalLogic(StatefulLogic):
    """Keeps the max (``sign=1``) or min (``sign=-1``) value by ``by(value)``;
    a tie keeps the earlier value."""

    def __init__(self, config, resume=None):
        self.by, self.sign = config
        self.best = resume  # (value,) once a value arrived

    def on_item(self, value):
        best = self.best
        if best is None:
            self.best = (value,)
        else:
            new, old = self.by(value), self.by(best[0])
            if (new > old) if self.sign > 0 else (new < old):
                self.best = (value,)
        return _NOTHING, RETAIN

    def on_eof(self):
        return ([self.best[0]] if self.best is not None else _NOTHING), DISCARD

    def snapshot(self):
        return self.best


def fold_final(builder: Callable[[], Any], folder: Callable[[Any, Any], Any]) -> OperatorBuilder:
    """``builder()`` makes a key's empty accumulator, ``folder(acc, value)``
    combines each value into it; the accumulator is emitted at EOF."""
    if not callable(builder) or not callable(folder):
        raise ConfigError("fold_final needs callables builder() and folder(acc, value)")
    return OperatorBuilder("fold_final", FoldFinalLogic, (builder, folder))


def reduce_final(reducer: Callable[[Any, Any], Any]) -> OperatorBuilder:
    """``reducer(acc, value)`` over a key's values (the first value starts the
    accumulator); emitted at EOF."""
    if not callable(reducer):
        raise ConfigError(f"reduce_final needs a callable reducer, got {reducer!r}")
    return OperatorBuilder("reduce_final", ReduceFinalLogic, reducer)


def count_final() -> OperatorBuilder:
    """The number of values per key, emitted at EOF."""
    return OperatorBuilder("count_final", CountFinalLogic, None)


def max_final(by: FieldSpec = None) -> OperatorBuilder:
    """The largest value per key (compared by ``by``: a field name or a
    callable; default the value itself), emitted at EOF. Ties keep the earlier."""
    return OperatorBuilder("max_final", ExtremeFinalLogic,
                           (field_getter(by, "by") or identity, 1))


def min_final(by: FieldSpec = None) -> OperatorBuilder:
    """The smallest value per key (see ``max_final``), emitted at EOF."""
    return OperatorBuilder("min_final", ExtremeFinalLogic,
                           (field_getter(by, "by") or identity, -1))


