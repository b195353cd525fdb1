"""``sequence(steps, within)``: detect a pattern of values per key.

Each step is a predicate on one value; a *match* is one value per step, in
order, all within ``within`` of the first one (by ``ts``), and it is emitted
as the list of those values. For example three failed logins followed by a
successful one within five minutes::

    failed = lambda e: e["outcome"] == "failed"
    sequence([failed, failed, failed, lambda e: e["outcome"] == "ok"], within="5 minutes")

Matching, one value at a time in the order the logic sees the key's values:

- **Partial matches.** A value that satisfies the first step starts a
  partial match; a value that satisfies the next step of a partial match
  extends it (one value extends every partial match whose next step it
  satisfies, and may also start a new one).
- **Contiguity.** ``"strict"`` (default): the steps must match consecutive
  values of the key; a value that does not satisfy a partial match's next
  step ends that partial match. ``"relaxed"``: values that do not satisfy
  the next step are skipped.
- **Within.** A partial match expires when the clock (the watermark, or the
  processing time) reaches its first value's time plus ``within``: its timer
  (one per partial match, kept in a :class:`Timers`) drops it. A value whose
  time is ``within`` or more after a partial match's first value also finds
  it expired, even before the timer fires.
- **One partial match per step.** When two partial matches wait for the same
  step, only the one that started last is kept: they would take the same
  values from then on, and the later one lives longer. So a match is the
  latest, tightest one, and a key holds at most ``len(steps) - 1`` partial
  matches (at most ``len(steps) * (len(steps) - 1) / 2`` values): the state
  is bounded whatever the input.
- **After a match.** By default every partial match is dropped, so the values
  of one match never start or extend another (Flink's "skip past last
  event"); ``overlapping=True`` keeps the other partial matches.
- A key without a partial match holds no state; at EOF partial matches are
  dropped (nothing is emitted for them).

>>> from datetime import datetime, timedelta, timezone
>>> import sparkwax as sw
>>> from sparkwax.testing import Batch, run
>>> t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
>>> login = lambda minute, outcome: {"ts": t0 + timedelta(minutes=minute), "outcome": outcome}
>>> failed, ok = (lambda e: e["outcome"] == "failed"), (lambda e: e["outcome"] == "ok")
>>> attempts = [login(0, "failed"), login(1, "failed"), login(2, "failed"), login(3, "ok")]
>>> out = run(sequence([failed, failed, ok], within="5 minutes"),
...           [Batch([("ann", a) for a in attempts])], time=sw.EventTime("ts"))
>>> [[e["ts"].minute for e in match] for match in out.by_key["ann"]]
[[1, 2, 3]]
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, List, Optional, Sequence, Set, Tuple

from ..errors import ConfigError
from ..logic import DISCARD, RETAIN, StatefulLogic
from ..builders import Duration, FieldSpec, OperatorBuilder, TimeOf, as_timedelta, time_getter
from .many_timers import Timers

CONTIGUITY = ("strict", "relaxed")


class SequenceConfig:
    """What a ``sequence`` builder holds."""

    def __init__(self, steps: Tuple[Callable[[Any], bool], ...], within: timedelta,
                 time_of: TimeOf, strict: bool, overlapping: bool) -> None:
        self.steps = steps
        self.within = within
        self.time_of = time_of
        self.strict = strict
        self.overlapping = overlapping


Partial = Tuple[int, Tuple[Any, ...]]
"""A partial match: its id and the values matched so far."""


class SequenceLogic(StatefulLogic[Any, List[Any], Tuple[Any, ...]]):
    """One key's partial matches.

    Snapshot: ``(next_id, partials, timers)``: ``partials`` is a tuple of
    ``(id, values)`` in the order they started (``len(values)`` is the number
    of steps matched so far), ``timers`` the :class:`Timers` snapshot with
    each partial match's expiry under its id, and ``next_id`` the id of the
    next partial match (a key that holds nothing is discarded, so it starts again at 0).
    """

    partials: List[Partial]

    def __init__(self, config: SequenceConfig, resume: Optional[Tuple[Any, ...]] = None) -> None:
        self.config = config
        if resume is None:
            self.next_id, self.partials, self.timers = 0, [], Timers()
        else:
            next_id, partials, timers = resume
            self.next_id, self.partials, self.timers = next_id, list(partials), Timers(timers)

    def on_item(self, value: Any) -> Tuple[Iterable[List[Any]], bool]:
        config = self.config
        steps, timers = config.steps, self.timers
        ts = config.time_of(value)
        earliest = timers.notify_at()
        if earliest is not None and earliest <= ts:
            self._expire(ts)  # expired before this value (the timer has not fired yet)
        kept: List[Partial] = []
        emits: List[Any] = []
        for ident, values in self.partials:
            if steps[len(values)](value):
                values = values + (value,)
                if len(values) == len(steps):
                    emits.append(list(values))
                    timers.cancel(ident)
                    continue
                kept.append((ident, values))
            elif config.strict:
                timers.cancel(ident)
            else:
                kept.append((ident, values))
        if emits and not config.overlapping:
            for ident, _ in kept:
                timers.cancel(ident)
            kept = []
        elif steps[0](value):
            if len(steps) == 1:
                emits.append([value])
            else:
                kept.append((self.next_id, (value,)))
                timers.set(self.next_id, ts + config.within)
                self.next_id += 1
        self.partials = self._latest_per_step(kept)
        return emits, self._discard()

    def notify_at(self) -> Optional[datetime]:
        return self.timers.notify_at()

    def on_notify(self) -> Tuple[Iterable[List[Any]], bool]:
        self._expire()
        return (), self._discard()

    def on_eof(self) -> Tuple[Iterable[List[Any]], bool]:
        return (), DISCARD  # no value will complete a partial match any more

    def snapshot(self) -> Tuple[Any, ...]:
        return (self.next_id, tuple(self.partials), self.timers.snapshot())

    # internals

    def _expire(self, now: Optional[datetime] = None) -> None:
        expired = {ident for ident, _ in self.timers.pop_due(now)}
        if expired:
            self.partials = [p for p in self.partials if p[0] not in expired]

    def _latest_per_step(self, partials: List[Partial]) -> List[Partial]:
        """Of partial matches waiting for the same step, the one that started
        last (partials are in start order)."""
        seen: Set[int] = set()
        latest: List[Partial] = []
        for ident, values in reversed(partials):
            if len(values) in seen:
                self.timers.cancel(ident)
                continue
            seen.add(len(values))
            latest.append((ident, values))
        latest.reverse()
        return latest

    def _discard(self) -> bool:
        return RETAIN if self.partials else DISCARD


def sequence(steps: Sequence[Callable[[Any], bool]], within: Duration, *,
             ts: FieldSpec = "ts", contiguity: str = "strict",
             overlapping: bool = False) -> OperatorBuilder[Any, List[Any], Tuple[Any, ...]]:
    """Emit, as a list, every run of values that satisfies ``steps`` (one
    predicate per value, in order) within ``within`` of its first value.

    ``contiguity="strict"`` (default) needs the steps to match consecutive
    values of the key; ``"relaxed"`` skips values in between that do not
    match. ``overlapping=False`` (default) starts afresh after a match;
    ``True`` lets other partial matches go on. ``ts`` reads a value's time
    (a field name or a callable). Partial matches expire by timer ``within``
    after their first value; see the module docstring for the exact rules."""
    steps = list(steps) if not callable(steps) else [steps]
    if not steps:
        raise ConfigError("sequence needs at least one step (a predicate on a value)")
    for position, step in enumerate(steps):
        if not callable(step):
            raise ConfigError(f"sequence: step {position} must be a predicate (a callable "
                              f"taking a value), got {step!r}")
    if contiguity not in CONTIGUITY:
        raise ConfigError(f"sequence: contiguity must be one of {CONTIGUITY}, "
                          f"got {contiguity!r}")
    if within is None:
        raise ConfigError("sequence needs within= (how long a partial match may wait; "
                          "partial matches expire so a key's state stays bounded)")
    span = as_timedelta(within, "sequence within")
    if not span:
        raise ConfigError("sequence: within must be positive")
    config = SequenceConfig(tuple(steps), span, time_getter(ts), contiguity == "strict",
                            bool(overlapping))
    return OperatorBuilder("sequence", SequenceLogic, config)
