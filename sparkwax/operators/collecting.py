"""``collect(timeout, max_size)``: gather a key's values into lists.

The list is emitted when it reaches ``max_size``, when no new value arrived
for ``timeout`` (the timer restarts on every value), or at EOF. A value that
comes ``timeout`` or more after the list's last value closes the list before
it joins a new one, even if the watermark has not fired the timer yet. Time is read
from each value (``ts=``): in EventTime mode the event time, which is what the
engine's watermark compares with the timer. In ProcessingTime mode give the
values a processing-time field (on Spark ``F.current_timestamp()`` is the
micro-batch's time, the same clock the engine's timers use).

>>> from datetime import datetime, timedelta, timezone
>>> import sparkwax as sw
>>> from sparkwax.testing import Batch, Eof, run
>>> t = lambda s: {"ts": datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=s)}
>>> script = [Batch([("a", t(0)), ("a", t(1))]),
...           Batch([("b", t(20))]),       # moves the watermark to 20 s
...           Batch([("a", t(30))]),       # a's timer (11 s) fires first
...           Eof()]
>>> out = run(collect(timedelta(seconds=10), 3), script, time=sw.EventTime("ts"))
>>> [[v["ts"].second for v in batch] for batch in out.by_key["a"]]
[[0, 1], [30]]
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Iterable, List, Optional, Tuple, Union, cast

from ..errors import ConfigError
from ..logic import DISCARD, RETAIN, StatefulLogic
from ..builders import (Duration, FieldSpec, OperatorBuilder, TimeOf, optional_timedelta,
                    time_getter)

_NOTHING: Tuple[()] = ()
_Emits = Tuple[Iterable[List[Any]], bool]


class CollectLogic(StatefulLogic[Any, List[Any], Tuple[List[Any], Optional[datetime]]]):
    """Snapshot: ``(values, deadline)``; ``deadline`` is the latest value's
    time plus the timeout (it never moves back)."""

    values: List[Any]
    deadline: Optional[datetime]

    def __init__(self, config: Tuple[Optional[timedelta], Optional[int], Optional[TimeOf]],
                 resume: Optional[Tuple[Iterable[Any], Optional[datetime]]] = None) -> None:
        self.timeout, self.max_size, self.time_of = config
        if resume is None:
            self.values, self.deadline = [], None
        else:
            values, self.deadline = resume
            self.values = list(values)

    def on_item(self, value: Any) -> _Emits:
        emits: Union[Tuple[()], List[List[Any]]] = _NOTHING
        if self.timeout is not None:
            ts = cast(TimeOf, self.time_of)(value)  # collect() sets both or neither
            if self.deadline is not None and ts >= self.deadline:
                # The timeout expired before this value (its timer had not fired
                # yet: the watermark lags): the list closes first.
                emits, self.values, self.deadline = [self.values], [], None
            deadline = ts + self.timeout
            if self.deadline is None or deadline > self.deadline:
                self.deadline = deadline
        self.values.append(value)
        if self.max_size is not None and len(self.values) >= self.max_size:
            return (emits + [self.values] if emits else [self.values]), DISCARD
        return emits, RETAIN

    def notify_at(self) -> Optional[datetime]:
        return self.deadline

    def on_notify(self) -> _Emits:
        return [self.values], DISCARD

    def on_eof(self) -> _Emits:
        return [self.values], DISCARD

    def snapshot(self) -> Tuple[List[Any], Optional[datetime]]:
        return (list(self.values), self.deadline)


def collect(timeout: Optional[Duration], max_size: Optional[int], *,
            ts: FieldSpec = "ts"
            ) -> OperatorBuilder[Any, List[Any], Tuple[List[Any], Optional[datetime]]]:
    """Emit a key's values as one list at ``max_size`` values, ``timeout``
    after the last value (by ``ts``: a field name or a callable), or at EOF.
    ``timeout=None`` or ``max_size=None`` turns that trigger off."""
    if max_size is not None and (not isinstance(max_size, int) or max_size < 1):
        raise ConfigError(f"collect: max_size must be a positive int or None, got {max_size!r}")
    span = optional_timedelta(timeout, "collect timeout")
    time_of = time_getter(ts) if span is not None else None
    return OperatorBuilder("collect", CollectLogic, (span, max_size, time_of))
