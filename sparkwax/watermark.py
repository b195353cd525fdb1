"""Spark's event-time watermark over one or several inputs.

Spark keeps one watermark per input that has ``withWatermark`` (its max event
time minus the delay; 0 while that input has no data) and, under its default
``spark.sql.streaming.multipleWatermarkPolicy=min``, uses the smallest of
them, never moving backwards. A connected step (``connect``, ``join``) has
one input per side, so a side far ahead in event time cannot make the other
side's rows late. Both hosts and the driver use this one rule.

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

from __future__ import annotations

from typing import List, Optional

__all__ = ["Watermark"]


class Watermark:
    """Max event time per input (ms); :meth:`advance` computes Spark's global
    watermark, ``min(max - delay)`` over the inputs, monotonic, 0 at first."""

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

    def copy(self) -> "Watermark":
        twin = Watermark(self.delay_ms, len(self.maxima), self.value_ms)
        twin.maxima = list(self.maxima)
        return twin

    @property
    def seen(self) -> bool:
        """Whether any input has data."""
        return any(ms is not None for ms in self.maxima)
