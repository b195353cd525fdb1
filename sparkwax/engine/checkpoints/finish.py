"""``finish``: end a checkpointed stream. For every live key of a step's
state, restore from the checkpoint's snapshot, fire a due timer, call
``on_eof``, and return the outputs (the checkpoint is not modified). A
per-key step's keys end on the executors (``FinishHost``); a packed step's on
the driver (its state rows are buckets).
"""

from __future__ import annotations

import time as wall_clock
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Tuple, Union

import pandas as pd

from ..._driver import Clocks, Driver, KeyBatch, sorted_keys
from ...errors import ConfigError
from ...logic import Builder
from ...step import Step, StepOptions, as_step
from .snapshots import active_session, is_packed, last_watermark_ms, packed_blobs, state_frame
from .state.asked import one_step_operator
from .diagnose import explained, read_steps
from ..hosts.columns import plain_key
from ..hosts.outputs import OutputBuilder
from ..planning.schemas import parse_ddl, parse_schema
from ..deploy.shipping import ship_function
from .storage import storage_for

if TYPE_CHECKING:
    from typing_extensions import Unpack
    from pyspark.sql import DataFrame
    from pyspark.sql import types as T

_BLOB = "__sw_snapshot"
_TIMER = "__sw_timer"


def finish_packed(spark: Any, checkpoint: str, frame: DataFrame, driver: Driver,
                  schema: T.StructType, now_ms: int, key_schema: Optional[str],
                  step_id: str) -> DataFrame:
    """finish() for a packed step, on the driver: its state rows are buckets, so the
    key columns come from ``key_schema`` or the checkpoint's sparkwax-steps.json."""
    from pyspark.sql import types as T

    key_type = _packed_key_type(spark, checkpoint, key_schema, step_id)
    outputs = OutputBuilder(key_type.fieldNames(), schema, step_id)
    single = len(key_type.fields) == 1
    emitted: List[Tuple[Any, Tuple[Any, ...], List[Any]]] = []
    with explained(spark, checkpoint):
        stored = {key: (blob, timer) for key, blob, timer, _ in packed_blobs(frame, step_id)}
    keys = sorted_keys(list(stored))
    entries = [stored[key] for key in keys]  # decoded strictly: a corrupt blob is a SnapshotError
    acts = driver.activate_keys(KeyBatch(keys, [()] * len(keys), [blob for blob, _ in entries],
                                         [timer for _, timer in entries], eof=True),
                                Clocks(now_ms))
    for key, out in zip(keys, acts.emits):
        if out:
            emitted.append((key, (key,) if single else tuple(key), out))
    out_schema = T.StructType(list(key_type.fields) + list(schema.fields))
    if not emitted:
        empty: DataFrame = spark.createDataFrame([], out_schema)
        return empty
    ends: DataFrame = spark.createDataFrame(outputs.frame_of(emitted), schema=out_schema)
    return ends


def _packed_key_type(spark: Any, checkpoint: str, key_schema: Optional[str],
                     step_id: str) -> Any:
    if key_schema is None:
        steps = (read_steps(storage_for(spark), checkpoint) or {}).get("steps", {})
        if len(steps) != 1:
            raise ConfigError(f"step {step_id!r}: finish on a packed step needs key_schema= "
                              "(e.g. \"user string\"); start the query with sparkwax.start() "
                              "to have it recorded in the checkpoint")
        key_schema = next(iter(steps.values()))["key"]
    return parse_ddl(spark, key_schema)




def finish(checkpoint: str, *, builder: Union[Builder, Step, None] = None,
           step: Optional[Step] = None, operator_id: Optional[int] = None,
           key_schema: Optional[str] = None, spark: Any = None,
           **options: Unpack[StepOptions]) -> Any:
    """End a checkpointed stream: for every live key, restore from the
    checkpoint's snapshot, fire a due timer, call ``on_eof``; return the
    outputs as a DataFrame (key columns, then ``output_schema``). ``now`` is
    the watermark the next micro-batch would have had (EventTime) or the wall
    clock (ProcessingTime). The checkpoint is not modified. A query of
    several steps is finished one step at a time: ``operator_id=`` picks it
    (the last step is 0), and an earlier step's ``on_eof`` emits do not
    reach the later ones. ``spark``
    defaults to the active session. The step options as for
    ``sparkwax.stateful`` (docs/guide.md, "Step options"): a step started
    with ``ttl=`` needs the same ``ttl=`` here (its snapshots hold the ttl's
    bookkeeping). Or the stream's ``sparkwax.Step`` (``step=``, or as
    ``builder``), which carries them.

    >>> ends = sw.finish("/tmp/ck", builder=Session,                 # doctest: +SKIP
    ...                  output_schema="start timestamp, `end` timestamp, events long",
    ...                  time=sw.EventTime("ts", watermark="10 minutes"))
    """
    from pyspark.sql import types as T

    step = as_step(builder, step=step, **options)
    step_id = step.step_id
    spark = active_session(spark, "finish")
    if operator_id is None:
        operator_id = one_step_operator(storage_for(spark), checkpoint, (
            "finish ends one step: give operator_id= (its on_eof emits do not reach the "
            "steps after it)"))
    frame = state_frame(spark, checkpoint, operator_id=operator_id)
    schema = parse_schema(frame, step.output_schema, step_id)
    driver = Driver(step)
    now_ms = driver.now_ms(lambda: last_watermark_ms(spark, checkpoint),
                           lambda: int(wall_clock.time() * 1000))
    if is_packed(frame):
        return finish_packed(spark, checkpoint, frame, driver, schema, now_ms, key_schema,
                              step_id)
    key_type = frame.schema["key"].dataType
    out_schema = T.StructType(list(key_type.fields) + list(schema.fields))
    outputs = OutputBuilder(key_type.fieldNames(), schema, step_id)
    key_names = key_type.fieldNames()
    ends = FinishHost(driver, outputs, key_names, now_ms)

    def end_keys(frames: Iterator[Any]) -> Iterator[Any]:  # a plain function for pyspark
        return ends(frames)

    from pyspark.sql import functions as F

    flat = frame.select(*[F.col(f"key.`{n}`").alias(n) for n in key_names],
                        F.col("value.groupState.snapshot").alias(_BLOB),
                        F.col("value.groupState.timer").alias(_TIMER))
    return flat.mapInPandas(ship_function(spark, end_keys), schema=out_schema)


class FinishHost:
    """``finish`` of a per-key step, on the executors (``mapInPandas`` over
    the state rows: key columns, the stored blob and its committed timer)."""

    def __init__(self, driver: Driver, outputs: OutputBuilder, key_names: List[str],
                 now_ms: int):
        self.driver, self.outputs, self.key_names, self.now_ms = (driver, outputs, key_names,
                                                                  now_ms)

    def __call__(self, frames: Iterator[Any]) -> Iterator[Any]:
        single = len(self.key_names) == 1
        for part in frames:
            key_tuples = list(zip(*(part[name].tolist() for name in self.key_names)))
            keys = [plain_key(key_values, single) for key_values in key_tuples]
            acts = self.driver.activate_keys(KeyBatch(
                keys, [()] * len(keys), [bytes(blob) for blob in part[_BLOB].tolist()],
                [None if pd.isna(timer) else int(timer)  # None, NaN or NA
                 for timer in part[_TIMER].tolist()], eof=True), Clocks(self.now_ms))
            for key, key_values, out in zip(keys, key_tuples, acts.emits):
                if out:
                    yield self.outputs.frame(key, key_values, out)


__all__ = ["FinishHost", "finish", "finish_packed"]
