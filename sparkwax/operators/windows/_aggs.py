"""What a window holds: the aggregations of the window operators (internal).

A window is ``[open_time, close_time, count, acc]``; an aggregation says how
``acc`` starts, takes a value, merges with a later-opened window (sessions)
and what it emits. ``add``/``merge`` return ``(acc, emits-now)``; ``close``
returns the final emits.

>>> agg = Reduce(max)
>>> acc, _ = agg.add(agg.start(), 0, 3)
>>> acc, _ = agg.add(acc, 1, 7)
>>> agg.close(acc, 2)
[7]
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, List, Optional, Protocol, Tuple

from ...errors import ConfigError
from ..joins import (JoinConfig, Seen, join_complete, join_empty, join_insert, join_merge,
                     join_rows)

_NOTHING: Tuple[()] = ()
Step = Tuple[Any, Iterable[Any]]
"""What ``add`` and ``merge`` return: the new accumulator and the emits now."""


class Agg(Protocol):
    """What every aggregation here has (a window's ``acc`` is whatever ``start`` makes)."""

    def start(self) -> Any: ...

    def add(self, acc: Any, count: int, value: Any) -> Step: ...

    def merge(self, older: Any, older_count: int, newer: Any, newer_count: int) -> Step: ...

    def close(self, acc: Any, count: int) -> List[Any]: ...


class Fold:
    def __init__(self, builder: Callable[[], Any], folder: Callable[[Any, Any], Any],
                 merger: Optional[Callable[[Any, Any], Any]]) -> None:
        self.builder, self.folder, self.merger = builder, folder, merger

    def start(self) -> Any:
        return self.builder()

    def add(self, acc: Any, count: int, value: Any) -> Step:
        return self.folder(acc, value), _NOTHING

    def merge(self, older: Any, older_count: int, newer: Any, newer_count: int) -> Step:
        if self.merger is None:
            raise ConfigError("fold_window over session windows needs merger= to combine "
                              "the accumulators of two sessions that merge")
        return self.merger(older, newer), _NOTHING

    def close(self, acc: Any, count: int) -> List[Any]:
        return [acc]


class Count:
    def start(self) -> Any:
        return None

    def add(self, acc: Any, count: int, value: Any) -> Step:
        return None, _NOTHING

    def merge(self, older: Any, older_count: int, newer: Any, newer_count: int) -> Step:
        return None, _NOTHING

    def close(self, acc: Any, count: int) -> List[Any]:
        return [count]


class Collect:
    def start(self) -> Any:
        return []

    def add(self, acc: Any, count: int, value: Any) -> Step:
        acc.append(value)
        return acc, _NOTHING

    def merge(self, older: Any, older_count: int, newer: Any, newer_count: int) -> Step:
        return list(older) + list(newer), _NOTHING

    def close(self, acc: Any, count: int) -> List[Any]:
        return [acc]


class Reduce:
    def __init__(self, reducer: Callable[[Any, Any], Any]) -> None:
        self.reducer = reducer

    def start(self) -> Any:
        return None

    def add(self, acc: Any, count: int, value: Any) -> Step:
        return (value if count == 0 else self.reducer(acc, value)), _NOTHING

    def merge(self, older: Any, older_count: int, newer: Any, newer_count: int) -> Step:
        return self.reducer(older, newer), _NOTHING

    def close(self, acc: Any, count: int) -> List[Any]:
        return [acc]


class Extreme:
    """Max (``sign=1``) or min (``sign=-1``) by ``by``; ties keep the earlier."""

    def __init__(self, by: Callable[[Any], Any], sign: int) -> None:
        self.by, self.sign = by, sign

    def start(self) -> Any:
        return None

    def _pick(self, old: Any, new: Any) -> Any:
        a, b = self.by(old), self.by(new)
        return new if ((b > a) if self.sign > 0 else (b < a)) else old

    def add(self, acc: Any, count: int, value: Any) -> Step:
        return (value if count == 0 else self._pick(acc, value)), _NOTHING

    def merge(self, older: Any, older_count: int, newer: Any, newer_count: int) -> Step:
        return self._pick(older, newer), _NOTHING

    def close(self, acc: Any, count: int) -> List[Any]:
        return [acc]


class Sum:
    """The sum of ``by(value)``, skipping None (Spark's ``sum``); None when
    every value is None."""

    def __init__(self, by: Callable[[Any], Any]) -> None:
        self.by = by

    def start(self) -> Any:
        return None

    def add(self, acc: Any, count: int, value: Any) -> Step:
        number = self.by(value)
        if number is None:
            return acc, _NOTHING
        return (number if acc is None else acc + number), _NOTHING

    def merge(self, older: Any, older_count: int, newer: Any, newer_count: int) -> Step:
        if older is None:
            return newer, _NOTHING
        return (older if newer is None else older + newer), _NOTHING

    def close(self, acc: Any, count: int) -> List[Any]:
        return [acc]


class Mean:
    """The mean of ``by(value)`` as a float, skipping None (Spark's ``avg``);
    None when every value is None. ``acc``: ``(total, n)`` of the numbers."""

    def __init__(self, by: Callable[[Any], Any]) -> None:
        self.by = by

    def start(self) -> Any:
        return (0, 0)

    def add(self, acc: Any, count: int, value: Any) -> Step:
        number = self.by(value)
        if number is None:
            return acc, _NOTHING
        return (acc[0] + number, acc[1] + 1), _NOTHING

    def merge(self, older: Any, older_count: int, newer: Any, newer_count: int) -> Step:
        return (older[0] + newer[0], older[1] + newer[1]), _NOTHING

    def close(self, acc: Any, count: int) -> List[Any]:
        total, n = acc
        return [total / n if n else None]


class Join:
    def __init__(self, config: JoinConfig) -> None:
        self.config = config

    def start(self) -> Any:
        return join_empty(self.config)

    def _check(self, seen: Seen) -> Step:
        mode = self.config.emit_mode
        if mode == "complete" and join_complete(seen):
            rows = join_rows(seen)
            return join_empty(self.config), rows
        if mode == "running":
            return seen, join_rows(seen)
        return seen, _NOTHING

    def add(self, acc: Any, count: int, value: Any) -> Step:
        join_insert(self.config, acc, value)
        return self._check(acc)

    def merge(self, older: Any, older_count: int, newer: Any, newer_count: int) -> Step:
        return self._check(join_merge(self.config, older, newer))

    def close(self, acc: Any, count: int) -> List[Any]:
        return join_rows(acc) if self.config.emit_mode == "final" else []


class Ordered:
    """``inner`` applied in timestamp order (Bytewax's ``ordered=True``): a
    window buffers its values and, when it closes, replays them sorted by
    ``time_of`` (stable: ties keep arrival order) through ``inner``. Emits that
    ``inner`` makes per value (a running or complete join) come out then.

    >>> from datetime import datetime, timezone
    >>> at = lambda hour: {"ts": datetime(2024, 1, 1, hour, tzinfo=timezone.utc), "n": hour}
    >>> agg = Ordered(Collect(), lambda value: value["ts"])
    >>> acc = agg.start()
    >>> for count, value in enumerate([at(1), at(3), at(2)]):
    ...     acc, _ = agg.add(acc, count, value)
    >>> [v["n"] for v in agg.close(acc, 3)[0]]
    [1, 2, 3]
    """

    def __init__(self, inner: Agg, time_of: Callable[[Any], Any]) -> None:
        self.inner, self.time_of = inner, time_of
        self.pairs = isinstance(inner, Join)   # keep (side, value) as plain tuples

    def start(self) -> Any:
        return []

    def add(self, acc: Any, count: int, value: Any) -> Step:
        acc.append(tuple(value) if self.pairs else value)
        return acc, _NOTHING

    def merge(self, older: Any, older_count: int, newer: Any, newer_count: int) -> Step:
        return list(older) + list(newer), _NOTHING

    def close(self, acc: Any, count: int) -> List[Any]:
        inner = self.inner
        state = inner.start()
        emits: List[Any] = []
        for position, value in enumerate(sorted(acc, key=self.time_of)):
            state, now = inner.add(state, position, value)
            emits.extend(now)
        emits.extend(inner.close(state, count))
        return emits
