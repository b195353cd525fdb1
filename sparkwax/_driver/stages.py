"""A chained step's counts per stage (``chain``'s docstring says what each
counts): ``StageCounts``, added to by the chain's passes and by the driver,
which sees each activation's start and end (``stages_held``).
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence, Tuple

from ..logic import Logic
from ..metrics import StepMetrics


class Staged(Protocol):
    """A builder of stages (``chain.Chain``: its ``wants_key`` says so)."""

    stage_ids: Tuple[str, ...]

    @property
    def counts(self) -> "StageCounts": ...


class StageCounts:
    """Each stage's counts since the last ``take`` (``ChainLogic`` adds the
    items, emits, timers and time of its passes; the driver, which sees an
    activation's start and end, adds each key's stages held before and after).

    >>> counts = StageCounts(2)
    >>> counts.keys((True, False), (False, True))
    >>> [(m.keys_created, m.keys_discarded) for m in counts.take()]
    [(0, 1), (1, 0)]
    """

    __slots__ = ("rows", "fired", "emits", "nanos", "created", "discarded")

    def __init__(self, stages: int) -> None:
        self.rows, self.fired, self.emits, self.nanos, self.created, self.discarded = (
            [0] * stages for _ in range(6))

    def keys(self, before: Sequence[bool], after: Sequence[bool]) -> None:
        """One key's activation: the stages holding its state before and after
        (the counting rule of ``results.summed``, stage by stage)."""
        if before == after:  # (most activations: a call less)
            return
        for index, (had, has) in enumerate(zip(before, after)):
            if has and not had:
                self.created[index] += 1
            elif had and not has:
                self.discarded[index] += 1

    def take(self) -> Tuple[StepMetrics, ...]:
        """The stages' counts, in stage order, from zero again."""
        taken = tuple(StepMetrics(rows, 0, fired, created, discarded, emits, nanos // 1000)
                      for rows, fired, created, discarded, emits, nanos in zip(
                          self.rows, self.fired, self.created, self.discarded, self.emits,
                          self.nanos))
        self.__init__(len(self.rows))  # type: ignore[misc]
        return taken


def stages_held(staged: Staged, logic: Optional[Logic]) -> Tuple[bool, ...]:
    """Which of the stages hold state in a key's ``logic`` (a ``ChainLogic``,
    maybe in the step's ttl or state-limit wrapper; None: none)."""
    inner: Any = logic
    while getattr(type(inner), "forwards_deadlines", False):  # ttl, state limit
        inner = inner.inner
    if inner is None:
        return (False,) * len(staged.stage_ids)
    return tuple(stage is not None for stage in inner.logics)


__all__ = ["StageCounts", "Staged", "stages_held"]
