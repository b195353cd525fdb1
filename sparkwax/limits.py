"""Per-key state limits: a cap on a key's state size (a step's
``max_state_bytes=``, applied by the driver from the ``sparkwax.step.Step``).

``with_state_limit(builder, max_bytes)`` wraps any logic (``StatefulLogic``
or ``StatefulBatchLogic``) without changing its snapshot: when a key's state
is stored (once per activation), its pickled size is measured, and a state
over ``max_bytes`` fails the step with :class:`StateTooLarge`, which the
engine reports with the step, the key and the sizes. The cost is one more
pickle of the state per activation.

>>> from sparkwax.testing import Batch, run
>>> from sparkwax.operators import fold
>>> growing = fold(list, lambda acc, v: acc + [v])
>>> words = [("k", letter * 50) for letter in "abcd"]
>>> [len(w) for w in run(with_state_limit(growing, 200), [Batch(words[:3])]).snapshots["k"][0]]
[50, 50, 50]
>>> run(with_state_limit(growing, 200), [Batch(words)])
Traceback (most recent call last):
...
sparkwax.errors.CallbackError: step 'stateful:with_state_limit(fold)', key 'k', snapshot: snapshot() raised StateTooLarge('the state is 235 bytes pickled, over max_bytes=200; ...')
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, List, Optional, Tuple, Type, Union

from . import recovery
from .errors import ConfigError, SparkwaxError
from .logic import (BatchLogic, Builder, ItemLogic, Logic, StatefulBatchLogic, StatefulLogic,
                    forward_deadline, forward_processing_notify, overrides_notify_at)


class StateTooLarge(SparkwaxError):
    """A key's state is larger than the step's ``max_state_bytes``
    (``with_state_limit``). Attributes: ``size``, ``max_bytes``."""

    def __init__(self, size: int, max_bytes: int) -> None:
        self.size, self.max_bytes = size, max_bytes
        super().__init__(
            f"the state is {size:,} bytes pickled, over max_bytes={max_bytes:,}; let the logic "
            f"forget more (discard finished keys, cap its lists), expire idle keys with "
            f"ttl=, or raise the limit")

    def __reduce__(self) -> Tuple[Type[StateTooLarge], Tuple[int, int]]:
        return (StateTooLarge, (self.size, self.max_bytes))


class Limited:
    """What both wrappers share: delegate to the inner logic, measure the
    snapshot. The snapshot is the inner logic's, unchanged."""

    inner: Logic
    forwards_deadlines = True  # see sparkwax.step_fields.uses_deadlines

    def __init__(self, inner: Logic, max_bytes: int) -> None:
        self.inner = inner
        self.max_bytes = max_bytes

    def processing_notify_at(self) -> Optional[datetime]:
        return forward_deadline(self.inner)

    def on_processing_notify(self) -> Tuple[Iterable[Any], bool]:
        return forward_processing_notify(self.inner)

    def on_notify(self) -> Tuple[Iterable[Any], bool]:
        return self.inner.on_notify()

    def on_eof(self) -> Tuple[Iterable[Any], bool]:
        return self.inner.on_eof()

    def snapshot(self) -> Any:
        snapshot = self.inner.snapshot()
        size = len(recovery.encode(snapshot, step_id="max_state_bytes", key=None))
        if size > self.max_bytes:
            raise StateTooLarge(size, self.max_bytes)
        return snapshot


class LimitedLogic(Limited, StatefulLogic):
    inner: ItemLogic

    def on_item(self, value: Any) -> Tuple[Iterable[Any], bool]:
        return self.inner.on_item(value)


class LimitedTimedLogic(LimitedLogic):
    def notify_at(self) -> Optional[datetime]:
        return self.inner.notify_at()


class LimitedBatchLogic(Limited, StatefulBatchLogic):
    inner: BatchLogic

    def on_batch(self, values: List[Any]) -> Tuple[Iterable[Any], bool]:
        return self.inner.on_batch(values)


class LimitedTimedBatchLogic(LimitedBatchLogic):
    def notify_at(self) -> Optional[datetime]:
        return self.inner.notify_at()


class StateLimitBuilder:
    """``builder(resume)`` of ``with_state_limit``: the inner logic in a
    wrapper that keeps Spark's ``NoTimeout`` for logics without timers."""

    def __init__(self, builder: Builder, max_bytes: int) -> None:
        self.builder = builder
        self.max_bytes = max_bytes
        name = getattr(builder, "__qualname__", None) or type(builder).__name__
        self.__qualname__ = f"with_state_limit({name})"

    def __call__(self, resume: Any = None) -> Union[LimitedLogic, LimitedBatchLogic]:
        inner = self.builder(resume)
        timed = overrides_notify_at(type(inner))
        wrapper: Union[Type[LimitedLogic], Type[LimitedBatchLogic]]
        if callable(getattr(inner, "on_item", None)):
            wrapper = LimitedTimedLogic if timed else LimitedLogic
        else:
            wrapper = LimitedTimedBatchLogic if timed else LimitedBatchLogic
        return wrapper(inner, self.max_bytes)

    def __repr__(self) -> str:
        return f"<sparkwax operator {self.__qualname__}>"


def with_state_limit(builder: Builder, max_bytes: int) -> StateLimitBuilder:
    """Fail the step with :class:`StateTooLarge` when a key's state, pickled,
    is over ``max_bytes`` when it is stored (once per activation). The
    snapshot format is the inner logic's: the limit can be added to, changed
    on or removed from a running query's checkpoint."""
    if not callable(builder):
        raise ConfigError(f"with_state_limit needs a builder, got {builder!r}")
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
        raise ConfigError(f"max_state_bytes must be a positive int (bytes), got {max_bytes!r}")
    return StateLimitBuilder(builder, max_bytes)


__all__ = ["Limited", "StateLimitBuilder", "StateTooLarge", "with_state_limit"]
