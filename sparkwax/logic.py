"""The user-facing logic API, with Bytewax's exact names and defaults.

A logic object holds the state of one key. sparkwax builds it with
``builder(resume_state)`` (``None`` for a new key), feeds it values, asks it
when it wants to be notified and snapshots it after every activation.

>>> class Count(StatefulLogic):
...     def __init__(self, resume=None):
...         self.n = resume or 0
...     def on_item(self, value):
...         self.n += 1
...         return [self.n], RETAIN
...     def snapshot(self):
...         return self.n
>>> logic = Count(None)
>>> logic.on_item("x"), logic.on_item("y"), logic.snapshot()
(([1], False), ([2], False), 2)
>>> logic.on_eof(), logic.notify_at()
(((), False), None)

Any object with these methods is accepted (duck typing), so a
``bytewax.operators.StatefulLogic`` subclass runs unchanged.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Callable, Generic, Iterable, List, Optional, Tuple, TypeVar

V = TypeVar("V")  # values in
W = TypeVar("W")  # values out
S = TypeVar("S")  # snapshot

RETAIN: bool = False
"""Keep this key's logic (and its state) after the callback returns."""

DISCARD: bool = True
"""Drop this key's logic and its stored state after the callback returns."""

_EMPTY: Tuple[()] = ()


class _LogicDefaults(ABC, Generic[V, W, S]):
    """What StatefulLogic and StatefulBatchLogic share: timers, EOF, snapshot."""

    RETAIN: bool = RETAIN
    DISCARD: bool = DISCARD

    def on_notify(self) -> Tuple[Iterable[W], bool]:
        """The time returned by ``notify_at`` has passed."""
        return (_EMPTY, RETAIN)

    def on_eof(self) -> Tuple[Iterable[W], bool]:
        """The input ended (bounded input, or ``sparkwax.finish``)."""
        return (_EMPTY, RETAIN)

    def notify_at(self) -> Optional[datetime]:
        """The next time to call ``on_notify`` (aware datetime), or None."""
        return None

    @abstractmethod
    def snapshot(self) -> S:
        """An immutable, picklable copy of the state, passed to the builder."""


class StatefulLogic(_LogicDefaults[V, W, S]):
    """Per-key logic fed one value at a time.

    Call order in one activation: ``on_notify`` (if the timer is due), then
    ``on_item`` per value, then ``on_eof`` (bounded input or ``finish``), then
    ``notify_at`` and ``snapshot`` if the logic is retained.
    """

    @abstractmethod
    def on_item(self, value: V) -> Tuple[Iterable[W], bool]:
        """Handle one value; return ``(emits, discard)``."""


class StatefulBatchLogic(_LogicDefaults[V, W, S]):
    """Per-key logic fed all of an activation's values at once (``on_batch``)."""

    @abstractmethod
    def on_batch(self, values: List[V]) -> Tuple[Iterable[W], bool]:
        """Handle the activation's values, in order; return ``(emits, discard)``."""


Builder = Callable[[Optional[S]], StatefulLogic]
"""``builder(resume_state_or_None) -> logic``: how sparkwax makes a key's logic."""


def overrides_notify_at(logic_type: type) -> bool:
    """True when a logic class defines its own ``notify_at`` (it may use timers).

    >>> class NoTimer(StatefulLogic):
    ...     def on_item(self, v): return (), RETAIN
    ...     def snapshot(self): return None
    >>> overrides_notify_at(NoTimer)
    False
    """
    for klass in logic_type.__mro__:
        if "notify_at" in vars(klass):
            module = getattr(klass, "__module__", "") or ""
            is_base = klass.__name__ in ("StatefulLogic", "StatefulBatchLogic",
                                         "_LogicDefaults") and (
                module.startswith("sparkwax.") or module.startswith("bytewax.")
            )
            return not is_base
    return False
