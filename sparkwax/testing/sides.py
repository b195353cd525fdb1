"""Which input (side) an offline value comes from, for per-side watermarks.

A connected step (``connect``, ``join``, ``join_window``) has one input per
side, and Spark keeps a watermark per input (see ``sparkwax.timers``). The
offline runner reads a value's side from its ``Tagged`` wrapper and needs the
full list of sides (a side without data holds the watermark at 0): ``sides=``
given to the runner, or the ``sides`` a join builder carries.

>>> from sparkwax.operators import Tagged, joiner
>>> inputs = InputSides(joiner(["orders", "payments"]), None, "join")
>>> inputs.count, inputs.index_of("k", Tagged("payments", {}))
(2, 1)
>>> InputSides(lambda resume: None, None, "s").index_of("k", {"ts": 1})
0
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from ..errors import ConfigError, InputError
from ..operators.tagged import Tagged

__all__ = ["InputSides"]


class InputSides:
    """The sides of a step (``None``: one plain input) and each value's index."""

    def __init__(self, builder: Callable, sides: Optional[Sequence[Any]], step_id: str):
        if sides is None:
            sides = getattr(builder, "sides", None)
        self.step_id = step_id
        self.tags = None if sides is None else tuple(sides)
        if self.tags is not None and (not self.tags or len(set(self.tags)) != len(self.tags)):
            raise ConfigError(f"step {step_id!r}: sides must be distinct side names, got "
                              f"{sides!r}")
        self.index = {} if self.tags is None else {t: i for i, t in enumerate(self.tags)}
        self.count = 1 if self.tags is None else len(self.tags)

    def index_of(self, key, value) -> int:
        """The input index of ``value`` (0 for a step with one input)."""
        if self.tags is None:
            if isinstance(value, Tagged):
                raise ConfigError(
                    f"step {self.step_id!r}: a Tagged value from side {value.side!r} in "
                    f"EventTime mode, but the run does not know the step's sides; pass "
                    f"sides=[...] (all of them: Spark keeps a watermark per side and uses "
                    f"the smallest, so a side without data holds it back)")
            return 0
        if not isinstance(value, Tagged):
            raise InputError(self.step_id, key, "event time", value,
                             f"a step with sides {list(self.tags)} needs Tagged values "
                             f"(use tag(side, items))")
        try:
            return self.index[value.side]
        except (KeyError, TypeError):
            raise InputError(self.step_id, key, "event time", value,
                             f"unknown side {value.side!r}; the sides are "
                             f"{list(self.tags)}") from None
