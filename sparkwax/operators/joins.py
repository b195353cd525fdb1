"""``join``: gather the values of a key from several inputs (Bytewax's join).

Sides are tagged and unioned into one keyed stream; one logic sees
``(side, value)`` items and emits tuples with one entry per side, in side
order:

- ``insert_mode``: ``"last"`` keeps the latest value per side, ``"first"`` the
  first, ``"product"`` all of them (emits the cross product).
- ``emit_mode``: ``"complete"`` emits once every side has a value, then
  discards the key's state; ``"final"`` emits at EOF (None for a missing
  side); ``"running"`` emits after every item (None for missing sides) and
  keeps the state.

``joiner(sides, ...)`` is the builder (offline, or with ``sparkwax.connect``);
``sparkwax.join(left_df, right_df, key=...)`` is the DataFrame version.

>>> from sparkwax.testing import Batch, Eof, run
>>> script = [Batch(tag(0, [("k", "a1")]) + tag(1, [("k", "b1"), ("j", "b2")])), Eof()]
>>> run(joiner(2), script).by_key
{'k': [('a1', 'b1')]}
>>> run(joiner(2, emit_mode="final"), script).by_key
{'j': [(None, 'b2')], 'k': [('a1', 'b1')]}
"""

from __future__ import annotations

import itertools
from typing import Any, Dict, Hashable, Iterable, List, Optional, Sequence, Tuple, Union

from ..errors import ConfigError
from ..logic import DISCARD, RETAIN, StatefulLogic
from ..builders import OperatorBuilder
from ..sides import tag  # noqa: F401  (tag is used in the doctest)

INSERT_MODES = ("first", "last", "product")
EMIT_MODES = ("complete", "final", "running")
_NOTHING: Tuple[()] = ()
_LONE_NONE: List[Any] = [None]
Seen = List[List[Any]]
"""A join's values so far: one list per side, in side order."""


class JoinConfig:
    """Sides (their tags, in order), insert and emit modes."""

    __slots__ = ("tags", "index", "insert_mode", "emit_mode")

    tags: Tuple[Hashable, ...]
    index: Dict[Hashable, int]

    def __init__(self, sides: Union[int, Sequence[Any]], insert_mode: str,
                 emit_mode: str) -> None:
        if insert_mode not in INSERT_MODES:
            raise ConfigError(f"unknown join insert mode {insert_mode!r}; use one of "
                             f"{INSERT_MODES}")
        if emit_mode not in EMIT_MODES:
            raise ConfigError(f"unknown join emit mode {emit_mode!r}; use one of {EMIT_MODES}")
        if isinstance(sides, int):
            if sides < 1:
                raise ConfigError(f"a join needs at least one side, got {sides}")
            tags = tuple(range(sides))
        else:
            tags = tuple(sides)
            if not tags or len(set(tags)) != len(tags):
                raise ConfigError(f"join sides must be distinct tags, got {sides!r}")
        self.tags = tags
        self.index = {t: i for i, t in enumerate(tags)}
        self.insert_mode = insert_mode
        self.emit_mode = emit_mode

    def side(self, item: Any) -> Tuple[int, Any]:
        """``(side index, value)`` of a ``(tag, value)`` item."""
        try:
            label, value = item
        except (TypeError, ValueError):
            raise TypeError(f"a join value must be a (side, value) pair, got {item!r}") from None
        try:
            return self.index[label], value
        except (KeyError, TypeError):
            raise ValueError(f"unknown join side {label!r}; the sides are "
                             f"{list(self.tags)}") from None

    def __getstate__(self) -> Tuple[Tuple[Hashable, ...], str, str]:
        return (self.tags, self.insert_mode, self.emit_mode)

    def __setstate__(self, state: Tuple[Tuple[Hashable, ...], str, str]) -> None:
        self.__init__(*state)  # type: ignore[misc]  # re-validates; no subclass overrides it


def join_empty(config: JoinConfig) -> Seen:
    return [[] for _ in config.tags]


def join_insert(config: JoinConfig, seen: Seen, item: Any) -> None:
    """Put one ``(side, value)`` item into the per-side lists."""
    index, value = config.side(item)
    mode = config.insert_mode
    if mode == "last":
        seen[index] = [value]
    elif mode == "first":
        if not seen[index]:
            seen[index] = [value]
    else:
        seen[index].append(value)


def join_merge(config: JoinConfig, older: Seen, newer: Seen) -> Seen:
    """Combine the per-side lists of two windows (older first)."""
    mode = config.insert_mode
    if mode == "first":
        return [list(a) if a else list(b) for a, b in zip(older, newer)]
    if mode == "last":
        return [list(b) if b else list(a) for a, b in zip(older, newer)]
    return [list(a) + list(b) for a, b in zip(older, newer)]


def join_rows(seen: Seen) -> List[Tuple[Any, ...]]:
    """The cross product of the sides (None for a side without values)."""
    return list(itertools.product(*(values if values else _LONE_NONE for values in seen)))


def join_complete(seen: Seen) -> bool:
    return all(seen)


class JoinLogic(StatefulLogic[Any, Tuple[Any, ...], Seen]):
    """Snapshot: a list of per-side value lists."""

    def __init__(self, config: JoinConfig, resume: Optional[Iterable[Iterable[Any]]] = None
                 ) -> None:
        self.config = config
        self.seen = [list(values) for values in resume] if resume is not None else \
            join_empty(config)

    def on_item(self, value: Any) -> Tuple[Iterable[Tuple[Any, ...]], bool]:
        join_insert(self.config, self.seen, value)
        mode = self.config.emit_mode
        if mode == "complete":
            if join_complete(self.seen):
                return join_rows(self.seen), DISCARD
            return _NOTHING, RETAIN
        if mode == "running":
            return join_rows(self.seen), RETAIN
        return _NOTHING, RETAIN

    def on_eof(self) -> Tuple[Iterable[Tuple[Any, ...]], bool]:
        if self.config.emit_mode == "final":
            return join_rows(self.seen), DISCARD
        return _NOTHING, RETAIN

    def snapshot(self) -> Seen:
        return [list(values) for values in self.seen]


def joiner(sides: Union[int, Sequence[Any]] = 2, *, insert_mode: str = "last",
           emit_mode: str = "complete") -> OperatorBuilder[Any, Tuple[Any, ...], Seen]:
    """The join logic's builder. ``sides`` is the number of sides (tags ``0``,
    ``1``, ...) or the sequence of their tags (e.g. ``("left", "right")``).
    Values are ``(tag, value)`` pairs (see ``tag``); emits are tuples in
    side order."""
    config = JoinConfig(sides, insert_mode, emit_mode)
    return OperatorBuilder("join", JoinLogic, config, sides=config.tags)
