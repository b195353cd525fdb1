"""Steps of an offline script: what a streaming query lives through.

>>> from datetime import datetime, timezone
>>> script = [Batch([("a", 1), ("b", 2)]), Crash(), Batch([("a", 3)]), Eof()]
>>> Batch([("a", 1)], now=datetime(2024, 1, 1, tzinfo=timezone.utc))
Batch(items=[('a', 1)], now=datetime.datetime(2024, 1, 1, 0, 0, tzinfo=datetime.timezone.utc))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, List, Optional, Sequence, Tuple, Union


@dataclass(frozen=True)
class Batch:
    """A micro-batch with data: ``items`` are ``(key, value)`` pairs in arrival
    order. ``now`` is the processing time (default: the previous batch's).
    In EventTime mode the activation clock is the watermark, computed from
    earlier batches like Spark does; ``now`` there sets the second clock,
    read only by processing deadlines (``processing_notify_at``)."""

    items: Sequence[Tuple[Any, Any]] = field(default_factory=list)
    now: Optional[datetime] = None


@dataclass(frozen=True)
class Tick:
    """A micro-batch without data (Spark runs these for timers). ``now`` as
    for Batch."""

    now: Optional[datetime] = None


@dataclass(frozen=True)
class Crash:
    """The query dies and restarts: every live object is dropped; keys restore
    from their last committed snapshots."""


@dataclass(frozen=True)
class Eof:
    """End of input: ``on_eof`` for every key with state (what ``finish``
    does for a stream)."""


ScriptStep = Union[Batch, Tick, Crash, Eof]
Script = List[ScriptStep]


def describe(script: Sequence[ScriptStep]) -> str:
    """A readable, one-step-per-line rendering of a script (for failure reports)."""
    lines = []
    for number, step in enumerate(script):
        if isinstance(step, Batch):
            now = "" if step.now is None else f", now={step.now.isoformat()}"
            lines.append(f"  {number:>3}: Batch({list(step.items)!r}{now})")
        elif isinstance(step, Tick):
            now = "" if step.now is None else f"now={step.now.isoformat()}"
            lines.append(f"  {number:>3}: Tick({now})")
        else:
            lines.append(f"  {number:>3}: {type(step).__name__}()")
    return "\n".join(lines)
