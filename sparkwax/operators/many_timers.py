"""``Timers``: several named timers for one key, kept in its snapshot.

A key has one engine timer (``notify_at``), as in Bytewax and Spark's
``GroupState``. ``Timers`` multiplexes many deadlines onto it: ``set`` and
``cancel`` them by name, return ``timers.notify_at()`` from ``notify_at``,
and in ``on_notify`` take the ones that are due with ``timers.pop_due()``
(every deadline at or before the activation's clock, ``sparkwax.now()``, in
deadline order). Keep ``timers.snapshot()`` (a tuple of ``(name, deadline)``
pairs) in the logic's snapshot and rebuild with ``Timers(that)``.

>>> from datetime import datetime, timedelta, timezone
>>> t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
>>> timers = Timers()
>>> timers.set("reminder", t0 + timedelta(minutes=5))
>>> timers.set("expiry", t0 + timedelta(minutes=1))
>>> timers.notify_at() == t0 + timedelta(minutes=1)
True
>>> [name for name, _ in timers.pop_due(t0 + timedelta(minutes=2))]
['expiry']
>>> again = Timers(timers.snapshot())
>>> again == timers, len(again), "reminder" in again
(True, 1, True)
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Dict, Hashable, Iterable, Iterator, List, Optional, Tuple, cast

from ..clock import now as activation_now
from ..builders import aware, later


class Timers:
    """Named deadlines (aware datetimes) of one key; see the module docstring.

    ``Timers(resume)`` takes ``None``, another ``Timers`` or the
    ``snapshot()`` of one. Names are any hashable, picklable values; setting a
    name again moves its deadline. Deadlines that tie come out in the order
    their names were first set. ``notify_at`` scans every deadline: meant for
    a handful to a few thousand timers per key.
    """

    __slots__ = ("_at",)

    def __init__(self, resume: Any = None) -> None:
        if resume is None:
            self._at: Dict[Hashable, datetime] = {}
        elif isinstance(resume, Timers):
            self._at = dict(resume._at)
        else:
            self._at = dict(resume)

    def set(self, name: Hashable, at: datetime) -> None:
        """Arm (or move) the timer ``name`` to fire at ``at`` (an aware datetime)."""
        self._at[name] = aware(at, f"timer {name!r}")

    def cancel(self, name: Hashable) -> None:
        """Forget the timer ``name`` (nothing happens if it is not set)."""
        self._at.pop(name, None)

    def clear(self) -> None:
        self._at.clear()

    def get(self, name: Hashable, default: Optional[datetime] = None) -> Optional[datetime]:
        """The deadline of ``name``, or ``default``."""
        return self._at.get(name, default)

    def notify_at(self) -> Optional[datetime]:
        """The earliest deadline, or None without timers: return it from the
        logic's ``notify_at`` (together with any other deadline it has)."""
        return min(self._at.values()) if self._at else None

    def pop_due(self, now: Optional[datetime] = None) -> List[Tuple[Hashable, datetime]]:
        """Remove and return the ``(name, deadline)`` pairs due by ``now``, in
        deadline order. ``now`` defaults to the activation's clock
        (``sparkwax.now()``: the watermark, or the processing time), and to
        the earliest deadline when there is no clock (bounded input in
        ProcessingTime mode, or a call outside an activation), so that in
        ``on_notify`` at least the timer that fired comes out."""
        if not self._at:
            return []
        reached = (cast(datetime, later(self.notify_at(), activation_now())) if now is None
                   else aware(now, "now"))
        order = {name: position for position, name in enumerate(self._at)}
        due = sorted(((name, at) for name, at in self._at.items() if at <= reached),
                     key=lambda pair: (pair[1], order[pair[0]]))
        for name, _ in due:
            del self._at[name]
        return due

    def snapshot(self) -> Tuple[Tuple[Hashable, datetime], ...]:
        """Plain data for the logic's snapshot: ``((name, deadline), ...)``."""
        return tuple(self._at.items())

    def __contains__(self, name: object) -> bool:
        return name in self._at

    def __len__(self) -> int:
        return len(self._at)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._at)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Timers):
            return NotImplemented
        return self._at == other._at

    def __getstate__(self) -> Tuple[Tuple[Hashable, datetime], ...]:
        return self.snapshot()

    def __setstate__(self, state: Iterable[Tuple[Hashable, datetime]]) -> None:
        self._at = dict(state)

    def __repr__(self) -> str:
        inside = ", ".join(f"{name!r}: {at.isoformat()}" for name, at in self._at.items())
        return f"Timers({{{inside}}})"


__all__ = ["Timers"]
