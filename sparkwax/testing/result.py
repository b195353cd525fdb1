"""What an offline run produced (``RunResult``), and the check of its emits
against a step's ``output_schema``: the runner's and ``run_bounded``'s.

>>> from sparkwax.testing import Batch, run
>>> from sparkwax.testing.reference import Counter
>>> result = run(Counter, [Batch([("a", "x"), ("a", "y"), ("b", "z")])])
>>> result.by_key, result.live_keys
({'a': [1, 2], 'b': [1]}, 2)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Optional, Tuple

from ..metrics import StepMetrics
from ..schema import OutputSchema
from ..step import Step


@dataclass
class RunResult:
    """What a run produced."""

    outputs: List[Tuple[Any, Any]] = field(default_factory=list)  # (key, value), emission order
    snapshots: Dict[Any, Any] = field(default_factory=dict)      # key -> last committed snapshot
    timers: Dict[Any, datetime] = field(default_factory=dict)    # key -> next notify_at (UTC)
    deadlines: Dict[Any, datetime] = field(default_factory=dict)  # -> processing_notify_at
    late: int = 0                                                # values dropped as late
    activations: int = 0
    lost_state: List[str] = field(default_factory=list)          # LostStateWarning messages
    metrics: StepMetrics = field(default_factory=StepMetrics)    # counts of the whole run
    batch_metrics: List[StepMetrics] = field(default_factory=list)  # one per micro-batch
    step_id: str = ""  # the step the metrics are of (its name in errors and on Spark)
    # a chained step's (sw.chain) counts of each stage, by stage id: the whole run's, and
    # one per micro-batch (empty for any other step)
    stage_metrics: Dict[str, StepMetrics] = field(default_factory=dict)
    batch_stage_metrics: List[Dict[str, StepMetrics]] = field(default_factory=list)

    @property
    def by_key(self) -> Dict[Any, List[Any]]:
        """Outputs grouped per key, each list in emission order."""
        grouped: Dict[Any, List[Any]] = {}
        for key, value in self.outputs:
            grouped.setdefault(key, []).append(value)
        return grouped

    @property
    def live_keys(self) -> int:
        """Keys holding state at the end of the run."""
        return len(self.snapshots)


def output_checker(step: Step) -> Optional[OutputSchema]:
    """The checker of a step's ``output_schema`` (None: emits are not checked)."""
    if step.output_schema is None:
        return None
    return OutputSchema.of(step.output_schema, step.step_id)
