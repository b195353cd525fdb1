"""What each field of a ``sparkwax.step.Step`` must be: the checks and
conversions ``Step.__post_init__`` runs field by field (the builder, its
processing deadlines, ``order_by``, ``ttl``), each a ConfigError or
BuilderError naming the step.

>>> order_fields("id", "s"), order_fields(None, "s")
(('id',), ())
>>> order_fields(5, "s")
Traceback (most recent call last):
...
sparkwax.errors.ConfigError: step 's': order_by must name fields, got 5 (a name, a list of names or, offline, a callable)
"""

from __future__ import annotations

import pickle
from typing import Any, Callable, Optional, Sequence, Tuple, Union

from .builders import Duration, OperatorBuilder
from .errors import BuilderError, ConfigError
from .expiry import Ttl, step_ttl
from .limits import StateLimitBuilder
from .logic import overrides_notify_at
from .timers import EventTime, TimeMode

OrderBy = Union[Tuple[str, ...], Callable[[Any], Any]]
"""A Step's ``order_by``: field names (every host) or, offline only, a callable."""
OrderBySpec = Union[None, str, Sequence[str], Callable[[Any], Any]]
"""``order_by=`` as the entry points take it: a name, names, or a callable (offline)."""

TtlSpec = Union[None, Duration, Ttl]
"""``ttl=``: a duration (``"30 minutes"``, a timedelta) or a ``Ttl``."""
DEADLINE_METHOD = "processing_notify_at"


def check_deadlines(step_id: str, time: TimeMode, logic_name: str) -> None:
    """Processing deadlines need an EventTime step (one clock otherwise)."""
    if not isinstance(time, EventTime):
        raise ConfigError(
            f"step {step_id!r}: {logic_name} has processing_notify_at(), a processing-time "
            f"deadline beside notify_at(); that needs an EventTime step. In a "
            f"ProcessingTime step there is one clock: use notify_at()")


def uses_deadlines(builder: Any, sample: bool = False) -> Optional[bool]:
    """Whether ``builder``'s logics have processing deadlines: their class
    overrides ``processing_notify_at`` (checked on the class, like
    ``overrides_notify_at``; through the ttl and state-limit wrappers, which
    forward it). None for a builder that is not a class or an operator,
    unless ``sample``: then it builds one sample logic (if that raises, the
    error comes at the first activation, and the answer is False).

    >>> from sparkwax.testing.reference import Counter
    >>> uses_deadlines(Counter), uses_deadlines(lambda resume: Counter(resume))
    (False, None)
    """
    inner = builder
    while not isinstance(inner, type):
        if isinstance(inner, OperatorBuilder):
            wrapped = getattr(inner.logic, "wrapped_builder", None)
            if wrapped is None:
                return overrides_notify_at(inner.logic, DEADLINE_METHOD)
            inner = wrapped(inner.config)
        elif isinstance(inner, StateLimitBuilder):
            inner = inner.builder
        elif not sample:
            return None
        else:
            try:
                built = inner(None)
            except Exception:
                return False
            return logic_has_deadlines(built)
    return overrides_notify_at(inner, DEADLINE_METHOD)


def logic_has_deadlines(logic: Any) -> bool:
    """Whether a built logic (through the ttl and state-limit wrappers) has
    its own ``processing_notify_at``."""
    while getattr(type(logic), "forwards_deadlines", False):
        logic = logic.inner
    return overrides_notify_at(type(logic), DEADLINE_METHOD)


def builder_name(builder: Any) -> str:
    """What a default step id calls a builder."""
    return getattr(builder, "__qualname__", None) or type(builder).__name__


def check_builder(step_id: str, builder: Any) -> None:
    """A builder must be callable and picklable (Spark ships it to every
    executor with cloudpickle): checked once per step, on every host."""
    if not callable(builder):
        raise BuilderError(step_id, None, "builder", builder, "builder is not callable")
    try:
        import cloudpickle  # a dependency; a bare executor (the shipped zip) never builds Steps
    except ImportError:
        return
    try:
        cloudpickle.dumps(builder, protocol=pickle.DEFAULT_PROTOCOL)
    except Exception as error:
        raise BuilderError(step_id, None, "builder", builder,
                           f"the builder cannot be pickled ({error!r}); Spark ships it to "
                           f"every executor, so it may not hold locks, open files, "
                           f"connections or generators: build those in the logic") from None


def order_fields(order_by: Any, step_id: str) -> OrderBy:
    """``order_by`` as a tuple of field names, a callable, or () for none."""
    if order_by is None or order_by == ():
        return ()
    if callable(order_by):
        key: Callable[[Any], Any] = order_by
        return key
    names: Tuple[Any, ...] = ()
    if isinstance(order_by, str):
        names = (order_by,)
    elif isinstance(order_by, (list, tuple)):
        names = tuple(order_by)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ConfigError(f"step {step_id!r}: order_by must name fields, got {order_by!r} (a "
                          f"name, a list of names or, offline, a callable)")
    return names


def ttl_spec(ttl: TtlSpec, step_id: str, time: TimeMode, batch: bool,
             value: Optional[str]) -> Optional[Ttl]:
    """A step's ``ttl=`` as a :class:`Ttl`, checked against the step."""
    if ttl is None:
        return None
    spec = ttl if isinstance(ttl, Ttl) else Ttl(ttl)
    if batch:
        raise ConfigError(f"step {step_id!r}: ttl= works for a StatefulLogic, not a "
                          "StatefulBatchLogic (whose state is the whole on_batch call)")
    if isinstance(time, EventTime) and value is not None and isinstance(spec.ts, str) \
            and spec.ts == Ttl.__dataclass_fields__["ts"].default:
        raise ConfigError(
            f"step {step_id!r}: ttl= measures idle time on the event-time column "
            f"{time.column!r}, but with value={value!r} the logic gets that column's "
            f"scalar only; drop value= (the logic then gets a dict of the columns)")
    try:
        step_ttl(lambda resume: None, spec, time)  # a bad duration or flush fails here
    except ConfigError as error:
        raise ConfigError(f"step {step_id!r}: {error}") from None
    return spec


__all__ = ["DEADLINE_METHOD", "OrderBy", "OrderBySpec", "TtlSpec", "builder_name", "check_builder",
           "check_deadlines", "logic_has_deadlines", "order_fields", "ttl_spec", "uses_deadlines"]
