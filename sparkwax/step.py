"""The Step: one frozen value holding everything about a step, valid by construction.

A Step is checked whenever one is made: ``Step(...)``, :meth:`Step.of`
(defaults and conversions first) and every copy (:meth:`Step.but`) go
through ``__post_init__``, so no Step holds a wrong time mode, a negative
limit or a builder Spark cannot ship: a wrong option is a ``ConfigError``
naming the step and the option. The step options are declared once, as
:class:`StepOptions` (docs/guide.md, "Step options", is their table). Every
entry point (``sparkwax.stateful``/``stateful_batch``/``connect``/``join``,
``finish``, ``run``, ``run_bounded``, ``Runner``, ``check_logic``,
``replay``, ``check_state``) takes a builder and those options, or a Step
itself (:func:`as_step`), and hands the Step to the driver
(``sparkwax._driver.Driver``), which applies its ``ttl``, state limit and
sides itself. So every check runs on every host.

A step's default id is ``stateful:<builder name>`` on every entry point, so
errors and metrics name the same step offline and on Spark.

>>> from sparkwax.testing.reference import Counter
>>> step = Step.of(Counter, ttl="30 minutes")
>>> step.step_id, step.time, step.ttl.after
('stateful:Counter', ProcessingTime(), '30 minutes')
>>> Step.of(Counter, time="event")
Traceback (most recent call last):
...
sparkwax.errors.ConfigError: step 'stateful:Counter': time must be ProcessingTime() or EventTime(...), got 'event'
>>> step.but(max_state_bytes=-5)
Traceback (most recent call last):
...
sparkwax.errors.ConfigError: step 'stateful:Counter': max_state_bytes must be a positive int (bytes), got -5
>>> Step(builder=Counter, step_id="x", order_by=5)
Traceback (most recent call last):
...
sparkwax.errors.ConfigError: step 'x': order_by must name fields, got 5 (a name, a list of names or, offline, a callable)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import (TYPE_CHECKING, Any, Callable, Dict, FrozenSet, Literal, Mapping, Optional,
                    Protocol, Sequence, Tuple, TypedDict, Union)

from .builders import OperatorBuilder
from .errors import BuilderError, ConfigError
from .expiry import Ttl, step_ttl
from .limits import with_state_limit
from .logic import Builder, overrides_notify_at
from .sides import Sides
from .step_fields import (OrderBy, OrderBySpec, TtlSpec, builder_name, check_builder,
                          check_deadlines, order_fields, ttl_spec, uses_deadlines)
from .timers import EventTime, ProcessingTime, TimeMode

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing has it from 3.11; mypy always has this

    from .schema import StructType

SidesSpec = Union[None, Sides, Sequence[Any]]
"""``sides=``: a connected step's side names (or a ``Sides``)."""
DEFAULT_KIND = "stateful"
"""A step's default id is ``stateful:<builder name>`` (:func:`default_step_id`)."""

Host = Literal["per_key", "packed"]
"""Where a step runs on Spark: one Spark group per key, or many keys per group."""
HOSTS: Tuple[Host, ...] = ("per_key", "packed")


class SparkStruct(Protocol):
    """A pyspark ``StructType`` (classic or Connect), as far as a Step reads it."""

    def jsonValue(self) -> Dict[str, Any]: ...


SchemaSpec = Union[str, "StructType", SparkStruct]
"""An output schema: DDL, a ``sparkwax.schema.StructType`` or a pyspark one."""


class StepOptions(TypedDict, total=False):
    """The step options, declared once: every entry point takes them as
    keywords (``**options: Unpack[StepOptions]``) and :meth:`Step.of` turns
    them into a Step, which checks them. None (or leaving one out) means the
    default. Their table: docs/guide.md, "Step options"."""

    step_id: Optional[str]
    time: Optional[TimeMode]
    batch: bool
    order_by: OrderBySpec
    value: Optional[str]
    ttl: TtlSpec
    max_state_bytes: Optional[int]
    sides: SidesSpec
    output_schema: Optional[SchemaSpec]


OPTIONS: Tuple[str, ...] = tuple(StepOptions.__annotations__)
"""The step options' names, in the table's order."""

Restore = Literal["always", "on_crash"]
"""``restore=`` of an offline run (``Runner``, ``run``, ``replay``)."""
RESTORE_MODES: Tuple[Restore, ...] = ("always", "on_crash")


@dataclass(frozen=True)
class Step:
    """Everything about one step, checked whenever a Step is made.

    ``builder``: the user's builder, as given (the driver wraps it for ``ttl``
    and ``max_state_bytes``: :meth:`logic_builder`); ``step_id``: its name in
    errors and metrics; ``time``: the time mode; ``batch``: a
    ``StatefulBatchLogic`` (``on_batch``); ``order_by``: field names, a
    callable (offline only) or ``()``; ``ttl``: idle expiry;
    ``max_state_bytes``: the cap on a key's stored state; ``sides``: the
    inputs of a connected step (default: an operator builder's own, a
    ``joiner``'s); ``value``: on Spark, the one column whose scalar the logic
    gets; ``output_schema``: where known; ``two_clocks``: an ``EventTime``
    step whose logic also has processing deadlines (``processing_notify_at``;
    see :func:`uses_deadlines`): found from the builder's class, None while
    unknown (a builder function: the driver learns it from the first logic it
    builds, a Spark plan from a sample, :meth:`knowing_deadlines`).

    ``order_by`` (a name or a list of names), ``ttl`` (a duration) and
    ``sides`` (a list of names) are also taken in their short forms and
    stored converted. :meth:`of` fills in the default ``step_id``.
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
    output_schema: Optional[SchemaSpec] = None
    two_clocks: Optional[bool] = None

    def __post_init__(self) -> None:
        name = self.step_id
        if not isinstance(name, str) or not name:
            raise ConfigError(f"step_id must be a non-empty string, got {name!r}")
        if isinstance(self.builder, Step):
            raise ConfigError(f"step {name!r}: builder must be a builder, it is a Step")
        check_builder(name, self.builder)
        time = self.time
        if not isinstance(time, (ProcessingTime, EventTime)):
            raise ConfigError(f"step {name!r}: time must be ProcessingTime() or "
                              f"EventTime(...), got {time!r}")
        if not isinstance(self.batch, bool):
            raise ConfigError(f"step {name!r}: batch must be a bool, got {self.batch!r}")
        limit = self.max_state_bytes
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)
                                  or limit < 1):
            raise ConfigError(f"step {name!r}: max_state_bytes must be a positive int "
                              f"(bytes), got {limit!r}")
        if self.value is not None and (not isinstance(self.value, str) or not self.value):
            raise ConfigError(f"step {name!r}: value must name one column, got {self.value!r}")
        schema = self.output_schema
        if isinstance(schema, str) and not schema.strip():
            raise ConfigError(f"step {name!r}: output_schema must not be empty")
        if schema is not None and not isinstance(schema, str) and not callable(
                getattr(schema, "jsonValue", None)) and not callable(
                getattr(schema, "json_value", None)):
            raise ConfigError(f"step {name!r}: output_schema must be a DDL string or a "
                              f"StructType, got {schema!r}")
        if self.two_clocks not in (None, True, False):
            raise ConfigError(f"step {name!r}: two_clocks must be a bool or None, got "
                              f"{self.two_clocks!r}")
        sides: Any = self.sides  # Sides, or its short form (a list of names)
        if sides is None and isinstance(self.builder, OperatorBuilder):
            sides = self.builder.sides
        if sides is not None and not isinstance(sides, Sides):
            if isinstance(sides, (str, bytes)) or not isinstance(sides, (list, tuple)):
                raise ConfigError(f"step {name!r}: sides must be a list of side names, got "
                                  f"{sides!r}")
            try:
                sides = Sides(tuple(sides))
            except ConfigError as error:
                raise ConfigError(f"step {name!r}: sides: {error}") from None
        found = uses_deadlines(self.builder)  # a class says; else keep what is known
        two_clocks = self.two_clocks if found is None else found
        if two_clocks:
            check_deadlines(name, time, builder_name(self.builder))
        converted = {
            "order_by": order_fields(self.order_by, name),
            "ttl": ttl_spec(self.ttl, name, time, self.batch, self.value),
            "sides": sides, "two_clocks": two_clocks}
        for field_name, field_value in converted.items():
            object.__setattr__(self, field_name, field_value)  # frozen: set once, here

    @classmethod
    def of(cls, builder: Union[Builder, Any], **options: Unpack[StepOptions]) -> "Step":
        """A Step from a builder and the step options (:class:`StepOptions`),
        as the entry points take them. ``builder`` is a
        :class:`~sparkwax.logic.Builder` (typed ``Builder | Any``: anything
        else is refused, at run time, with an error naming the step).
        ``step_id`` defaults to :func:`default_step_id`; ``time`` to
        ``ProcessingTime()``; an unknown option is a ``ConfigError``.

        >>> from sparkwax.testing.reference import Counter
        >>> Step.of(Counter, oder_by="ts")
        Traceback (most recent call last):
        ...
        sparkwax.errors.ConfigError: step 'stateful:Counter': no step option 'oder_by'; the options are step_id, time, batch, order_by, value, ttl, max_state_bytes, sides, output_schema
        """
        if isinstance(builder, Step):
            raise ConfigError("Step.of takes a builder; it was given a Step")
        given: Mapping[str, Any] = options
        step_id = given.get("step_id")
        name = step_id if isinstance(step_id, str) and step_id else default_step_id(builder)
        check_option_names(name, given)
        time = given.get("time")
        batch = given.get("batch")
        fields: Dict[str, Any] = {field: given.get(field) for field in OPTIONS
                                  if field not in ("step_id", "time", "batch")}
        return cls(builder=builder, step_id=name if step_id is None else step_id,
                   time=ProcessingTime() if time is None else time,
                   batch=False if batch is None else batch,
                   **fields)  # the short forms are converted on construction

    def but(self, **changes: Any) -> "Step":
        """A copy with some fields changed, checked as a new Step is."""
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


def as_step(builder: Union[Builder, Step, Any] = None, *, step: Optional[Step] = None,
            **options: Unpack[StepOptions]) -> Step:
    """What an entry point runs: a ready Step (``step``, or ``builder`` if it
    is a Step: then every step option must be left unset, the Step carries
    them; change one with ``step.but(...)``), else ``Step.of(builder,
    **options)``. A ``batch`` given with a Step must be the Step's.

    >>> from sparkwax.testing.reference import Counter
    >>> step = Step.of(Counter, step_id="counts")
    >>> as_step(step) is step and as_step(step=step) is step
    True
    >>> as_step(step, ttl="1 hour")
    Traceback (most recent call last):
    ...
    sparkwax.errors.ConfigError: step 'counts': a Step carries its options; got ttl too (use step.but(ttl=...))
    >>> as_step(Counter, step=step)
    Traceback (most recent call last):
    ...
    sparkwax.errors.ConfigError: step 'counts': give a builder or a Step (step=), not both
    """
    if step is not None:
        if not isinstance(step, Step):
            raise ConfigError(f"step= must be a sparkwax.Step, got {step!r} (a builder goes "
                              "in builder=)")
        if builder is not None:
            raise ConfigError(f"step {step.step_id!r}: give a builder or a Step (step=), "
                              "not both")
        builder = step
    if builder is None:
        raise ConfigError("give the step's builder (builder=) or a Step (step=)")
    if not isinstance(builder, Step):
        return Step.of(builder, **options)
    given: Mapping[str, Any] = options
    check_option_names(builder.step_id, given)
    loose = sorted(name for name, value in given.items()
                   if value is not None and name != "batch")
    if loose:
        raise ConfigError(f"step {builder.step_id!r}: a Step carries its options; got "
                          f"{', '.join(loose)} too (use step.but({loose[0]}=...))")
    batch = given.get("batch")
    if batch is not None and batch != builder.batch:
        kind = "StatefulBatchLogic" if builder.batch else "StatefulLogic"
        raise ConfigError(f"step {builder.step_id!r} is a {kind} step (batch="
                          f"{builder.batch}); got batch={batch!r}")
    return builder


def check_option_names(step_id: str, options: Mapping[str, Any]) -> None:
    """Every name in ``options`` is a step option (:data:`OPTIONS`)."""
    unknown = sorted(name for name in options if name not in OPTIONS)
    if unknown:
        raise ConfigError(f"step {step_id!r}: no step option {unknown[0]!r}; the options are "
                          f"{', '.join(OPTIONS)}")


def refuse_options(step_id: str, options: Mapping[str, Any], names: FrozenSet[str],
                   why: str) -> None:
    """An entry point that sets some options itself (``connect``: ``sides``;
    ``join``: also ``output_schema``) refuses them when given."""
    given = sorted(name for name in names if options.get(name) is not None)
    if given:
        raise ConfigError(f"step {step_id!r}: {given[0]}= is not taken here: {why}")


def restore_mode(step_id: str, restore: Any) -> Restore:
    """``restore=`` of an offline run, checked.

    >>> restore_mode("x", "bogus")
    Traceback (most recent call last):
    ...
    sparkwax.errors.ConfigError: step 'x': restore must be one of ('always', 'on_crash'), got 'bogus'
    """
    for mode in RESTORE_MODES:
        if restore == mode and isinstance(restore, str):
            return mode
    raise ConfigError(f"step {step_id!r}: restore must be one of {RESTORE_MODES}, got "
                      f"{restore!r}")


def default_step_id(builder: Any) -> str:
    """The one default step id: ``stateful:<builder name>``, on every entry
    point (Spark and offline), so a step's errors and metrics carry the same
    name wherever it runs.

    >>> from sparkwax.testing.reference import Counter
    >>> default_step_id(Counter)
    'stateful:Counter'
    """
    return f"{DEFAULT_KIND}:{builder_name(builder)}"


__all__ = ["HOSTS", "Host", "OPTIONS", "RESTORE_MODES", "Restore", "SchemaSpec", "SidesSpec",
           "SparkStruct", "Step", "StepOptions", "as_step", "check_option_names",
           "default_step_id", "refuse_options", "restore_mode"]
