"""What a streaming step records of itself in its output schema's metadata,
for ``sw.start`` and ``state check`` to compare with a checkpoint's record:
its key and output columns, time mode, timers and state layout
(docs/semantics.md, "Architecture"; ``start.step_descriptions`` reads it).

>>> from sparkwax.testing.reference import Counter
>>> logic_description(Step.of(Counter, step_id="c"), "per_key", None)["state"]
'per_key/1'
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence

from pyspark.sql import types as T

from ...step import Host, Step
from ...timers import EventTime, TimeMode
from ..hosts import two_clocks as two_clock_hosts
from ..hosts.host import NO_TIMEOUT
from .schemas import STEP_METADATA, UPSTREAM_METADATA


def step_timeout(step: Step, two_clocks: bool) -> str:
    """Spark's timeout conf for a streaming step's groups: a two-clock step's
    own, else its time mode's when the logic (or ``ttl=``) has timers, else
    none."""
    if two_clocks:
        return two_clock_hosts.TIMEOUT
    return step.time.spark_timeout if step.uses_timers() else NO_TIMEOUT


def state_layout(step: Step, host: Host, buckets: Optional[int], two_clocks: bool,
                 follows: Optional[Sequence[Any]] = None) -> str:
    """A streaming step's state row as its description records it:
    ``per_key/1`` or ``packed/1 buckets=N``, then `` ttl`` (``ttl=`` wraps
    every snapshot), `` two-clock`` (a deadline beside the timer) and
    `` tws`` (a step after another, in a transformWithStateInPandas
    ValueState: ``following``).

    >>> from sparkwax.testing.reference import Counter
    >>> state_layout(Step.of(Counter, ttl="1 hour"), "packed", 8, False)
    'packed/1 buckets=8 ttl'
    """
    head = f"packed/1 buckets={buckets}" if host == "packed" else "per_key/1"
    return head + (" ttl" if step.ttl is not None else "") + \
        (" two-clock" if two_clocks else "") + (" tws" if follows is not None else "")


def logic_description(step: Step, host: Host, buckets: Optional[int]) -> Dict[str, Any]:
    """What ``plan_step`` records for ``step`` as a streaming step on
    ``host``, but for the key and output columns (a DataFrame's: empty
    here): the parts its logic and step options decide (time mode, timers,
    deadlines, state layout). ``state check`` compares it with a
    checkpoint's record. May build one sample logic (a builder function)."""
    step = step.knowing_deadlines()
    two_clocks = bool(step.two_clocks)
    return step_description(step.step_id, [], {}, T.StructType([]), step.time,
                             step_timeout(step, two_clocks),
                             state_layout(step, host, buckets, two_clocks))


def step_description(step_id: str, keys: Sequence[str], fields: Mapping[str, T.StructField],
                      schema: T.StructType, time: TimeMode, timeout: str,
                      state: str) -> Dict[str, Any]:
    """What a checkpoint must keep stable for this step (see start.py)."""
    return {
        "step_id": step_id,
        "key": ", ".join(f"{k} {fields[k].dataType.simpleString()}" for k in keys),
        "output": ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in schema.fields),
        "time": time.kind,
        "event_time": f"{time.column} - {time.delay_ms} ms" if isinstance(time, EventTime)
        else None,
        "timers": timeout != NO_TIMEOUT,
        "state": state,
        **({"deadlines": True} if "two-clock" in state else {}),
    }


def described(schema: T.StructType, description: Dict[str, Any],
              follows: Sequence[Dict[str, Any]] = ()) -> T.StructType:
    """``schema`` with the step's description as every field's metadata
    (``start.step_descriptions`` reads it back): given to
    ``applyInPandasWithState`` as its output type, the step's output
    attributes carry it with no projection of their own (one plan node
    fewer per micro-batch; see docs/performance.md, "Small micro-batches").

    >>> field = described(T.StructType([T.StructField("n", T.LongType())]), {"step_id": "s"})[0]
    >>> field.name, field.metadata
    ('n', {'sparkwax.step': {'step_id': 's'}})
    """
    metadata: Dict[str, Any] = {STEP_METADATA: description}
    if follows:
        metadata[UPSTREAM_METADATA] = list(follows)
    return T.StructType([T.StructField(f.name, f.dataType, f.nullable, metadata)
                         for f in schema.fields])
