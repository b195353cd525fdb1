"""Recipes: ``deduplicate``, ``throttle`` and ``session``.

All three read each value's time with ``ts`` (a field name or a callable):
the event time in EventTime mode (the engine's watermark drives their timers),
or a processing-time field in ProcessingTime mode. Each discards a key's state
as soon as it holds nothing.

>>> from datetime import datetime, timedelta, timezone
>>> import sparkwax as sw
>>> from sparkwax.testing import Batch, Eof, run
>>> t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
>>> at = lambda s, n: {"ts": t0 + timedelta(seconds=s), "n": n}
>>> out = run(deduplicate(None, timedelta(seconds=10)),
...           [Batch([("id1", at(0, 1)), ("id1", at(5, 2)), ("id1", at(12, 3))])],
...           time=sw.EventTime("ts"))
>>> [v["n"] for v in out.by_key["id1"]]
[1, 3]
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, cast

from ..clock import now
from ..errors import ConfigError
from ..logic import DISCARD, RETAIN, StatefulLogic
from ..timers import EPOCH
from ..builders import (Duration, FieldSpec, OperatorBuilder, TimeOf, as_timedelta, field_getter,
                    later, time_getter)
from .windows._aggs import Collect
from .windows.core import WindowConfig, WindowLogic
from .windows.windowers import SessionWindower

_NOTHING: Tuple[()] = ()
_Emits = Tuple[Iterable[Any], bool]
_WHOLE_KEY = 0  # the id of every value when deduplicating by the stream key itself


# -- deduplicate ----------------------------------------------------------------


class DeduplicateLogic(StatefulLogic[Any, Any, Tuple[Tuple[Any, datetime], ...]]):
    """Snapshot: ``((id, last_passed_time), ...)`` of the ids still remembered.

    Ids are forgotten in bulk: the timer is the earliest expiry rounded up to
    a multiple of ``ttl`` (since the epoch), and when it fires every id that
    expired by the activation's ``sw.now()`` goes (by the timer's time when
    there is no clock): one timer clears up to ``ttl`` worth of ids, or all
    of them when the watermark jumped past several such timers at once.
    """

    def __init__(self, config: Tuple[Optional[Callable[[Any], Any]], timedelta, TimeOf],
                 resume: Optional[Iterable[Tuple[Any, datetime]]] = None) -> None:
        self.id_of, self.ttl, self.time_of = config
        self.seen: Dict[Any, datetime] = dict(resume) if resume is not None else {}

    def on_item(self, value: Any) -> _Emits:
        ident = _WHOLE_KEY if self.id_of is None else self.id_of(value)
        ts = self.time_of(value)
        first = self.seen.get(ident)
        if first is not None and ts < first + self.ttl:
            return _NOTHING, RETAIN  # a duplicate: seen less than ttl ago (or earlier)
        self.seen[ident] = ts
        return [value], RETAIN

    def notify_at(self) -> Optional[datetime]:
        if not self.seen:
            return None
        expiry = min(self.seen.values()) + self.ttl
        return EPOCH + _round_up(expiry - EPOCH, self.ttl)

    def on_notify(self) -> _Emits:
        fired = self.notify_at()
        if fired is not None:
            horizon = cast(datetime, later(fired, now())) - self.ttl
            self.seen = {i: t for i, t in self.seen.items() if t > horizon}
        return _NOTHING, not self.seen

    def snapshot(self) -> Tuple[Tuple[Any, datetime], ...]:
        return tuple(self.seen.items())


def _round_up(span: timedelta, step: timedelta) -> timedelta:
    if not step:
        return span
    return -((-span) // step) * step


def deduplicate(key_fn: FieldSpec = None, ttl: Optional[Duration] = None, *,
                ts: FieldSpec = "ts"
                ) -> OperatorBuilder[Any, Any, Tuple[Tuple[Any, datetime], ...]]:
    """Drop a value whose id was seen less than ``ttl`` before it.

    ``key_fn``: the id of a value (a field name or a callable), unique within
    the step's key; ``None`` means the step's key *is* the id (deduplicate
    by the key column). A value passes if its id was not seen, or was last
    let through ``ttl`` or more before it; values dropped as duplicates do not
    extend the ttl. An id is forgotten once the watermark passes its time plus
    ``ttl``; the key's state is discarded when it remembers no id.
    """
    if ttl is None:
        raise ConfigError("deduplicate needs ttl= (how long an id is remembered)")
    config = (field_getter(key_fn, "key_fn"), as_timedelta(ttl, "deduplicate ttl"),
              time_getter(ts))
    return OperatorBuilder("deduplicate", DeduplicateLogic, config)


# -- throttle -------------------------------------------------------------------


@dataclass(frozen=True)
class Throttled:
    """``throttle(..., overflow="flag")`` emits every value with a flag:
    ``passed=False`` for the values over the limit. On Spark:
    ``output_schema="passed boolean, value " + value_struct(df, key)``."""

    passed: bool
    value: Any


THROTTLE_OVERFLOW = ("drop", "flag")


class ThrottleLogic(StatefulLogic[Any, Any, Tuple[datetime, ...]]):
    """Snapshot: the times of the (at most ``limit``) latest values let through.

    Only the ``limit`` latest passes matter: a value at ``t`` is over the limit
    exactly when all of them are later than ``t - per``. So the state never
    grows beyond ``limit`` times, and the key is discarded once the watermark
    passes the latest pass plus ``per``.
    """

    def __init__(self, config: Tuple[int, timedelta, TimeOf, bool],
                 resume: Optional[Sequence[datetime]] = None) -> None:
        self.limit, self.per, self.time_of, self.flag = config
        self.passed: List[datetime] = list(resume) if resume is not None else []

    def on_item(self, value: Any) -> _Emits:
        ts = self.time_of(value)
        passed = self.passed
        horizon = ts - self.per
        if len(passed) < self.limit or passed[0] <= horizon:
            passed.append(ts)
            passed.sort()
            if len(passed) > self.limit:
                del passed[0]
            return [Throttled(True, value) if self.flag else value], RETAIN
        return ([Throttled(False, value)] if self.flag else _NOTHING), RETAIN

    def notify_at(self) -> Optional[datetime]:
        return self.passed[-1] + self.per if self.passed else None

    def on_notify(self) -> _Emits:
        return _NOTHING, DISCARD  # every pass is older than ``per``: nothing to remember

    def snapshot(self) -> Tuple[datetime, ...]:
        return tuple(self.passed)


def throttle(limit: int, per: Duration, *, ts: FieldSpec = "ts",
             overflow: str = "drop") -> OperatorBuilder[Any, Any, Tuple[datetime, ...]]:
    """Let at most ``limit`` values per key through in any interval of length
    ``per`` (sliding: a value at time ``t`` counts the values let through in
    ``(t - per, ...]``). The rest are dropped (``overflow="drop"``, default:
    only the values let through are emitted, as they are) or flagged
    (``overflow="flag"``: every value is emitted as ``Throttled(passed,
    value)``, the second output being ``passed == False``)."""
    if not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"throttle: limit must be a positive int, got {limit!r}")
    if overflow not in THROTTLE_OVERFLOW:
        raise ConfigError(f"throttle: overflow must be one of {THROTTLE_OVERFLOW}, "
                          f"got {overflow!r}")
    per_span = as_timedelta(per, "throttle per")
    if not per_span:
        raise ConfigError("throttle: per must be positive")
    return OperatorBuilder("throttle", ThrottleLogic,
                           (limit, per_span, time_getter(ts), overflow == "flag"))


# -- session --------------------------------------------------------------------


def session_summary(start: datetime, end: datetime, values: List[Any]) -> Dict[str, Any]:
    """The default ``on_close``: ``{"start", "end", "events"}``."""
    return {"start": start, "end": end, "events": len(values)}


class _OnClose:
    """Turns a closed session window into ``on_close(start, end, values)``."""

    def __init__(self, on_close: Callable[[datetime, datetime, List[Any]], Any],
                 time_of: TimeOf) -> None:
        self.on_close, self.time_of = on_close, time_of

    def __call__(self, window_id: int, open_time: datetime, close_time: datetime,
                 values: List[Any]) -> Any:
        end = max(self.time_of(v) for v in values)
        return self.on_close(open_time, end, values)


class SessionLogic(WindowLogic):
    """Session windows whose close emits ``on_close(start, end, values)``
    (nothing if it returns None)."""

    def _close(self, window_id: int, emits: List[Any]) -> None:
        before = len(emits)
        super()._close(window_id, emits)
        if len(emits) > before and emits[-1] is None:
            emits.pop()


def session(gap: Duration,
            on_close: Optional[Callable[[datetime, datetime, List[Any]], Any]] = None, *,
            ts: FieldSpec = "ts") -> OperatorBuilder[Any, Any, Tuple[Any, ...]]:
    """Track sessions per key: values closer than ``gap`` belong to one session
    (out-of-order values can merge two). When the watermark passes a
    session's last value plus ``gap`` (or at EOF) it emits
    ``on_close(start, end, values)`` (default: ``{"start", "end", "events"}``;
    return None to emit nothing) and forgets the session; a key without an
    open session holds no state."""
    span = as_timedelta(gap, "session gap")
    time_of = time_getter(ts)
    config = WindowConfig(SessionWindower(span), Collect(), ts, None,
                          result=_OnClose(on_close or session_summary, time_of),
                          late=None, session_ids=False)   # ids unused: keep no state
    return OperatorBuilder("session", SessionLogic, config)
