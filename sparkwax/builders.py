"""What every operator shares: picklable builders, time fields and durations.

An operator is a ``StatefulLogic`` class plus a thin function that returns an
:class:`OperatorBuilder`: ``builder(resume_state_or_None) -> logic``. The
builder holds the operator's configuration (picklable: Spark ships it to the
workers with cloudpickle), and the logic's snapshot holds plain data only.

>>> from datetime import datetime, timezone
>>> get = time_getter("ts")
>>> get({"ts": datetime(2024, 1, 1, tzinfo=timezone.utc)}).isoformat()
'2024-01-01T00:00:00+00:00'
>>> as_timedelta("90 seconds")
datetime.timedelta(seconds=90)
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Callable, Generic, List, Optional, Sequence, Tuple, TypeVar, Union, cast

from .errors import ConfigError
from .logic import ItemLogic, S, V, W
from .timers import EPOCH, UTC, duration_ms

Duration = Union[str, timedelta]
KeySpec = Union[str, Sequence[str]]
FieldSpec = Union[None, str, Callable[[Any], Any]]
_T = TypeVar("_T")
_C = TypeVar("_C")  # an operator's config


class OperatorBuilder(Generic[V, W, S]):
    """``builder(resume) -> logic`` for an operator: ``logic(config, resume)``.

    ``OperatorBuilder[V, W, S]`` builds an ``ItemLogic[V, W, S]`` (values in,
    values out, snapshot; a bare ``OperatorBuilder`` is ``[Any, Any, Any]``),
    so it is a ``Builder[V, W, S]``; the constructor checks that ``config`` is
    what ``logic`` takes. ``__qualname__`` is the operator's name, so a Spark
    step defaults to ``stateful:<operator>`` in error messages. ``sides`` names
    the inputs of a join (None for one input): the offline runner keeps a
    watermark per side.
    """

    logic: type  # the logic class (``sparkwax.step_fields.uses_deadlines`` reads its methods)
    config: Any

    def __init__(self, name: str, logic: Callable[[_C, Optional[S]], ItemLogic[V, W, S]],
                 config: _C, sides: Optional[Tuple[Any, ...]] = None) -> None:
        self.__qualname__ = name
        self.logic = cast(type, logic)  # always a class: its methods are read, not only called
        self.config = config
        self.sides = sides

    def __call__(self, resume: Optional[S] = None) -> ItemLogic[V, W, S]:
        logic: ItemLogic[V, W, S] = self.logic(self.config, resume)
        return logic

    def __repr__(self) -> str:
        return f"<sparkwax operator {self.__qualname__}>"


def as_timedelta(value: Duration, what: str = "duration") -> timedelta:
    """A non-negative duration from a timedelta or a string such as ``"10 minutes"``."""
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise ConfigError(f"{what} must not be negative, got {value!r}")
        return value
    try:
        return timedelta(milliseconds=duration_ms(value))
    except ConfigError as error:
        raise ConfigError(f"{what}: {error}") from None


def optional_timedelta(value: Optional[Duration], what: str) -> Optional[timedelta]:
    return None if value is None else as_timedelta(value, what)


def aware(moment: Any, what: str = "time") -> datetime:
    """``moment`` as an aware UTC datetime (a naive one is refused)."""
    if not isinstance(moment, datetime):
        raise ConfigError(f"{what} must be an aware datetime, got {moment!r}")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ConfigError(f"{what} must be timezone-aware (e.g. tzinfo=timezone.utc), "
                          f"got {moment!r}")
    return moment.astimezone(UTC)


class Field:
    """``value[name]``: a picklable getter for a field of a dict value."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, value: Any) -> Any:
        return value[self.name]

    def __getstate__(self) -> str:
        return self.name

    def __setstate__(self, state: str) -> None:
        self.name = state

    def __repr__(self) -> str:
        return f"Field({self.name!r})"


def field_getter(spec: FieldSpec, what: str = "field") -> Optional[Callable[[Any], Any]]:
    """None, a field name (``value[name]``) or a callable, as a callable (or None)."""
    if spec is None or callable(spec):
        return spec
    if isinstance(spec, str):
        return Field(spec)
    raise ConfigError(f"{what} must be a field name or a callable, got {spec!r}")


class TimeOf:
    """The time of a value: ``value[field]`` or ``fn(value)``, an aware datetime."""

    __slots__ = ("get",)

    def __init__(self, get: Callable[[Any], Any]) -> None:
        self.get = get

    def __call__(self, value: Any) -> datetime:
        moment = self.get(value)
        if type(moment) is datetime and moment.tzinfo is UTC:
            return moment
        if not isinstance(moment, datetime) or moment.utcoffset() is None:
            raise TypeError(f"the time of a value must be an aware datetime, got {moment!r} "
                            f"(from {self.get!r})")
        return moment.astimezone(UTC)

    def __getstate__(self) -> Callable[[Any], Any]:
        return self.get

    def __setstate__(self, state: Callable[[Any], Any]) -> None:
        self.get = state


def time_getter(ts: FieldSpec) -> TimeOf:
    """How an operator reads a value's time: a field name or a callable."""
    if ts is None:
        raise ConfigError("this operator needs ts= (a field name or a callable giving "
                          "each value's aware datetime)")
    return TimeOf(cast(Callable[[Any], Any], field_getter(ts, "ts")))


def epoch_us(moment: datetime) -> int:
    delta = moment - EPOCH
    return delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds


def later(a: Optional[datetime], b: Optional[datetime]) -> Optional[datetime]:
    """The later of two optional datetimes."""
    if a is None:
        return b
    if b is None or a >= b:
        return a
    return b


def identity(value: _T) -> _T:
    return value


def two_tuple(result: Any, what: str) -> Tuple[Any, Any]:
    """Unpack a user function's ``(state, out)`` result with a clear error."""
    if type(result) is not tuple or len(result) != 2:
        raise TypeError(f"{what} must return a 2-tuple (new_state, output); got {result!r}")
    pair: Tuple[Any, Any] = result
    return pair


def key_list(key: KeySpec) -> List[str]:
    """One key column or several, as a list.

    >>> key_list("user"), key_list(("user", "day"))
    (['user'], ['user', 'day'])
    """
    return [key] if isinstance(key, str) else list(key)
