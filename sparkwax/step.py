"""The Step: one frozen value holding everything about a step, validated once.

Every entry point (``sparkwax.stateful``/``stateful_batch``/``connect``/
``join``, ``finish``, ``run``, ``run_bounded``, ``Runner``, ``check_logic``)
builds a Step with :meth:`Step.of` and hands it to the driver
(``sparkwax._driver.Driver``), which applies its ``ttl``, state limit and
sides itself. So every check runs on every host, from this one place.

>>> from sparkwax.testing.reference import Counter
>>> step = Step.of(Counter, ttl="30 minutes")
>>> step.step_id, step.time, step.ttl.after
('stateful:Counter', ProcessingTime(), '30 minutes')
>>> Step.of(Counter, time="event")
Traceback (most recent call last):
...
sparkwax.errors.ConfigError: step 'stateful:Counter': time must be ProcessingTime() or EventTime(...), got 'event'
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional, Sequence, Tuple, Union

from .builders import Duration, OperatorBuilder
from .errors import BuilderError, ConfigError
from .expiry import Ttl, step_ttl
from .limits import StateLimitBuilder, with_state_limit
from .logic import Builder, overrides_notify_at
from .sides import Sides
from .timers import EventTime, ProcessingTime, TimeMode

OrderBy = Union[Tuple[str, ...], Callable[[Any], Any]]
"""``order_by``: field names (every host) or, offline only, a callable."""

TtlSpec = Union[None, Duration, Ttl]
DEADLINE_METHOD = "processing_notify_at"


@dataclass(frozen=True)
class Step:
    """Everything about one step. Build it with :meth:`Step.of`.

    ``builder``: the user's builder, as given (the driver wraps it for ``ttl``
    and ``max_state_bytes``: :meth:`logic_builder`); ``time``: the time mode;
    ``batch``: a ``StatefulBatchLogic`` (``on_batch``); ``order_by``: field
    names, a callable (offline only) or ``()``; ``ttl``: idle expiry;
    ``max_state_bytes``: the cap on a key's stored state; ``sides``: the
    inputs of a connected step; ``value``: on Spark, the one column whose
    scalar the logic gets; ``output_schema``: DDL or a StructType, where known;
    ``two_clocks``: an ``EventTime`` step whose logic also has processing
    deadlines (``processing_notify_at``; see :func:`uses_deadlines`); None
    while unknown (a builder function: the driver learns it from the first
    logic it builds, a Spark plan from a sample, :meth:`knowing_deadlines`).
    """

    builder: Builder
    step_id: str
    time: TimeMode = ProcessingTime()
    batch: bool = False
    order_by: OrderBy = ()
    ttl: Optional[Ttl] = None
    max_state_bytes: Optional[int] = None
    sides: Optional[Sides] = None
    value: Optional[str] = None
    output_schema: Any = None
    two_clocks: Optional[bool] = False

    @classmethod
    def of(cls, builder: Union[Builder, Any], *, step_id: Optional[str] = None,
           time: Optional[TimeMode] = None, batch: bool = False,
           order_by: Union[None, str, Sequence[str], Callable[[Any], Any]] = None,
           ttl: TtlSpec = None, max_state_bytes: Optional[int] = None,
           sides: Union[None, Sides, Sequence[Any]] = None, value: Optional[str] = None,
           output_schema: Any = None, kind: str = "") -> "Step":
        """A validated Step. ``builder`` is a :class:`~sparkwax.logic.Builder`
        (typed ``Builder | Any``: anything else is refused here, at run time,
        with an error naming the step). ``step_id`` defaults to
        ``<kind>:<builder name>`` (``kind``: ``stateful``, ``stateful_batch``,
        ``finish``...); ``sides`` defaults to an operator builder's own (a
        ``joiner``)."""
        if isinstance(builder, Step):
            raise ConfigError("Step.of takes a builder; it was given a Step")
        name = step_id or f"{kind or ('stateful_batch' if batch else 'stateful')}:" \
                          f"{builder_name(builder)}"
        if not isinstance(name, str) or not name:
            raise ConfigError(f"step_id must be a non-empty string, got {step_id!r}")
        check_builder(name, builder)
        time = ProcessingTime() if time is None else time
        if not isinstance(time, (ProcessingTime, EventTime)):
            raise ConfigError(f"step {name!r}: time must be ProcessingTime() or "
                              f"EventTime(...), got {time!r}")
        if not isinstance(batch, bool):
            raise ConfigError(f"step {name!r}: batch must be a bool, got {batch!r}")
        if max_state_bytes is not None and (not isinstance(max_state_bytes, int) or isinstance(
                max_state_bytes, bool) or max_state_bytes < 1):
            raise ConfigError(f"step {name!r}: max_state_bytes must be a positive int "
                              f"(bytes), got {max_state_bytes!r}")
        if sides is None and isinstance(builder, OperatorBuilder) and builder.sides is not None:
            sides = builder.sides
        if sides is not None and not isinstance(sides, Sides):
            try:
                sides = Sides(tuple(sides))
            except ConfigError as error:
                raise ConfigError(f"step {name!r}: {error}") from None
        two_clocks = uses_deadlines(builder)
        if two_clocks:
            check_deadlines(name, time, builder_name(builder))
        return cls(builder=builder, step_id=name, time=time, batch=batch,
                   order_by=order_fields(order_by, name), ttl=ttl_spec(ttl, name, time, batch,
                                                                        value),
                   max_state_bytes=max_state_bytes, sides=sides, value=value,
                   output_schema=output_schema, two_clocks=two_clocks)

    def but(self, **changes: Any) -> "Step":
        """A copy with some fields changed (a host's own ``step_id``...)."""
        return replace(self, **changes)

    @property
    def uses_watermark(self) -> bool:
        """Whether ``now`` is the watermark (EventTime) or the processing time."""
        return isinstance(self.time, EventTime)

    def logic_builder(self) -> Callable[[Any], Any]:
        """The builder the driver calls: the user's, with ``ttl`` and
        ``max_state_bytes`` applied (the same on every host)."""
        built: Callable[[Any], Any] = self.builder
        if self.ttl is not None:
            built = step_ttl(built, self.ttl, self.time)
        if self.max_state_bytes is not None:
            built = with_state_limit(built, self.max_state_bytes)
        return built

    def knowing_deadlines(self) -> "Step":
        """This step with ``two_clocks`` known (a Spark plan needs it before
        any logic runs): a builder function builds one sample logic."""
        if self.two_clocks is not None:
            return self
        found = uses_deadlines(self.builder, sample=True)
        if found:
            check_deadlines(self.step_id, self.time, builder_name(self.builder))
        return self.but(two_clocks=bool(found))

    def uses_timers(self) -> bool:
        """Whether the step's logic may ask for timers (its class overrides
        ``notify_at``, or ``ttl=`` sets one): steps without timers run with
        Spark's ``NoTimeout``. Builds one sample logic for a builder that is
        not a class."""
        if self.ttl is not None:
            return True
        builder = self.builder
        if isinstance(builder, type):
            return overrides_notify_at(builder)
        try:
            sample = builder(None)
        except Exception as error:
            raise BuilderError.sampling(self.step_id, builder_name(builder),
                                        "whether it uses timers", error) from error
        return overrides_notify_at(type(sample))


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
    if order_by is None:
        return ()
    if callable(order_by):
        key: Callable[[Any], Any] = order_by
        return key
    names = (order_by,) if isinstance(order_by, str) else tuple(order_by)
    if not names or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"step {step_id!r}: order_by must name fields, got {order_by!r}")
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
    step_ttl(lambda resume: None, spec, time)  # a bad duration or flush fails here
    return spec


__all__ = ["OrderBy", "Step", "builder_name", "check_builder", "order_fields", "ttl_spec",
           "check_deadlines", "logic_has_deadlines", "uses_deadlines"]
