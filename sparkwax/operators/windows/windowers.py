"""Windowers: which windows a value's time falls in (tumbling, sliding,
session). Used by the window operators in ``core.py``.

>>> from datetime import datetime, timedelta, timezone
>>> t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
>>> hourly = SlidingWindower(timedelta(hours=1), timedelta(minutes=30), align_to=t0)
>>> list(hourly.ids_for(t0 + timedelta(minutes=40)))
[0, 1]
>>> [t.strftime("%H:%M") for t in hourly.bounds(1)]
['00:30', '01:30']
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Tuple, Union, cast

from ...errors import ConfigError
from ...timers import EPOCH
from ...builders import Duration, as_timedelta, aware

_ZERO = timedelta(0)


# -- windowers ------------------------------------------------------------------


class FixedWindower:
    """Tumbling and sliding windows: window ``i`` is
    ``[align_to + i * offset, align_to + i * offset + length)``."""

    length: timedelta
    offset: timedelta
    align_to: datetime

    def _check(self, length: Duration, offset: Duration, align_to: datetime) -> timedelta:
        length = as_timedelta(length, "window length")
        offset = as_timedelta(offset, "window offset")
        if length <= _ZERO or offset <= _ZERO:
            raise ConfigError(f"window length and offset must be positive, got {length}, "
                              f"{offset}")
        if offset > length:
            raise ConfigError(f"sliding window offset {offset} is longer than its length "
                              f"{length}: values between windows would be lost")
        object.__setattr__(self, "length", length)
        object.__setattr__(self, "align_to", aware(align_to, "align_to"))
        return offset

    def ids_for(self, ts: datetime) -> range:
        """The ids of the windows that contain ``ts``."""
        since = ts - self.align_to
        return range((since - self.length) // self.offset + 1, since // self.offset + 1)

    def bounds(self, window_id: int) -> Tuple[datetime, datetime]:
        """``(open_time, close_time)`` of window ``window_id``."""
        open_time = self.align_to + self.offset * window_id
        return open_time, open_time + self.length


@dataclass(frozen=True)
class SlidingWindower(FixedWindower):
    """Windows of ``length`` starting every ``offset``, aligned so that a window
    opens at ``align_to`` (default: the Unix epoch). Open times are inclusive,
    close times exclusive. Window ``i`` opens at ``align_to + i * offset``
    (ids are negative before ``align_to``). ``offset`` must not exceed
    ``length`` (there would be gaps)."""

    # The constructor takes Durations; __post_init__ stores timedeltas (FixedWindower's types).
    length: Duration  # type: ignore[assignment]
    offset: Duration  # type: ignore[assignment]
    align_to: datetime = EPOCH

    def __post_init__(self) -> None:
        offset = self._check(self.length, self.offset, self.align_to)
        object.__setattr__(self, "offset", offset)


@dataclass(frozen=True)
class TumblingWindower(FixedWindower):
    """Back-to-back windows of ``length`` aligned to ``align_to``: every value
    is in exactly one window, id ``(ts - align_to) // length``."""

    length: Duration  # type: ignore[assignment]  # a timedelta after __post_init__
    align_to: datetime = EPOCH

    def __post_init__(self) -> None:
        self._check(self.length, self.length, self.align_to)

    @property
    def offset(self) -> timedelta:  # type: ignore[override]  # read-only: always length
        return cast(timedelta, self.length)


@dataclass(frozen=True)
class SessionWindower:
    """Sessions of values separated by at most ``gap``; a value within ``gap``
    of two sessions merges them (the merged session keeps the id of the one
    that opened first). As in Bytewax, a key's sessions are numbered 0, 1,
    2... in the order they open, a session's ``open_time`` is its first
    value's time and its ``close_time`` its last value's time; it closes
    once the watermark passes ``close_time + gap``."""

    gap: Duration

    def __post_init__(self) -> None:
        object.__setattr__(self, "gap", as_timedelta(self.gap, "session gap"))


Windower = Union[FixedWindower, SessionWindower]
