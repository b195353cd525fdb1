"""The window logic and the window operators (re-exported by ``sparkwax.operators``).

A window operator is one logic per key (:class:`WindowLogic`) that keeps that
key's open windows:
``fold_window``, ``collect_window``, ``count_window``, ``reduce_window``,
``sum_window``, ``mean_window``, ``max_window``, ``min_window`` and
``join_window``, each over a
``TumblingWindower``, ``SlidingWindower`` or ``SessionWindower``.

Every emit is a :class:`WindowOut` ``(window_id, open_time, close_time,
value, late)``: a window's result (``late=None``), or a late input value
(``late=<the value>``, ``value=None``).

Time (see docs/operators.md, "Windows"):

- A value's time is read with ``ts`` (a field name or a callable).
- A window closes (emits its result and drops its state) when the engine's
  clock reaches its close time: when the key's timer (its earliest close
  time) fires, every window whose close time is at or before ``sw.now()``
  closes in that activation, in close-time order. With ``lateness=``, a
  window also closes as soon as the key's latest event time minus
  ``lateness`` reaches its close time. All open windows close at EOF.
- The key's *watermark* is how far it has closed windows: the latest close
  time it closed (or, with ``lateness=``, its latest event time minus
  ``lateness`` if that is later).
- A value is *late* when it would go into a window that is already closed
  (sessions: when its time is at or behind the key's watermark). It is
  reported on the late output and otherwise ignored. Rows at or behind the
  engine's watermark never reach the logic (the engine drops them), so late
  reports come from ``lateness=`` closing windows ahead of the engine.
- A key with no open window is discarded. Its newest window always closes
  after the key's own watermark, so when the last one closes the engine's
  watermark has passed everything the key closed and no late value can reach
  it any more. (Should a key's watermark still be ahead of the engine's, as can
  happen in ProcessingTime mode, it keeps only that watermark, with a timer,
  until the engine catches up.) No empty state is kept forever.

>>> from datetime import datetime, timedelta, timezone
>>> import sparkwax as sw
>>> from sparkwax.operators import TumblingWindower
>>> from sparkwax.testing import Batch, Eof, run
>>> t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
>>> at = lambda m: {"ts": t0 + timedelta(minutes=m)}
>>> op = count_window(TumblingWindower(timedelta(minutes=10), align_to=t0))
>>> out = run(op, [Batch([("a", at(1)), ("a", at(4)), ("a", at(12))]), Eof()],
...           time=sw.EventTime("ts"))
>>> [(w.window_id, w.open_time.minute, w.value) for w in out.by_key["a"]]
[(0, 0, 2), (1, 10, 1)]
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union, cast

from ...clock import now
from ...errors import ConfigError
from ...logic import DISCARD, StatefulLogic
from ...builders import (Duration, FieldSpec, OperatorBuilder, epoch_us, field_getter, identity,
                     later, optional_timedelta, time_getter)
from ..joins import JoinConfig
from ._aggs import Agg, Collect, Count, Extreme, Fold, Join, Mean, Ordered, Reduce, Sum
from .out import WindowOut
from .windowers import FixedWindower, SessionWindower, Windower

LATE_SESSION_ID = -1
"""The window id of a late value of a session window (which session it missed
is not known once that session is closed and forgotten)."""


def _result(window_id: int, open_time: Optional[datetime], close_time: Optional[datetime],
            value: Any) -> WindowOut:
    """A window's result: the default ``result`` of :class:`WindowConfig`."""
    return WindowOut(window_id, open_time, close_time, value)


def _late(window_id: int, open_time: Optional[datetime], close_time: Optional[datetime],
          value: Any) -> WindowOut:
    """A late value: the default ``late`` of :class:`WindowConfig`."""
    return WindowOut(window_id, open_time, close_time, None, value)


# -- the logic ------------------------------------------------------------------


class WindowConfig:
    """What a window operator's builder holds."""

    def __init__(self, windower: Windower, agg: Agg, ts: FieldSpec, lateness: Optional[Duration],
                 result: Callable[..., Any] = _result, late: Optional[Callable[..., Any]] = _late,
                 ordered: bool = False, session_ids: bool = True) -> None:
        if not isinstance(windower, (FixedWindower, SessionWindower)):
            raise ConfigError(f"windower must be a TumblingWindower, SlidingWindower or "
                              f"SessionWindower, got {windower!r}")
        self.windower = windower
        self.session = isinstance(windower, SessionWindower)
        self.session_ids = self.session and session_ids   # keep the id counter (Bytewax)
        # Ordered sessions are numbered when they close: Bytewax applies ordered
        # values in time order, so its sessions never merge and their ids follow
        # time order, which is close order.
        self.number_at_close = self.session_ids and ordered
        if not isinstance(ordered, bool):
            raise ConfigError(f"ordered must be True or False, got {ordered!r}")
        self.time_of = time_getter(ts)
        self.agg: Agg = Ordered(agg, self.time_of) if ordered else agg
        self.lateness = optional_timedelta(lateness, "lateness")
        self.result = result
        self.late = late


class WindowLogic(StatefulLogic[Any, Any, Tuple[Any, ...]]):
    """One key's windows. Snapshot: ``(watermark, known, windows)`` with
    ``windows`` a tuple of ``(id, open_time, close_time, count, acc)``;
    ``watermark`` is the key's watermark (None before it is known) and
    ``known`` the latest engine clock the key knows of (``sw.now()`` when its
    timer fired). Session windows add a fourth entry, the key's next session
    id (Bytewax numbers a key's sessions 0, 1, 2...), and so keep that
    counter for as long as the key lives, as Bytewax does (with
    ``ordered=True`` a session gets its number when it closes: sessions close
    in time order, which is how Bytewax numbers ordered ones). A session's
    ``close_time`` inside is its last value's time plus the gap (when it
    closes); it is reported as the last value's time, Bytewax's metadata."""

    watermark: Optional[datetime]
    known: Optional[datetime]
    windows: Dict[int, List[Any]]  # id -> [open_time, close_time, count, acc]

    def __init__(self, config: WindowConfig, resume: Optional[Tuple[Any, ...]] = None) -> None:
        self.config = config
        self.next_id = 0
        if resume is None:
            self.watermark = self.known = None
            self.windows = {}
        else:
            self.watermark, self.known, windows = resume[:3]
            if len(resume) > 3:
                self.next_id = resume[3]
            self.windows = {w[0]: [w[1], w[2], w[3], w[4]] for w in windows}

    # callbacks

    def on_item(self, value: Any) -> Tuple[Iterable[Any], bool]:
        config = self.config
        ts = config.time_of(value)
        emits: List[Any] = []
        if config.session:
            self._session_item(ts, value, emits)
        else:
            self._fixed_item(ts, value, emits)
        if config.lateness is not None:
            self.watermark = later(self.watermark, ts - config.lateness)
            self._close_due(emits)
        return emits, self._discard()

    def notify_at(self) -> Optional[datetime]:
        if self.windows:
            first: datetime = min(w[1] for w in self.windows.values())
            return first
        if self.watermark is not None and (self.known is None or self.watermark > self.known):
            return self.watermark  # a husk: forget the key once the engine catches up
        return None

    def on_notify(self) -> Tuple[Iterable[Any], bool]:
        fired = self.notify_at()  # the engine's clock has reached it
        emits: List[Any] = []
        if fired is not None:
            # Everything due by the activation's clock closes now, not just the
            # earliest window (no clock, e.g. called outside an activation:
            # what the timer tells).
            reached = later(fired, now())
            self.known = later(self.known, reached)
            self._close_due(emits, reached)
        return emits, self._discard()

    def on_eof(self) -> Tuple[Iterable[Any], bool]:
        emits: List[Any] = []
        for window_id in self._by_close(self.windows):
            self._close(window_id, emits)
        return emits, DISCARD

    def snapshot(self) -> Tuple[Any, ...]:
        windows = tuple((i, w[0], w[1], w[2], w[3]) for i, w in self.windows.items())
        if self.config.session_ids:
            return (self.watermark, self.known, windows, self.next_id)
        return (self.watermark, self.known, windows)

    # internals

    def _discard(self) -> bool:
        if self.config.session_ids and self.next_id:
            return False  # keep the session counter, as Bytewax does
        return not self.windows and (self.watermark is None or (
            self.known is not None and self.watermark <= self.known))

    def _shown_close(self, close_time: datetime) -> datetime:
        """A session reports its last value's time (Bytewax's close_time)."""
        if self.config.session:
            # a timedelta once SessionWindower.__post_init__ ran
            return close_time - cast(timedelta, cast(SessionWindower, self.config.windower).gap)
        return close_time

    def _late(self, window_id: int, open_time: Optional[datetime],
              close_time: Optional[datetime], value: Any, emits: List[Any]) -> None:
        if self.config.late is not None:
            emits.append(self.config.late(window_id, open_time, close_time, value))

    def _fixed_item(self, ts: datetime, value: Any, emits: List[Any]) -> None:
        config = self.config
        windower, agg, watermark = (cast(FixedWindower, config.windower), config.agg,
                                     self.watermark)
        for window_id in windower.ids_for(ts):
            open_time, close_time = windower.bounds(window_id)
            if watermark is not None and close_time <= watermark:
                self._late(window_id, open_time, close_time, value, emits)
                continue
            window = self.windows.get(window_id)
            if window is None:
                window = self.windows[window_id] = [open_time, close_time, 0, agg.start()]
            acc, now = agg.add(window[3], window[2], value)
            window[3] = acc
            window[2] += 1
            for out in now:
                emits.append(config.result(window_id, open_time, close_time, out))

    def _session_item(self, ts: datetime, value: Any, emits: List[Any]) -> None:
        config = self.config
        if self.watermark is not None and ts <= self.watermark:
            self._late(LATE_SESSION_ID, None, None, value, emits)
            return
        gap = cast(timedelta, cast(SessionWindower, config.windower).gap)  # after __post_init__
        agg = config.agg
        target: Optional[int] = None
        for window_id in self._by_open():
            window = self.windows[window_id]
            if window[0] - gap <= ts <= window[1]:
                target = window_id
                break
        if target is None:
            if config.session_ids and not config.number_at_close:
                target = self.next_id
                self.next_id += 1
            else:
                target = epoch_us(ts)   # unique among the key's sessions, no counter kept
            self.windows[target] = [ts, ts + gap, 0, agg.start()]
        window = self.windows[target]
        if ts < window[0]:
            window[0] = ts
        if ts + gap > window[1]:
            window[1] = ts + gap
        acc, now = agg.add(window[3], window[2], value)
        window[3] = acc
        window[2] += 1
        for out in now:
            emits.append(config.result(target, window[0], window[1] - gap, out))
        self._merge_sessions(emits)

    def _merge_sessions(self, emits: List[Any]) -> None:
        if len(self.windows) < 2:
            return
        agg, result = self.config.agg, self.config.result
        order = self._by_open()
        keep_id, keep = order[0], self.windows[order[0]]
        for window_id in order[1:]:
            window = self.windows[window_id]
            if window[0] <= keep[1]:  # opens before the earlier session closes
                acc, now = agg.merge(keep[3], keep[2], window[3], window[2])
                keep[3] = acc
                keep[2] += window[2]
                if window[1] > keep[1]:
                    keep[1] = window[1]
                del self.windows[window_id]
                for out in now:
                    emits.append(result(keep_id, keep[0], self._shown_close(keep[1]), out))
            else:
                keep_id, keep = window_id, window

    def _by_open(self) -> List[int]:
        return sorted(self.windows, key=lambda i: (self.windows[i][0], i))

    def _by_close(self, windows: Dict[int, List[Any]]) -> List[int]:
        return sorted(windows, key=lambda i: (windows[i][1], windows[i][0], i))

    def _close_due(self, emits: List[Any], reached: Optional[datetime] = None) -> None:
        """Close, in close-time order, every window whose close time is at or
        before the key's watermark or ``reached`` (the engine's clock); the
        key's watermark moves to the latest close time closed."""
        bound = later(self.watermark, reached)
        if bound is None or not self.windows:
            return
        due = {i: w for i, w in self.windows.items() if w[1] <= bound}
        if not due:
            return
        order = self._by_close(due)
        self.watermark = later(self.watermark, due[order[-1]][1])
        for window_id in order:
            self._close(window_id, emits)

    def _close(self, window_id: int, emits: List[Any]) -> None:
        open_time, close_time, count, acc = self.windows.pop(window_id)
        close_time = self._shown_close(close_time)
        if self.config.number_at_close:
            window_id = self.next_id
            self.next_id += 1
        for out in self.config.agg.close(acc, count):
            emits.append(self.config.result(window_id, open_time, close_time, out))


WindowBuilder = OperatorBuilder[Any, WindowOut, Tuple[Any, ...]]
"""What the window operators return: a builder of logics that emit ``WindowOut``."""


def _window_operator(name: str, windower: Windower, agg: Agg, *, ts: FieldSpec = "ts",
                     lateness: Optional[Duration] = None,
                     ordered: bool = False) -> WindowBuilder:
    return OperatorBuilder(name, WindowLogic,
                           WindowConfig(windower, agg, ts, lateness, ordered=ordered))


# -- the operators (public: re-exported by sparkwax.operators) ------------------

_DOC_COMMON = """
    ``ts``: the value's time (a field name or a callable returning an aware
    datetime). ``lateness``: close a window once this key's latest event time
    minus ``lateness`` reaches its close time, and report later values for it
    as late (default None: windows close on the engine's watermark only)."""


def fold_window(windower: Windower, builder: Callable[[], Any],
                folder: Callable[[Any, Any], Any],
                merger: Optional[Callable[[Any, Any], Any]] = None, *,
                ts: FieldSpec = "ts", lateness: Optional[Duration] = None,
                ordered: bool = True) -> WindowBuilder:
    """Per window, ``acc = folder(acc, value)`` from ``builder()``; emits the
    accumulator when the window closes. ``merger(older, newer)`` combines the
    accumulators of two sessions that merge (needed for session windows).
    ``ordered=True`` (Bytewax's default) folds the values in timestamp order
    when the window closes (the window keeps its values until then);
    ``ordered=False`` folds them as they come."""
    if isinstance(windower, SessionWindower) and merger is None and not ordered:
        raise ConfigError("fold_window over session windows needs merger=(older_acc, "
                          "newer_acc) -> acc, used when two sessions merge")
    return _window_operator("fold_window", windower, Fold(builder, folder, merger), ts=ts,
                            lateness=lateness, ordered=ordered)


def collect_window(windower: Windower, *, ts: FieldSpec = "ts",
                   lateness: Optional[Duration] = None, ordered: bool = True
                   ) -> WindowBuilder:
    """Per window, the list of its values: in timestamp order (ties in the
    order the logic saw them) with ``ordered=True``, Bytewax's default; in
    the order the logic saw them with ``ordered=False``."""
    return _window_operator("collect_window", windower, Collect(), ts=ts, lateness=lateness,
                            ordered=ordered)


def count_window(windower: Windower, *, ts: FieldSpec = "ts",
                 lateness: Optional[Duration] = None) -> WindowBuilder:
    """Per window, the number of its values."""
    return _window_operator("count_window", windower, Count(), ts=ts, lateness=lateness)


def reduce_window(windower: Windower, reducer: Callable[[Any, Any], Any], *,
                  ts: FieldSpec = "ts", lateness: Optional[Duration] = None) -> WindowBuilder:
    """Per window, ``reducer(acc, value)`` from its first value."""
    return _window_operator("reduce_window", windower, Reduce(reducer), ts=ts,
                            lateness=lateness)


def sum_window(windower: Windower, by: FieldSpec = None, *, ts: FieldSpec = "ts",
               lateness: Optional[Duration] = None) -> WindowBuilder:
    """Per window, the sum of ``by(value)`` (a field name or a callable;
    default the value itself). None numbers are skipped, like Spark's
    ``sum``; a window whose numbers are all None sums to None."""
    return _window_operator("sum_window", windower, Sum(field_getter(by, "by") or identity),
                            ts=ts, lateness=lateness)


def mean_window(windower: Windower, by: FieldSpec = None, *, ts: FieldSpec = "ts",
                lateness: Optional[Duration] = None) -> WindowBuilder:
    """Per window, the mean of ``by(value)`` (a field name or a callable;
    default the value itself) as a float. None numbers are skipped, like
    Spark's ``avg``; a window whose numbers are all None has a None mean."""
    return _window_operator("mean_window", windower, Mean(field_getter(by, "by") or identity),
                            ts=ts, lateness=lateness)


def max_window(windower: Windower, by: FieldSpec = None, *, ts: FieldSpec = "ts",
               lateness: Optional[Duration] = None) -> WindowBuilder:
    """Per window, the largest value by ``by`` (ties keep the earlier value)."""
    return _window_operator("max_window", windower, Extreme(field_getter(by) or identity, 1),
                            ts=ts, lateness=lateness)


def min_window(windower: Windower, by: FieldSpec = None, *, ts: FieldSpec = "ts",
               lateness: Optional[Duration] = None) -> WindowBuilder:
    """Per window, the smallest value by ``by`` (ties keep the earlier value)."""
    return _window_operator("min_window", windower, Extreme(field_getter(by) or identity, -1),
                            ts=ts, lateness=lateness)


def join_window(windower: Windower, sides: Union[int, Sequence[Any]] = 2, *,
                insert_mode: str = "last", emit_mode: str = "final", ts: FieldSpec = "ts",
                lateness: Optional[Duration] = None, ordered: bool = True) -> WindowBuilder:
    """Join per window: values are ``(side, value)`` pairs and ``ts`` reads the
    inner value. ``emit_mode="final"`` (default) emits when the window closes,
    ``"complete"`` as soon as every side has a value (then starts over within
    the window), ``"running"`` after every value. ``ordered=True`` (Bytewax's
    default) applies the values in timestamp order when the window closes, so
    "first"/"last" mean earliest/latest in event time and the "complete" and
    "running" emits come out at the close; ``ordered=False`` applies them as
    they come."""
    inner = field_getter(ts, "ts")
    if inner is None:
        raise ConfigError("join_window needs ts=")
    config = JoinConfig(sides, insert_mode, emit_mode)
    operator = _window_operator("join_window", windower, Join(config), ts=_SideValue(inner),
                                lateness=lateness, ordered=ordered)
    operator.sides = config.tags
    return operator


class _SideValue:
    """``get(value)`` of a ``(side, value)`` pair."""

    def __init__(self, get: Callable[[Any], Any]) -> None:
        self.get = get

    def __call__(self, item: Any) -> Any:
        return self.get(item[1])

    def __repr__(self) -> str:
        return f"{self.get!r} of the side's value"


for _operator in (fold_window, collect_window, count_window, reduce_window, sum_window,
                  mean_window, max_window, min_window, join_window):
    _operator.__doc__ = (_operator.__doc__ or "") + _DOC_COMMON
del _operator
