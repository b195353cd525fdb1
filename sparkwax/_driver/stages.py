"""A chained step's counts per stage (``chain``'s docstring says what each
counts): ``StageCounts``, added to by the chain's passes and by the driver,
which ends each key's activation (``StageCounts.ended``).
"""

from __future__ import annotations

from itertools import repeat
from operator import is_not
from typing import Any, Optional, Protocol, Sequence, Tuple

from ..logic import Logic
from ..metrics import StepMetrics


class Staged(Protocol):
    """A builder of stages (``chain.Chain``: its ``wants_key`` says so)."""

    stage_ids: Tuple[str, ...]

    @property
    def counts(self) -> "StageCounts": ...


class StageCounts:
    """Each stage's counts since the last ``take``: ``ChainLogic`` adds the
    items, emits, timers and time of its passes, and records which stages a
    restored key held (``started``); the driver ends each key's activation
    with the logic it has then (``ended``), which counts the keys created
    and discarded stage by stage.

    >>> counts = StageCounts(2)
    >>> counts.started = (True, False)  # restored holding stage 0 only
    >>> counts.keys((False, True))      # it ends holding stage 1 only
    >>> [(m.keys_created, m.keys_discarded) for m in counts.take()]
    [(0, 1), (1, 0)]
    """

    __slots__ = ("rows", "fired", "emits", "nanos", "created", "discarded", "started", "_none")

    def __init__(self, stages: int) -> None:
        self.fired, self.emits, self.nanos, self.created, self.discarded = (
            [0] * stages for _ in range(5))
        self.rows = 0  # the first stage's items (each later one's are its upstream's emits)
        self._none = (False,) * stages
        self.started: Optional[Tuple[bool, ...]] = None  # a restored key's, until it ends

    def held(self, logic: Optional[Logic]) -> Tuple[bool, ...]:
        """Which stages hold state in a key's ``logic`` (the chain's, maybe in
        the step's ttl or state-limit wrapper; None: none)."""
        inner: Any = logic
        while getattr(type(inner), "forwards_deadlines", False):  # ttl, state limit
            inner = inner.inner
        if inner is None:
            return self._none
        return tuple(map(is_not, inner.logics, repeat(None)))  # (C level, a key per call)

    def ended(self, logic: Optional[Logic]) -> None:
        """A key's activation ended with ``logic`` (``held``)."""
        self.keys(self.held(logic))

    def keys(self, after: Sequence[bool]) -> None:
        """The stages a key holds after its activation, against those it held
        before (``started``; none: a new key): the counting rule of
        ``results.summed``, stage by stage."""
        before, self.started = self.started or self._none, None
        if before == after:  # (most activations: a loop less)
            return
        for index, (had, has) in enumerate(zip(before, after)):
            if has and not had:
                self.created[index] += 1
            elif had and not has:
                self.discarded[index] += 1

    def take(self) -> Tuple[StepMetrics, ...]:
        """The stages' counts, in stage order, from zero again."""
        rows = [self.rows, *self.emits[:-1]]
        taken = tuple(StepMetrics(items, 0, fired, created, discarded, emits, nanos // 1000)
                      for items, fired, created, discarded, emits, nanos in zip(
                          rows, self.fired, self.created, self.discarded, self.emits,
                          self.nanos))
        self.__init__(len(self.emits))  # type: ignore[misc]
        return taken


__all__ = ["StageCounts", "Staged"]
