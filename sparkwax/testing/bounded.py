"""``run_bounded``: what the Spark engine does with a bounded (batch)
DataFrame, offline.

>>> from sparkwax.testing import run_bounded
>>> from sparkwax.testing.reference import Counter
>>> run_bounded(Counter, [("a", "x"), ("b", "y"), ("a", "z")]).by_key
{'a': [1, 2], 'b': [1]}
"""

from __future__ import annotations

from itertools import repeat
from typing import TYPE_CHECKING, Any, Dict, List, Sequence, Tuple, Union

from .._driver import Driver, KeyBatch, sorted_keys
from ..logic import Builder
from ..metrics import add_stages, stage_counts
from ..step import Step, StepOptions, as_step
from ..timers import from_epoch_ms
from .result import RunResult, output_checker

if TYPE_CHECKING:
    from typing_extensions import Unpack


def run_bounded(builder: Union[Builder, Step], items: Sequence[Tuple[Any, Any]],
                **options: Unpack[StepOptions]) -> RunResult:
    """What the Spark engine does with a bounded (batch) DataFrame: each key's
    items as one ordered sequence (watermark per key, item by item, in
    EventTime mode; per side, then the minimum, for ``Tagged`` values), then
    ``on_eof``; with ``output_schema`` every emit is checked as on Spark. The
    step options as for ``run`` (docs/guide.md, "Step options"), or
    ``builder`` a ready ``sparkwax.Step``."""
    step = as_step(builder, **options)
    driver = Driver(step)
    outputs = output_checker(step)
    groups: Dict[Any, List[Any]] = {}
    for key, value in items:
        groups.setdefault(key, []).append(value)
    result = RunResult(step_id=step.step_id, stage_metrics=stage_counts(driver.stage_ids))
    for key in sorted_keys(list(groups)):
        values = groups[key]
        acts = driver.activate_keys(KeyBatch([key], [values], bounded=True, read_columns=True,
                                             snapshots=True))
        emits = acts.emits[0]
        if outputs is not None and emits:
            outputs.check(driver.step_id, key, emits)
        result.outputs.extend(zip(repeat(key), emits))
        result.late += acts.metrics.rows_late
        result.activations += 1
        result.metrics += acts.metrics
        add_stages(result.stage_metrics, acts.stages)
        if acts.states[0] is not None:
            result.snapshots[key] = acts.snapshots[0]
            if acts.timers[0] is not None:
                result.timers[key] = from_epoch_ms(acts.timers[0])
    result.batch_metrics.append(result.metrics)
    if result.stage_metrics:
        result.batch_stage_metrics.append(dict(result.stage_metrics))
    return result
