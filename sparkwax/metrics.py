"""What a step did: counts per micro-batch (and per run), the same on every host.

Spark shows them in its own progress reports, under
``observedMetrics["sparkwax:<step_id>"]`` of each ``StreamingQueryProgress``;
the offline runner puts them on ``RunResult.metrics`` (the whole run) and
``RunResult.batch_metrics`` (one per micro-batch).

>>> total = StepMetrics(rows_in=3, rows_late=1) + StepMetrics(rows_in=2, emits=4)
>>> total.rows_in, total.rows_late, total.emits
(5, 1, 4)
>>> StepMetrics.from_progress({"observedMetrics": {"sparkwax:s": {"rows_in": 7}}}, "s").rows_in
7
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Dict, Iterable, Mapping, Optional, Protocol, Sequence, Tuple, Union

from .errors import ConfigError

PREFIX = "sparkwax:"
INPUT_SUFFIX = "#in"  # the rows entering a step, counted before Spark's stateful operator
STAGE_PREFIX = "sparkwax-stage:"  # a chained step's stage: sparkwax-stage:<step id>/<stage id>
STAGE_FIELD = "stage"  # a stage's place in its chain (0 first), beside its counts


class _Row(Protocol):
    """A Spark ``Row`` (a tuple subclass, not a mapping), as far as metrics read it."""

    def asDict(self) -> Dict[str, Any]: ...


Observed = Union[Mapping[str, Any], _Row]
"""One ``observedMetrics`` entry: a Spark ``Row`` (classic sessions) or a mapping."""


@dataclass
class StepMetrics:
    """Counts of one step (a micro-batch's, or summed over several).

    ``rows_in``: values handed to the step (late ones included);
    ``rows_late``: values dropped as late (event time at or behind the
    watermark, or null) in EventTime mode; ``timers_fired``: timers fired,
    of both kinds (``on_notify`` and ``on_processing_notify`` calls), of
    which ``processing_timers_fired`` were processing-time deadlines of a
    two-clock step (``event_timers_fired`` is the rest); ``keys_created`` / ``keys_discarded``: keys that came into / went
    out of the state store (a key created and discarded within one
    activation counts in neither); ``emits``: values emitted;
    ``callback_us``: Python time spent in activations (builder, callbacks,
    snapshot and encoding), in microseconds: the only field that is not
    deterministic.
    """

    rows_in: int = 0
    rows_late: int = 0
    timers_fired: int = 0
    keys_created: int = 0
    keys_discarded: int = 0
    emits: int = 0
    callback_us: int = 0
    processing_timers_fired: int = 0

    @property
    def event_timers_fired(self) -> int:
        """``on_notify`` calls (the step's own clock)."""
        return self.timers_fired - self.processing_timers_fired

    def __add__(self, other: "StepMetrics") -> "StepMetrics":
        # Field by field, spelled out: hosts add one per activation (packed) or batch.
        return StepMetrics(self.rows_in + other.rows_in, self.rows_late + other.rows_late,
                           self.timers_fired + other.timers_fired,
                           self.keys_created + other.keys_created,
                           self.keys_discarded + other.keys_discarded,
                           self.emits + other.emits, self.callback_us + other.callback_us,
                           self.processing_timers_fired + other.processing_timers_fired)

    def values(self) -> Tuple[int, ...]:
        """The counts in ``FIELDS`` order."""
        return (self.rows_in, self.rows_late, self.timers_fired, self.keys_created,
                self.keys_discarded, self.emits, self.callback_us, self.processing_timers_fired)

    def as_dict(self) -> Dict[str, int]:
        return asdict(self)

    def deterministic(self) -> Dict[str, int]:
        """Every field but ``callback_us`` (what two runs of the same batches share)."""
        counts = self.as_dict()
        del counts["callback_us"]
        return counts

    @classmethod
    def from_mapping(cls, row: Observed) -> "StepMetrics":
        """From a mapping of the fields, or a Spark ``Row`` of them (what
        ``StreamingQueryProgress.observedMetrics`` holds)."""
        fields = _as_mapping(row)
        return cls(**{name: int(fields.get(name) or 0) for name in FIELDS})

    @classmethod
    def from_progress(cls, progress: Mapping[str, Any], step_id: str
                      ) -> Optional["StepMetrics"]:
        """The step's metrics in one ``StreamingQueryProgress`` (as
        ``query.lastProgress`` gives it); None if it has none."""
        return steps_in(progress).get(step_id)


FIELDS = tuple(f.name for f in fields(StepMetrics))


def steps_in(progress: Mapping[str, Any], spark_drops: bool = True
             ) -> Dict[str, StepMetrics]:
    """Every sparkwax step's metrics in one progress report, by step id.

    Spark drops the rows behind its watermark before a step's function sees
    them only if the step has timers and its event-time column is a key
    column, on the per-key host (``numRowsDroppedByWatermark``; else the
    driver drops them all). Such a
    step also counts the rows entering it, so those count here as
    ``rows_in`` and ``rows_late`` too, as they do offline (unless
    ``spark_drops=False``: then only what the sparkwax hosts saw).

    >>> steps_in({"observedMetrics": {"sparkwax:s": {"rows_in": 5, "rows_late": 1},
    ...                               "sparkwax:s#in": {"rows": 7}}})["s"].rows_late
    3
    """
    observed = progress.get("observedMetrics") or {}
    steps = {name[len(PREFIX):]: StepMetrics.from_mapping(row)
             for name, row in observed.items()
             if name.startswith(PREFIX) and not name.endswith(INPUT_SUFFIX)}
    for step_id, metrics in steps.items() if spark_drops else ():
        counted = observed.get(PREFIX + step_id + INPUT_SUFFIX)
        if counted is not None:
            rows = _as_mapping(counted).get("rows")
            dropped = max(int(rows or 0) - metrics.rows_in, 0)
            metrics.rows_in += dropped
            metrics.rows_late += dropped
    return steps


def by_batch(progresses: Iterable[Mapping[str, Any]], step_id: Optional[str] = None
             ) -> Dict[int, StepMetrics]:
    """A step's metrics per micro-batch id, from a query's progress reports
    (``query.recentProgress``; an idle report repeats a batch id without
    metrics). ``step_id`` None: the query's only sparkwax step.

    >>> reports = [{"batchId": 0, "observedMetrics": {"sparkwax:s": {"emits": 2}}},
    ...            {"batchId": 0}, {"batchId": 1, "observedMetrics": {"sparkwax:s": {}}}]
    >>> {number: m.emits for number, m in by_batch(reports, "s").items()}
    {0: 2, 1: 0}
    """
    found: Dict[int, StepMetrics] = {}
    for progress in progresses:
        steps = steps_in(progress)
        if step_id is None and len(steps) > 1:
            raise ConfigError(f"expected one sparkwax step in the query, found {list(steps)}")
        metrics = steps.get(step_id) if step_id is not None else next(iter(steps.values()),
                                                                          None)
        if metrics is not None:
            found[int(progress["batchId"])] = metrics
    return found


def stage_counts(stage_ids: Iterable[str]) -> Dict[str, StepMetrics]:
    """Zero counts for each stage of a chained step (none for another step)."""
    return {stage: StepMetrics() for stage in stage_ids}


def add_stages(into: Dict[str, StepMetrics], counts: Iterable[StepMetrics]) -> None:
    """Add a chained step's stage counts (in stage order) to ``into``'s."""
    for (stage, total), more in zip(list(into.items()), counts):
        into[stage] = total + more


def stage_name(step_id: str, stage_id: str) -> str:
    """The ``observedMetrics`` name of a chained step's stage.

    >>> stage_name("visits", "dedupe")
    'sparkwax-stage:visits/dedupe'
    """
    return f"{STAGE_PREFIX}{step_id}/{stage_id}"


def stages_in(progress: Mapping[str, Any], step_id: str) -> Dict[str, StepMetrics]:
    """A chained step's stages' metrics in one progress report, by stage id
    in chain order (empty for a step that is not a chain).

    >>> stages_in({"observedMetrics": {"sparkwax:v": {"emits": 3},
    ...                                "sparkwax-stage:v/dedupe": {"emits": 2}}}, "v")
    {'dedupe': StepMetrics(rows_in=0, rows_late=0, timers_fired=0, keys_created=0, \
keys_discarded=0, emits=2, callback_us=0, processing_timers_fired=0)}
    """
    start = stage_name(step_id, "")
    found = sorted((int(_as_mapping(row).get(STAGE_FIELD) or 0), name[len(start):], row)
                   for name, row in (progress.get("observedMetrics") or {}).items()
                   if name.startswith(start))
    return {stage: StepMetrics.from_mapping(row) for _, stage, row in found}


def stages_by_batch(progresses: Iterable[Mapping[str, Any]], step_id: str
                    ) -> Dict[int, Dict[str, StepMetrics]]:
    """A chained step's stages' metrics per micro-batch id (``by_batch`` of
    each stage)."""
    found: Dict[int, Dict[str, StepMetrics]] = {}
    for progress in progresses:
        stages = stages_in(progress, step_id)
        if stages:
            found[int(progress["batchId"])] = stages
    return found


def stages_summary(progress: Mapping[str, Any]) -> str:
    """The chained steps' stages of one progress report, for its progress
    line: each stage's rows in and emits out, in stage order ("" for a
    query with no chained step). With several chained steps, each stage
    is named ``step/stage``.

    >>> stages_summary({"observedMetrics": {
    ...     "sparkwax-stage:v/count": {"rows_in": 5, "emits": 3, "stage": 1},
    ...     "sparkwax-stage:v/dedupe": {"rows_in": 12, "emits": 5, "stage": 0}}})
    'stages dedupe 12 in 5 out, count 5 in 3 out'
    """
    observed = progress.get("observedMetrics") or {}
    steps = sorted({name[len(STAGE_PREFIX):].split("/", 1)[0]
                    for name in observed if name.startswith(STAGE_PREFIX)})
    shown = [(f"{step}/{stage}" if len(steps) > 1 else stage, counts)
             for step in steps for stage, counts in stages_in(progress, step).items()]
    if not shown:
        return ""
    return "stages " + ", ".join(f"{stage} {counts.rows_in:,} in {counts.emits:,} out"
                                 for stage, counts in shown)


def steps_summary(progress: Mapping[str, Any], order: Sequence[str] = ()) -> str:
    """Each step of a query of several steps: rows in, emits out, timers
    fired, in ``order`` (steps it does not name after, by id); "" for one step.

    >>> steps_summary({"observedMetrics": {"sparkwax:w": {"rows_in": 7, "emits": 3},
    ...     "sparkwax:s": {"rows_in": 12, "emits": 7, "timers_fired": 77}}}, ["s", "w"])
    'steps s 12 in 7 out 77 timers, w 7 in 3 out 0 timers'
    """
    steps = steps_in(progress)
    if len(steps) < 2:
        return ""
    rank = {step: place for place, step in enumerate(order)}
    shown = sorted(steps, key=lambda step: (rank.get(step, len(rank)), step))
    return "steps " + ", ".join(f"{step} {steps[step].rows_in:,} in {steps[step].emits:,} out "
                                f"{steps[step].timers_fired:,} timers" for step in shown)


def _as_mapping(row: Observed) -> Mapping[str, Any]:
    """An observed-metrics entry: a Spark ``Row`` (classic sessions) or a mapping."""
    return row.asDict() if hasattr(row, "asDict") else row


__all__ = ["FIELDS", "INPUT_SUFFIX", "PREFIX", "STAGE_PREFIX", "StepMetrics", "add_stages",
           "by_batch", "stage_counts", "stage_name", "stages_by_batch", "stages_in", "steps_in"]
