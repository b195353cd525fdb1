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
``bytewax.operators.StatefulLogic`` subclass runs unchanged; type checkers
see the same rule through the protocols ``ItemLogic`` and ``BatchLogic``, and
``Builder`` is any callable that makes one of them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import (TYPE_CHECKING, Any, Generic, Iterable, List, Optional, Protocol, Tuple,
                    Union, cast)

if TYPE_CHECKING:
    # PEP 696 defaults (typing has them from Python 3.13): a bare ``StatefulLogic``
    # or ``Builder`` means ``[Any, Any, Any]``, also to ``mypy --strict``.
    from typing_extensions import TypeVar
else:
    from typing import TypeVar as _TypeVar

    def TypeVar(name, *constraints, default=None, **options):
        """``typing.TypeVar`` minus ``default``, which only type checkers read."""
        return _TypeVar(name, *constraints, **options)

V = TypeVar("V", default=Any)  # values in
W = TypeVar("W", default=Any)  # values out
S = TypeVar("S", default=Any)  # snapshot
# The same, with the variance the protocols below need: a logic that accepts any
# value will do where one of ints is expected, one that emits ints where one of
# objects is expected.
V_contra = TypeVar("V_contra", contravariant=True, default=Any)
W_co = TypeVar("W_co", covariant=True, default=Any)
S_co = TypeVar("S_co", covariant=True, default=Any)

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

    def processing_notify_at(self) -> Optional[datetime]:
        """A wall-clock deadline (aware datetime) for ``on_processing_notify``,
        or None. Only in an ``EventTime`` step, beside ``notify_at``'s
        event-time timer (sparkwax only; Bytewax has no such method)."""
        return None

    def on_processing_notify(self) -> Tuple[Iterable[W], bool]:
        """The processing time passed ``processing_notify_at``."""
        return (_EMPTY, RETAIN)

    @abstractmethod
    def snapshot(self) -> S:
        """An immutable, picklable copy of the state, passed to the builder."""


class StatefulLogic(_LogicDefaults[V, W, S]):
    """Per-key logic fed one value at a time.

    Call order in one activation: ``on_notify`` (if the timer is due), then
    ``on_processing_notify`` (if a processing deadline is due, ``EventTime``
    steps only), then ``on_item`` per value, then ``on_eof`` (bounded input or ``finish``), then
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


class _Callbacks(Protocol[W_co, S_co]):
    """The methods both kinds of logic have (Bytewax's defaults for all but snapshot)."""

    def on_notify(self) -> Tuple[Iterable[W_co], bool]: ...

    def on_eof(self) -> Tuple[Iterable[W_co], bool]: ...

    def notify_at(self) -> Optional[datetime]: ...

    def snapshot(self) -> S_co: ...


class ItemLogic(_Callbacks[W_co, S_co], Protocol[V_contra, W_co, S_co]):
    """Any object with ``StatefulLogic``'s methods, whatever its class: a
    ``StatefulLogic`` subclass, a Bytewax ``StatefulLogic`` or a plain class."""

    def on_item(self, value: V_contra, /) -> Tuple[Iterable[W_co], bool]: ...


class BatchLogic(_Callbacks[W_co, S_co], Protocol[V, W_co, S_co]):
    """Any object with ``StatefulBatchLogic``'s methods (``on_batch``, not ``on_item``)."""

    def on_batch(self, values: List[V], /) -> Tuple[Iterable[W_co], bool]: ...


Logic = Union[ItemLogic[V, W, S], BatchLogic[V, W, S]]
"""A key's logic, of either kind (a step's ``batch`` option says which)."""


class Builder(Protocol[V, W_co, S]):
    """``builder(resume_state_or_None) -> logic``: how sparkwax makes a key's logic.

    A logic class is its own builder (``builder=Session``), and so is any
    callable that takes the snapshot (None for a new key) and returns a logic
    of either kind. ``Builder[V, W, S]`` builds ``Logic[V, W, S]``; a bare
    ``Builder`` is ``Builder[Any, Any, Any]``.
    """

    def __call__(self, resume_state: Optional[S], /) -> Logic[V, W_co, S]: ...


if TYPE_CHECKING:  # mypy checks that the base classes are logic objects; nothing runs
    def _conforms(item: StatefulLogic[V, W, S], batch: StatefulBatchLogic[V, W, S]
                  ) -> Tuple[ItemLogic[V, W, S], BatchLogic[V, W, S]]:
        return item, batch


def forward_deadline(inner: Any) -> Optional[datetime]:
    """``inner.processing_notify_at()``, or None for a logic without it (a
    Bytewax logic): what a wrapper logic (ttl, state limit) forwards."""
    method = getattr(inner, "processing_notify_at", None)
    return None if method is None else cast(Optional[datetime], method())


def forward_processing_notify(inner: Any) -> Tuple[Iterable[Any], bool]:
    """``inner.on_processing_notify()`` (the default for a logic without it)."""
    method = getattr(inner, "on_processing_notify", None)
    return (_EMPTY, RETAIN) if method is None else cast(Tuple[Iterable[Any], bool], method())


def overrides_notify_at(logic_type: type, method: str = "notify_at") -> bool:
    """True when a logic class defines its own ``notify_at`` (it may use timers),
    or its own ``method`` (``"processing_notify_at"``: processing deadlines).

    >>> class NoTimer(StatefulLogic):
    ...     def on_item(self, v): return (), RETAIN
    ...     def snapshot(self): return None
    >>> overrides_notify_at(NoTimer), overrides_notify_at(NoTimer, "processing_notify_at")
    (False, False)
    """
    for klass in logic_type.__mro__:
        if method in vars(klass):
            module = getattr(klass, "__module__", "") or ""
            is_base = klass.__name__ in ("StatefulLogic", "StatefulBatchLogic",
                                         "_LogicDefaults") and (
                module.startswith("sparkwax.") or module.startswith("bytewax.")
            )
            return not is_base
    return False
