"""A step that follows another in one streaming query: planned on
``transformWithStateInPandas`` (Spark 4.0+; ``chaining.after_steps`` decides
when), its host and driver unchanged (``hosts.tws``).

Such a query needs two session confs when it starts (``start_confs``, which
``sw.start`` applies): Spark's transformWithState keeps its state in RocksDB
only, and Spark's check of "stateful operators that may emit late rows"
refuses any stateful operator after an ``applyInPandasWithState`` with
event-time timeouts. That check guards downstream operators that drop rows
behind the watermark; a sparkwax step lets Spark drop none (its event-time
column reaches the host blanked, ``plan._never_late``) and decides lateness
in the driver, as offline. So the check is turned off only for a query whose
stateful operators are all sparkwax steps.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Sequence

from ..deploy.shipping import ship_function
from ..hosts.host import NO_TIMEOUT
from ..hosts.tws import TwsProcessor, as_stateful_processor
from .chaining import holds_following_step, only_sparkwax_stateful, plan_text
from .schemas import STEP_METADATA, UPSTREAM_METADATA

TIME_MODES = {NO_TIMEOUT: "None", "EventTimeTimeout": "EventTime",
              "ProcessingTimeTimeout": "ProcessingTime"}
"""A step's GroupState timeout as transformWithStateInPandas' ``timeMode``."""

PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
CORRECTNESS_CONF = "spark.sql.streaming.statefulOperator.checkCorrectness.enabled"


def transform_with_state(grouped: Any, columns: Sequence[str], host: Any, spark: Any,
                         output_type: Any, state_schema: Any, timeout: str,
                         initial_state: Any = None) -> Any:
    """``grouped.transformWithStateInPandas`` running ``host`` over frames of
    ``columns``: its ValueState is the host's state row plus the registered
    timer; ``initial_state``: a seed's rows, grouped as ``grouped``
    (``planning.seeding``)."""
    processor = as_stateful_processor(TwsProcessor(host, with_registered(state_schema),
                                                   tuple(columns)))
    ship_function(spark, lambda: None)  # sparkwax (and the app's modules) on the workers
    return grouped.transformWithStateInPandas(
        processor, outputStructType=output_type, outputMode="append",
        timeMode=TIME_MODES[timeout], initialState=initial_state)


def with_registered(state_schema: Any) -> Any:
    """The host's state row (a StructType) with the timer it registered (ms)."""
    from pyspark.sql import types as T

    return T.StructType([*state_schema.fields, T.StructField("registered", T.LongType(), True)])


def upstream_descriptions(df: Any) -> List[Dict[str, Any]]:
    """The descriptions of the sparkwax steps ``df`` comes from, as its
    columns' metadata carries them (a step's own, and those it followed)."""
    found: Dict[str, Dict[str, Any]] = {}
    for field in df.schema.fields:
        metadata = field.metadata or {}
        for description in [metadata.get(STEP_METADATA), *metadata.get(UPSTREAM_METADATA, [])]:
            if description:
                found[description["step_id"]] = description
    return [found[name] for name in sorted(found)]


@contextmanager
def start_confs(frame: Any) -> Iterator[None]:
    """The confs a query holding a following step needs, set while it starts
    (Spark keeps them with the query; the provider also in its checkpoint):
    RocksDB state, and no late-rows check when every stateful operator is a
    sparkwax step. Nothing changes for other queries."""
    plan = plan_text(frame)
    if plan is None or not holds_following_step(plan):
        yield
        return
    conf = frame.sparkSession.conf
    wanted = {PROVIDER_CONF: ROCKSDB}
    if only_sparkwax_stateful(plan):
        wanted[CORRECTNESS_CONF] = "false"
    before = {name: conf.get(name, None) for name in wanted}
    for name, value in wanted.items():
        conf.set(name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                conf.unset(name)
            else:
                conf.set(name, value)


__all__ = ["CORRECTNESS_CONF", "PROVIDER_CONF", "ROCKSDB", "TIME_MODES", "start_confs",
           "transform_with_state", "upstream_descriptions", "with_registered"]
