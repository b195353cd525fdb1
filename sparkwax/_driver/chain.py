"""Same-key steps fused into one (Flink's operator chaining): ``chain(first,
second, ...)`` is a builder whose logic runs each stage's logic for the key,
the first stage's emits being the second's items within the same activation.

Each stage keeps its own step id, logic, snapshot and timer, and runs
through its own ``Driver``'s steps (the same bodies as any step: no copy of
the contract), so its errors name the stage and the key:

>>> from sparkwax.step import Step
>>> from sparkwax.testing import run, Batch
>>> from sparkwax.testing.reference import Counter
>>> class Evens(Counter):
...     def on_item(self, value):
...         return ([value] if value % 2 == 0 else []), False
>>> result = run(chain(Step.of(Evens, step_id="evens"), Step.of(Counter, step_id="count")),
...              [Batch([("k", 1), ("k", 2), ("k", 4)])])
>>> result.by_key, result.snapshots
({'k': [1, 2]}, {'k': {'evens': 0, 'count': 2}})

An activation of the chained step is the driver's rule applied stage by
stage: the chain's timer is its stages' earliest; at it, each stage whose
own timer is due gets ``on_notify()`` before the items its upstream emits
reach it; an item goes through stage 1, its emits through stage 2, and so
on; at EOF each stage gets its upstream's ``on_eof`` emits, then its own
``on_eof()``. A stage's DISCARD drops that stage's logic (a fresh one for
its next item); the chain discards when no stage holds a logic. Its
snapshot is ``{stage id: snapshot}`` of the stages holding one.

Each stage has its own counts (``Activations.stages``, a host's progress
under ``sparkwax-stage:<step id>/<stage id>``, ``RunResult.stage_metrics``),
by the step's counting rule applied to the stage: the items it was handed,
its emits, its timers fired and the time in its callbacks; a key is created
(discarded) in a stage whose snapshot it had not (had) before the
activation and has (has not) after it. No stage sees a late row: the
chained step drops and counts them before the first stage.

>>> result.stage_metrics["evens"].emits, result.stage_metrics["count"].rows_in
(2, 2)
"""

from __future__ import annotations

from datetime import datetime
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from ..clock import current_clock
from ..errors import ConfigError
from ..logic import Builder, Logic
from .stages import StageCounts
from ..step import Step
from ..step_fields import builder_name, uses_deadlines
from ..timers import from_epoch_ms

if TYPE_CHECKING:
    from .driver import Driver

_UNBUILT = object()  # a stage not yet rebuilt from its snapshot (the key is not known yet)
STAGE_OPTIONS = frozenset({"step_id", "batch", "max_state_bytes"})
"""What a stage's own Step may set; the rest (time, order_by, ttl, output
schema...) is the chained step's."""


class Chain:
    """The builder ``chain`` returns (picklable: Spark ships it to every
    executor; each process makes its stages' drivers once)."""

    wants_key = True  # the driver hands its logics the key (their stages' errors name it)

    def __init__(self, stages: Sequence[Step]) -> None:
        self.stages = tuple(stages)
        self.stage_ids = tuple(stage.step_id for stage in self.stages)
        self.__qualname__ = ">".join(builder_name(stage.builder) for stage in self.stages)
        self._drivers: Optional[Tuple["Driver", ...]] = None
        self._counts: Optional[StageCounts] = None

    def __call__(self, resume: Any) -> "ChainLogic":
        return ChainLogic(self, resume)

    def __getstate__(self) -> Dict[str, Any]:
        return {**self.__dict__, "_drivers": None, "_counts": None}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Chain) and other.stages == self.stages

    def __hash__(self) -> int:
        return hash(self.stages)

    def __repr__(self) -> str:
        return f"chain({', '.join(map(repr, self.stage_ids))})"

    @property
    def drivers(self) -> Tuple["Driver", ...]:
        """One driver per stage, made at first use in this process."""
        if self._drivers is None:
            from .driver import Driver

            self._drivers = tuple(Driver(stage) for stage in self.stages)
        return self._drivers

    @property
    def counts(self) -> "StageCounts":
        """The stages' counts since the driver last took them (this process's)."""
        if self._counts is None:
            self._counts = StageCounts(len(self.stages))
        return self._counts


class ChainLogic:
    """One key's stages (see the module's docstring); a StatefulLogic."""

    def __init__(self, chain: Chain, resume: Any) -> None:
        if resume is not None and not isinstance(resume, dict):
            raise TypeError(f"a chain's snapshot is a dict of its stages' snapshots, got "
                            f"{type(resume).__name__}")
        self.chain = chain
        self.key: Any = None  # the driver sets it (Chain.wants_key)
        self.counts = chain.counts
        self._resume = resume or {}
        if resume is None:
            self.logics: List[Any] = [None] * len(chain.stage_ids)
        else:  # a key restored: the stages it held (the driver ends its activation)
            held = self.counts.started = tuple(map(resume.__contains__, chain.stage_ids))
            self.logics = [_UNBUILT if stage else None for stage in held]

    def _logic(self, index: int) -> Optional[Logic]:
        """Stage ``index``'s live logic, rebuilt from its snapshot at first use."""
        logic = self.logics[index]
        if logic is _UNBUILT:
            driver = self.chain.drivers[index]
            logic = driver._build(self.key, self._resume[self.chain.stage_ids[index]])
            self.logics[index] = logic
        built: Optional[Logic] = logic
        return built

    def _pass(self, items: List[Any], *, notify: bool = False, eof: bool = False
              ) -> Tuple[List[Any], bool]:
        """Every stage in order: its due timer (``notify``), the items its
        upstream emitted, its ``on_eof`` (``eof``); the last stage's emits,
        and whether no stage holds a logic."""
        key, now_ms = self.key, None
        if notify:  # (the driver calls on_notify inside an activation: it set a clock)
            clock = current_clock()
            now_ms = None if clock is None else clock.now_ms
        counts = self.counts
        nanos, out = counts.nanos, counts.emits
        counts.rows += len(items)  # (a later stage's items are its upstream's emits)
        started = perf_counter_ns()
        for index, driver in enumerate(self.chain.drivers):
            emits: List[Any] = []
            logic = self._logic(index)
            if notify and logic is not None:
                logic, fired = driver._due_timer(key, logic, driver._next_timer(key, logic),
                                                 now_ms, emits)
                counts.fired[index] += fired
            if items:
                logic = driver._take(key, logic, items, emits)
            if eof and logic is not None and driver._call(key, logic, "on_eof", emits):
                logic = None
            self.logics[index] = logic
            out[index] += len(emits)
            ended = perf_counter_ns()  # (a stage's end is the next one's start)
            nanos[index] += ended - started
            started = ended
            items = emits
        return items, all(logic is None for logic in self.logics)

    def on_item(self, value: Any) -> Tuple[List[Any], bool]:
        return self._pass([value])

    def on_notify(self) -> Tuple[List[Any], bool]:
        return self._pass([], notify=True)

    def on_eof(self) -> Tuple[List[Any], bool]:
        return self._pass([], eof=True)

    def _earliest(self) -> Optional[int]:
        """The earliest of the stages' timers (epoch ms), None: none."""
        timers = [driver._next_timer(self.key, logic)
                  for driver, logic in zip(self.chain.drivers,
                                           map(self._logic, range(len(self.logics))))
                  if logic is not None]
        due = [timer for timer in timers if timer is not None]
        return min(due) if due else None

    def notify_at(self) -> Optional[datetime]:
        earliest = self._earliest()
        return None if earliest is None else from_epoch_ms(earliest)

    def snapshot(self) -> Dict[str, Any]:
        snapshots: Dict[str, Any] = {}
        for index, (stage_id, driver) in enumerate(zip(self.chain.stage_ids,
                                                       self.chain.drivers)):
            logic = self._logic(index)
            if logic is not None:
                snapshots[stage_id] = driver.snapshot(self.key, logic)
        return snapshots


def chain(*stages: Union[Step, Builder]) -> Chain:
    """Same-key stages as one builder: ``sw.stateful(df, key="user",
    builder=sw.chain(dedupe, sessions), ...)``. A stage is a builder or a
    ``Step`` that sets only ``step_id``, ``batch`` and ``max_state_bytes``;
    stage ids must differ. Processing deadlines are not chained."""
    if len(stages) < 2:
        raise ConfigError(f"chain needs two or more stages, got {len(stages)}")
    for stage in stages:
        if not isinstance(stage, Step) and uses_deadlines(stage):  # (a Step refuses them)
            raise ConfigError(f"chain stage {builder_name(stage)!r}: processing deadlines "
                              f"(processing_notify_at) are not chained; run that logic as a "
                              f"step of its own")
    made = [stage if isinstance(stage, Step) else Step.of(stage) for stage in stages]
    for stage in made:
        own = Step.of(stage.builder, step_id=stage.step_id, batch=stage.batch,
                      max_state_bytes=stage.max_state_bytes)
        if stage != own:
            raise ConfigError(
                f"chain stage {stage.step_id!r}: a stage's Step sets only "
                f"{', '.join(sorted(STAGE_OPTIONS))}; give time, order_by, ttl, value and "
                f"the output schema to the chained step")
    ids = [stage.step_id for stage in made]
    repeated = sorted({stage_id for stage_id in ids if ids.count(stage_id) > 1})
    if repeated:
        raise ConfigError(f"chain stages need their own step ids, {repeated} is given twice: "
                          f"give each stage a step_id")
    return Chain(made)


__all__ = ["STAGE_OPTIONS", "Chain", "ChainLogic", "chain"]
