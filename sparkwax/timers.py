"""Time modes and the timer rules shared by every host.

Times inside sparkwax are epoch milliseconds (``int``), like Spark's
``GroupState``; logic sees timezone-aware UTC datetimes.

>>> from datetime import datetime, timezone, timedelta
>>> t = datetime(2024, 1, 1, 12, 0, 0, 500, tzinfo=timezone.utc)
>>> ms = timer_ms(t)           # rounded *up*: due means notify_at <= now
>>> ms - to_epoch_ms(datetime(2024, 1, 1, 12, tzinfo=timezone.utc))
1
>>> is_due(ms, now_ms=ms), is_due(ms, now_ms=ms - 1)
(True, False)
>>> EventTime("ts", watermark="10 minutes").delay_ms
600000
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, ClassVar, List, Optional, Tuple, Union, overload

from .errors import ConfigError

if TYPE_CHECKING:  # the core runs without numpy; a packed host passes arrays
    import numpy as np
    import numpy.typing as npt

UTC = timezone.utc
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


class _TimeMode:
    """What both time modes answer: which clock ``now`` is, how a host arms
    the timeout that wakes a key at its next timer, and Spark's names."""

    kind: ClassVar[str]
    uses_watermark: ClassVar[bool]
    spark_timeout: ClassVar[str]       # GroupStateTimeout for steps with timers

    @property
    def delay_ms(self) -> int:
        return 0

    def now_ms(self, watermark_ms: Callable[[], int], processing_ms: Callable[[], int]) -> int:
        """The activation clock from a host's two clocks (asked lazily: a
        Spark query without a watermark has none to ask)."""
        return watermark_ms() if self.uses_watermark else processing_ms()

    def armed_timeout(self, timer: int, now_ms: int) -> int:
        """The absolute timeout (epoch ms) a host arms for a key's next timer."""
        raise NotImplementedError

    def group_state_timeout(self, armed: int, now_ms: int) -> Tuple[str, int]:
        """How to arm ``armed`` on Spark's ``GroupState`` at ``now_ms``:
        ``("timestamp", ms)`` or ``("duration", ms)``."""
        raise NotImplementedError


@dataclass(frozen=True)
class ProcessingTime(_TimeMode):
    """``now`` is the micro-batch's processing time (wall clock on Spark).

    On Spark this maps to ``GroupStateTimeout.ProcessingTimeTimeout``; start
    the query with a processing-time trigger, or no-data batches run back to
    back.

    >>> mode = ProcessingTime()
    >>> mode.armed_timeout(5_000, now_ms=1_000), mode.group_state_timeout(4_999, 1_000)
    (4999, ('duration', 3999))
    """

    kind: ClassVar[str] = "processing"
    uses_watermark: ClassVar[bool] = False
    spark_timeout: ClassVar[str] = "ProcessingTimeTimeout"

    def armed_timeout(self, timer: int, now_ms: int) -> int:
        return now_ms + processing_timeout_duration_ms(timer, now_ms)

    def group_state_timeout(self, armed: int, now_ms: int) -> Tuple[str, int]:
        return "duration", max(armed - now_ms, 1)  # Spark refuses durations <= 0


@dataclass(frozen=True)
class EventTime(_TimeMode):
    """``now`` is the watermark: max event time seen in earlier batches minus
    ``watermark`` (a Spark interval string such as ``"10 minutes"``, or a
    ``timedelta``). Rows at or behind the watermark are late and dropped.

    ``column`` names the event-time column (Spark) or field: offline,
    ``value[column]`` for a mapping, else the attribute (a dataclass event).
    Offline only, ``column`` may also be a callable ``value -> aware
    datetime`` (Bytewax's ``ts_getter``); on Spark it must be a name.

    >>> mode = EventTime("ts")
    >>> mode.armed_timeout(5_000, now_ms=1_000), mode.group_state_timeout(4_999, 1_000)
    (4999, ('timestamp', 4999))
    """

    column: str
    watermark: Union[str, timedelta] = "0 seconds"
    delay: int = field(init=False, repr=False, compare=False)

    kind: ClassVar[str] = "event"
    uses_watermark: ClassVar[bool] = True
    spark_timeout: ClassVar[str] = "EventTimeTimeout"

    def __post_init__(self) -> None:
        if not callable(self.column) and (not isinstance(self.column, str) or not self.column):
            raise ConfigError(f"EventTime needs a column name (or, offline, a callable), "
                              f"got {self.column!r}")
        object.__setattr__(self, "delay", duration_ms(self.watermark))

    @property
    def delay_ms(self) -> int:
        """The watermark delay in ms."""
        return self.delay

    @property
    def spark_delay(self) -> str:
        """The delay as an interval string for ``DataFrame.withWatermark``."""
        return f"{self.delay_ms} milliseconds"

    def armed_timeout(self, timer: int, now_ms: int) -> int:
        return event_timeout_ms(timer, now_ms)

    def group_state_timeout(self, armed: int, now_ms: int) -> Tuple[str, int]:
        return "timestamp", max(armed, now_ms, 1)  # Spark refuses timestamps behind it


TimeMode = Union[ProcessingTime, EventTime]

_UNITS_MS = {
    "millisecond": 1, "ms": 1, "second": 1000, "sec": 1000, "s": 1000,
    "minute": 60_000, "min": 60_000, "m": 60_000, "hour": 3_600_000, "h": 3_600_000,
    "day": 86_400_000, "d": 86_400_000, "week": 7 * 86_400_000,
}
_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*(?=\d|$)")


def duration_ms(value: Union[str, timedelta]) -> int:
    """Parse ``"10 minutes"``, ``"1 hour 30 minutes"``, ``"500 ms"`` or a timedelta.

    >>> duration_ms("1 hour 30 minutes"), duration_ms(timedelta(seconds=2))
    (5400000, 2000)
    """
    if isinstance(value, timedelta):
        ms = value / _ONE_MS
    elif isinstance(value, str):
        text = value.strip().lower()
        if text.startswith("interval "):
            text = text[len("interval "):]
        parts = _PART.findall(text)
        if not parts or _PART.sub("", text).strip():
            raise ConfigError(f"cannot read duration {value!r}; use e.g. '10 minutes'")
        ms = 0.0
        for number, unit in parts:
            if unit not in _UNITS_MS and unit.endswith("s"):
                unit = unit[:-1]  # plural
            if unit not in _UNITS_MS:
                raise ConfigError(f"unknown unit {unit!r} in duration {value!r}")
            ms += float(number) * _UNITS_MS[unit]
    else:
        raise ConfigError(f"a duration must be a string or timedelta, got {value!r}")
    if ms < 0 or ms != int(ms):
        raise ConfigError(f"duration {value!r} must be a whole, non-negative number of ms")
    return int(ms)


def to_epoch_ms(moment: datetime) -> int:
    """Aware datetime -> epoch ms, rounded down (how Spark tracks event time)."""
    delta = moment - EPOCH
    return (delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds) // 1000


def to_epoch_us(moment: datetime) -> int:
    """Aware datetime -> epoch microseconds (Spark's timestamp precision)."""
    delta = moment - EPOCH
    return delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds


def timer_ms(moment: datetime) -> int:
    """Aware datetime -> epoch ms, rounded up, so ``timer_ms <= now_ms`` exactly
    when ``moment <= now``."""
    delta = moment - EPOCH
    micros = delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds
    return -((-micros) // 1000)


def from_epoch_ms(ms: int) -> datetime:
    """Epoch ms -> aware UTC datetime."""
    return EPOCH + timedelta(milliseconds=ms)


def is_due(timer: Optional[int], now_ms: Optional[int]) -> bool:
    """A timer is due when its time is at or before ``now``."""
    return timer is not None and now_ms is not None and timer <= now_ms


# --- what a host (Spark or the offline runner) arms between activations ---
#
# Spark fires a group's timeout when ``timeout < threshold`` (watermark or
# batch time), strictly, and refuses event-time timeouts below the watermark.
# Arming ``timer - 1`` makes Spark wake the key exactly when the timer is due;
# a timer still due at commit is armed at ``now`` so it fires at the next
# activation (time must move first), never in a loop.


def event_timeout_ms(timer: int, now_ms: int) -> int:
    """The absolute timeout a host arms for a retained key's next timer."""
    return max(timer - 1, now_ms, 1)  # Spark also refuses timestamps <= 0


def processing_timeout_duration_ms(timer: int, now_ms: int) -> int:
    """``setTimeoutDuration`` argument for ProcessingTimeTimeout (must be > 0)."""
    return max(timer - 1 - now_ms, 1)


@overload
def timeout_fired(timeout: Optional[int], now_ms: int) -> bool: ...


@overload
def timeout_fired(timeout: npt.NDArray[Any], now_ms: int) -> npt.NDArray[np.bool_]: ...


def timeout_fired(timeout: Any, now_ms: int) -> Any:
    """Spark's rule for waking a key without data: ``timeout < now``. Works
    element-wise on a numpy array of timeouts too (a packed bucket's keys)."""
    return timeout is not None and timeout < now_ms


class Deadlines:
    """The timer plan of a step with both timer kinds: an ``EventTime`` step
    whose logic also has ``processing_notify_at`` (a wall-clock deadline).

    A key keeps two next timers in epoch ms: ``timer`` (``notify_at``, on
    the watermark) and ``deadline`` (``processing_notify_at``, on the
    processing time). It is woken when either is due; a host that can wait
    on one clock only (Spark's ``ProcessingTimeTimeout``) wakes a key with an
    event timer at every micro-batch to compare it with the watermark.

    >>> Deadlines.due(timer=5_000, deadline=None, watermark_ms=5_000, processing_ms=0)
    True
    >>> Deadlines.due(timer=9_000, deadline=70_000, watermark_ms=5_000, processing_ms=60_000)
    False
    >>> Deadlines.wake_ms(timer=None, deadline=70_000, processing_ms=60_000)
    9999
    >>> Deadlines.wake_ms(timer=9_000, deadline=70_000, processing_ms=60_000)  # next batch
    1
    >>> Deadlines.wake_ms(timer=None, deadline=None, processing_ms=60_000) is None
    True
    """

    @staticmethod
    def due(timer: Optional[int], deadline: Optional[int], watermark_ms: Optional[int],
            processing_ms: Optional[int]) -> bool:
        """Whether a key has something to fire: its event timer at or behind
        the watermark, or its deadline at or behind the processing time."""
        return is_due(timer, watermark_ms) or is_due(deadline, processing_ms)

    @staticmethod
    def due_columns(timers: npt.NDArray[np.int64], deadlines: npt.NDArray[np.int64],
                    missing: int, watermark_ms: int, processing_ms: int
                    ) -> npt.NDArray[np.bool_]:
        """:meth:`due` element-wise over a packed bucket's columns (``missing``
        marks "none")."""
        due: npt.NDArray[np.bool_] = (((timers != missing) & (timers <= watermark_ms))
                                      | ((deadlines != missing) & (deadlines <= processing_ms)))
        return due

    @staticmethod
    def wake_ms(timer: Optional[int], deadline: Optional[int], processing_ms: int
                ) -> Optional[int]:
        """The ``setTimeoutDuration`` (ms, > 0) that wakes a key on Spark's
        ``ProcessingTimeTimeout``: the shortest while an event timer is
        pending (the next micro-batch compares it with the watermark), else
        the deadline's; None: nothing to wait for."""
        if timer is not None:
            return 1
        if deadline is not None:
            return processing_timeout_duration_ms(deadline, processing_ms)
        return None


def require_aware(moment: object) -> datetime:
    """Return ``moment`` converted to UTC, or raise TypeError/ValueError."""
    if not isinstance(moment, datetime):
        raise TypeError("expected a datetime")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("naive datetime; use an aware one, e.g. tzinfo=timezone.utc")
    return moment.astimezone(UTC)


# --- the event-time watermark over one or several inputs ---
#
# Spark keeps one watermark per input that has ``withWatermark`` (its max event
# time minus the delay; 0 while that input has no data) and, under its default
# ``spark.sql.streaming.multipleWatermarkPolicy=min``, uses the smallest of
# them, never moving backwards. A connected step (``connect``, ``join``) has
# one input per side, so a side far ahead in event time cannot make the other
# side's rows late. A query of several steps has one such input per
# ``EventTime`` step (each step's ``withWatermark``) and one watermark for all
# of them (``run_flow``). A restart keeps the watermark but forgets each
# input's max. The offline runner and the driver (bounded input) use this one
# rule; Spark applies it itself.


class Watermark:
    """Max event time per input (ms); :meth:`advance` computes Spark's global
    watermark, ``min(max - delay)`` over the inputs, monotonic, 0 at first.

    >>> clock = Watermark(delay_ms=1_000, inputs=2)
    >>> clock.see(10_000_000, side=0)      # side 0 at 10 s (epoch microseconds)
    >>> clock.advance()                    # side 1 has no data yet: it holds the watermark at 0
    0
    >>> clock.see(4_000_000, side=1)
    >>> clock.advance()                    # min(10 s, 4 s) - 1 s
    3000
    >>> clock.see(2_000_000, side=1)       # older data never moves it back
    >>> clock.advance()
    3000
    """

    __slots__ = ("delay_ms", "maxima", "value_ms")

    def __init__(self, delay_ms: int = 0, inputs: int = 1, value_ms: int = 0):
        if inputs < 1:
            raise ValueError(f"a watermark needs at least one input, got {inputs}")
        self.delay_ms = delay_ms
        self.maxima: List[Optional[int]] = [None] * inputs
        self.value_ms = value_ms

    def see(self, micros: int, side: int = 0) -> None:
        """Record an event time (epoch microseconds) of input ``side``."""
        ms = micros // 1000
        current = self.maxima[side]
        if current is None or ms > current:
            self.maxima[side] = ms

    def candidate(self) -> int:
        """What the watermark would move to now (before the monotonic rule)."""
        return min((0 if ms is None else max(ms - self.delay_ms, 0) for ms in self.maxima),
                   default=0)

    def advance(self) -> int:
        """Move the watermark (end of a micro-batch) and return it."""
        candidate = self.candidate()
        if candidate > self.value_ms:
            self.value_ms = candidate
        return self.value_ms

    def advance_moved(self) -> bool:
        """:meth:`advance`, and whether the watermark moved: Spark then runs a
        no-data micro-batch so that event-time timers can fire."""
        before = self.value_ms
        return self.advance() > before

    def restart(self) -> None:
        """A restarted query: Spark keeps the watermark (in the offset log)
        but not each input's max event time, so until every input has data
        again it holds the watermark where it is.

        >>> clock = Watermark(inputs=2)
        >>> clock.see(10_000_000); clock.see(4_000_000, side=1); clock.advance()
        4000
        >>> clock.restart(); clock.see(20_000_000); clock.advance()   # side 1: none yet
        4000
        """
        self.maxima = [None] * len(self.maxima)

    def copy(self) -> "Watermark":
        twin = Watermark(self.delay_ms, len(self.maxima), self.value_ms)
        twin.maxima = list(self.maxima)
        return twin

    @property
    def seen(self) -> bool:
        """Whether any input has data."""
        return any(ms is not None for ms in self.maxima)


__all__ = [
    "Deadlines", "EPOCH", "EventTime", "ProcessingTime", "TimeMode", "UTC", "Watermark",
    "duration_ms", "event_timeout_ms", "from_epoch_ms", "is_due",
    "processing_timeout_duration_ms", "require_aware", "timeout_fired", "timer_ms",
    "to_epoch_ms", "to_epoch_us",
]
