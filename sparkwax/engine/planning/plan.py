"""``stateful(df, ...)``: attach a logic to a DataFrame.

Streaming DataFrames run through ``groupBy(key).applyInPandasWithState``;
bounded ones through ``groupBy(key).applyInPandas`` (docs/semantics.md,
"Bounded (batch) input"; its "Architecture" places the engine). Every
timestamp value column travels as epoch microseconds so values reach the
logic as aware UTC datetimes whatever the session time zone.
"""

from __future__ import annotations

from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional,
                    Sequence, Tuple, Union)

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..._driver import Driver
from ...errors import ConfigError
from ...logic import Builder
from ...metrics import FIELDS, INPUT_SUFFIX, PREFIX, STAGE_FIELD, stage_name
from ...step import HOSTS, Host, Step, StepOptions, as_step, default_step_id
from ...timers import EventTime, TimeMode
from ..hosts.columns import InputLayout
from ..hosts.host import BoundedHost, StreamingHost
from ..hosts.outputs import (METRICS_COLUMN, ONLY_METRICS, OutputBuilder, metrics_type,
                             stage_offset)
from ..hosts.packed import BUCKET_COLUMN, PackedBoundedHost, PackedHost
from ..hosts.prepack import PAYLOAD, pack_rows
from .schemas import parse_schema
from ..deploy.session_confs import max_snapshot_bytes, packed_unpacker
from ..deploy.shipping import ship_function
from ..hosts import two_clocks as two_clock_hosts
from .recorded_counts import remember
from .chaining import after_steps
from .following import transform_with_state, upstream_descriptions
from .seeding import seed_input
from .projection import (EVENT_US, nullable_longs, project_input, require_columns,
                         value_kind)
from .description import described, state_layout, step_description, step_timeout

if TYPE_CHECKING:
    import pandas as pd
    from typing_extensions import Unpack

HostFunction = Union[PackedBoundedHost, PackedHost, BoundedHost, StreamingHost]
Seed = Union[DataFrame, Mapping[Any, Any]]
"""What ``seed=`` takes: ``{key: snapshot}`` (as offline) or a DataFrame of
the key columns and ``snapshot``."""
HOST_CLASSES: Dict[Tuple[str, bool, bool], type] = {
    # (host, streaming, both timer kinds): the function Spark runs per group.
    # Bounded input has no processing clock, so no two-clock host.
    ("per_key", True, False): StreamingHost,
    ("per_key", True, True): two_clock_hosts.TwoClockHost,
    ("per_key", False, False): BoundedHost,
    ("packed", True, False): PackedHost,
    ("packed", True, True): two_clock_hosts.TwoClockPackedHost,
    ("packed", False, False): PackedBoundedHost,
}
"""What runs a step's groups: bounded or streaming, per key or packed."""

STATE_SCHEMA = T.StructType([T.StructField("snapshot", T.BinaryType(), False),
                             T.StructField("timer", T.LongType(), True)])
TWO_CLOCK_STATE_SCHEMA = T.StructType([*STATE_SCHEMA.fields,
                                       T.StructField("deadline", T.LongType(), True)])
"""A per-key step with both timer kinds: the processing deadline beside the timer."""


PACKED_STATE_SCHEMA = T.StructType([T.StructField("keys", T.BinaryType(), False),
                                    T.StructField("buckets", T.LongType(), False)])


def stateful(df: DataFrame, *, key: Union[str, Sequence[str]],
             builder: Union[Builder, Step, None] = None, step: Optional[Step] = None,
             host: Host = "per_key", buckets: Optional[int] = None,
             seed: Optional[Seed] = None, **options: Unpack[StepOptions]) -> DataFrame:
    """Run ``builder``'s StatefulLogic per key of ``df``.

    The step options (``output_schema``, ``time``, ``order_by``, ``value``,
    ``step_id``, ``ttl``, ``max_state_bytes``...) are ``sparkwax.StepOptions``:
    their table is docs/guide.md, "Step options". Or give a ready
    ``sparkwax.Step`` (``step=``, or as ``builder``; the one a test ran
    offline with ``run(step, ...)``): it carries the options, so then give
    only ``key``, ``host`` and ``buckets``. Output rows are the key columns
    followed by ``output_schema``. ``host="packed"`` runs many keys per
    Spark group (``buckets`` of them, default 4 x shuffle partitions) with
    the same semantics; see docs/performance.md. ``seed``: the state the
    stream starts from, ``{key: snapshot}`` as offline ``run(..., seed=)``
    takes it, or a bounded DataFrame of the key columns and ``snapshot``
    (Spark 4.0+; docs/semantics.md, "Seeding a step").
    """
    made = as_step(builder, step=step, **options)
    return _replannable(df, made, key, host, buckets, seed)


def stateful_batch(df: DataFrame, *, key: Union[str, Sequence[str]],
                   builder: Union[Builder, Step, None] = None, step: Optional[Step] = None,
                   host: Host = "per_key", buckets: Optional[int] = None,
                   seed: Optional[Seed] = None,
                   **options: Unpack[StepOptions]) -> DataFrame:
    """Like ``stateful`` for a StatefulBatchLogic (one ``on_batch`` per
    activation), with the same step options (docs/guide.md, "Step options";
    not ``ttl``) and ``seed``; a Step given must have ``batch=True``."""
    made = as_step(builder, step=step, **batch_options(builder, step, options))
    return _replannable(df, made, key, host, buckets, seed)


def batch_options(builder: Any, step: Optional[Step], options: StepOptions) -> StepOptions:
    """``stateful_batch``'s options: ``batch=True`` (which a ``batch=False``
    contradicts)."""
    if options.get("batch") is False:
        ready = step if step is not None else builder if isinstance(builder, Step) else None
        name = ready.step_id if ready is not None else options.get("step_id") or \
            default_step_id(builder)
        raise ConfigError(f"step {name!r}: stateful_batch runs a StatefulBatchLogic; "
                          "batch=False is sparkwax.stateful")
    batched: StepOptions = {**options, "batch": True}
    return batched


def _replannable(df: DataFrame, step: Step, key: Union[str, Sequence[str]], host: Host,
                 buckets: Optional[int], seed: Optional[Seed] = None) -> DataFrame:
    """``plan_step``; a streaming packed step whose buckets are the session's
    default is remembered so that ``sw.start`` can plan it again with the
    bucket count its checkpoint recorded (``planning.recorded_counts``)."""
    frame = plan_step(df, step, key, host=host, buckets=buckets, seed=seed)
    if host == "packed" and buckets is None and df.isStreaming:
        remember(frame, step.step_id,
                 lambda count: plan_step(df, step, key, host=host, buckets=count, seed=seed))
    return frame


def plan_step(df: DataFrame, step: Step, key: Union[str, Sequence[str]], *,
              host: Host = "per_key", buckets: Optional[int] = None,
              seed: Optional[Seed] = None) -> DataFrame:
    """``step`` over ``df`` grouped by ``key``, on ``host`` (every Spark entry
    point ends here): the DataFrame checks, then the host's plan."""
    step_id, time, order_by, value = step.step_id, step.time, step.order_by, step.value
    keys = [key] if isinstance(key, str) else list(key)
    if host not in HOSTS:
        raise ConfigError(f"step {step_id!r}: host must be one of {HOSTS}, got {host!r}")
    upstream = after_steps(df, step_id)  # (refuses what cannot follow them)
    if host == "packed":
        buckets = _bucket_count(df, buckets, step_id)
    schema = parse_schema(df, step.output_schema, step_id)
    fields = {f.name: f for f in df.schema.fields}
    require_columns(step_id, "key", keys, fields)
    if not keys:
        raise ConfigError(f"step {step_id!r}: key must name at least one column")
    event = isinstance(time, EventTime)
    if isinstance(time, EventTime) and not isinstance(time.column, str):
        raise ConfigError(f"step {step_id!r}: on Spark, EventTime needs the event-time "
                          f"column's name, got {time.column!r} (a callable works offline "
                          f"only)")
    if isinstance(time, EventTime):
        require_columns(step_id, "EventTime column", [time.column], fields)
        if not isinstance(fields[time.column].dataType, T.TimestampType):
            raise ConfigError(f"step {step_id!r}: EventTime column {time.column!r} must be a "
                              f"timestamp, it is {fields[time.column].dataType.simpleString()}")
    if callable(order_by):
        raise ConfigError(f"step {step_id!r}: on Spark, order_by must name columns, got "
                          f"{order_by!r} (a callable works offline only)")
    order = list(order_by)
    require_columns(step_id, "order_by", order, fields)
    value_names = [n for n in df.columns if n not in keys]
    if value is not None:
        require_columns(step_id, "value", [value], fields)
        value_names = [value]
    if not value_names:
        raise ConfigError(f"step {step_id!r}: no value columns left besides the key {keys}")

    if df.isStreaming:
        step = step.knowing_deadlines()  # both timer kinds: another timeout and host
    two_clocks = bool(step.two_clocks) and df.isStreaming
    if upstream and two_clocks:
        after_steps(df, step_id, two_clocks=True)  # refused: needs applyInPandasWithState
    initial = None if seed is None else seed_input(df, seed, step_id, keys, fields, two_clocks)
    # a step after another, or seeded: on transformWithStateInPandas (following)
    follows = upstream_descriptions(df) if upstream else [] if initial is not None else None
    driver = Driver(step)
    spark = df.sparkSession
    null_longs = nullable_longs(keys, [*value_names, *order], fields)
    projected = project_input(df, keys, value_names, order, fields, time, null_longs, step_id)
    event_source = {time.column: EVENT_US} if isinstance(time, EventTime) else {}
    layout = InputLayout(
        names=tuple(value_names),
        sources=tuple(event_source.get(n, n) for n in value_names),
        kinds=tuple(value_kind(fields[n]) for n in value_names),
        scalar=value is not None,
        order_by=tuple(event_source.get(n, n) for n in order),
        event_column=EVENT_US if event else None,
        null_longs=tuple(null_longs),
    )
    outputs = OutputBuilder(keys, schema, step_id, metrics=df.isStreaming)
    out_schema = T.StructType([fields[k] for k in keys] + list(schema.fields))
    grouped_on = [F.col(f"`{k}`") for k in keys]
    single = len(keys) == 1
    if not df.isStreaming and isinstance(time, EventTime) and time.column not in keys:
        # the host reads the µs copy; as a timestamp, pyspark would convert it
        # through pandas' nanoseconds, which end in 2262
        projected = projected.drop(time.column)
    if df.isStreaming and isinstance(time, EventTime) and step.sides is None:
        # (a connected step put one on each input already)
        projected = projected.withWatermark(time.column, time.spark_delay)
    blanked: Optional[str] = None
    unblanked = projected
    if df.isStreaming and isinstance(time, EventTime) and time.column not in keys:
        blanked = time.column
        projected = _never_late(projected, time)
    timeout = step_timeout(step, two_clocks)
    function: HostFunction
    host_class = HOST_CLASSES[host, df.isStreaming, two_clocks]
    if host == "packed":
        assert buckets is not None  # _bucket_count set it above
        bucket = F.pmod(F.xxhash64(*grouped_on), F.lit(buckets)).alias(BUCKET_COLUMN)
        if not df.isStreaming:
            function = host_class(driver, layout, outputs, keys)
            return projected.select("*", bucket).groupBy(BUCKET_COLUMN).applyInPandas(
                _as_function(function, spark), schema=out_schema)
        unpack = packed_unpacker(spark)
        function = host_class(driver, layout, outputs, timeout, keys, buckets,
                              max_snapshot_bytes(spark), unpack)
        if unpack is not None:
            rows = _prepacked(unblanked, bucket, buckets, time, keys, spark)
        else:
            rows = _input_counted(projected, step_id, timeout, blanked).select("*", bucket)
        if initial is not None:
            initial = initial.select("*", bucket)
        return _streaming_step(rows, [BUCKET_COLUMN], function, spark, out_schema,
                               PACKED_STATE_SCHEMA,
                               timeout, step_id, step_description(
                                   step_id, keys, fields, schema, time, timeout,
                                   state_layout(step, host, buckets, two_clocks, follows)),
                               follows, initial)
    if not df.isStreaming:
        function = host_class(driver, layout, outputs, single)
        return projected.groupBy(*grouped_on).applyInPandas(_as_function(function, spark),
                                                            schema=out_schema)
    function = host_class(driver, layout, outputs, timeout, single, max_snapshot_bytes(spark))
    rows = _input_counted(projected, step_id, timeout, blanked)
    return _streaming_step(rows, grouped_on, function, spark, out_schema,
                           TWO_CLOCK_STATE_SCHEMA if two_clocks else STATE_SCHEMA,
                           timeout, step_id, step_description(
                               step_id, keys, fields, schema, time, timeout,
                               state_layout(step, host, buckets, two_clocks, follows)), follows,
                           initial)


def _streaming_step(rows: DataFrame, grouped_on: Sequence[Any], function: HostFunction,
                    spark: Any, out_schema: T.StructType, state_schema: Any, timeout: str,
                    step_id: str, description: Dict[str, Any],
                    follows: Optional[List[Dict[str, Any]]],
                    initial: Optional[DataFrame] = None) -> DataFrame:
    """``rows`` grouped on ``grouped_on`` through
    ``applyInPandasWithState`` of a host (per key or packed), or for a
    step that ``follows`` others in the query (their descriptions) its
    ``transformWithStateInPandas`` (``following``): its output carries the
    metrics column, which ``_observed`` turns into Spark's progress, and the
    step's description (and those it follows) in the metadata of its other
    columns (``described``: no plan node of its own)."""
    with_metrics = T.StructType(described(out_schema, description, follows or ()).fields
                                + [T.StructField(METRICS_COLUMN, metrics_type())])
    result: DataFrame
    grouped = rows.groupBy(*grouped_on)
    if follows is None:
        result = grouped.applyInPandasWithState(
            _as_function(function, spark), outputStructType=with_metrics,
            stateStructType=state_schema, outputMode="append", timeoutConf=timeout)
    else:
        result = transform_with_state(
            grouped, rows.columns, function, spark, with_metrics, state_schema, timeout,
            None if initial is None else initial.groupBy(*grouped_on))
    return _observed(result, step_id, function.driver.stage_ids)


def _input_counted(projected: DataFrame, step_id: str, timeout: str,
                   blanked: Optional[str]) -> DataFrame:
    """Count the rows entering the step if Spark may drop some before the
    host sees them (see ``metrics.steps_in``): under ``EventTimeTimeout`` it
    drops the rows behind its watermark on an input column that carries one,
    but not on the ``blanked`` column (``_never_late``), so that leaves an
    event-time key column. Otherwise nothing is counted: one observed
    aggregate less per micro-batch, and no row-by-row operator before the
    shuffle."""
    if timeout != EventTime.spark_timeout or not any(
            _WATERMARK in field.metadata and field.name != blanked
            for field in projected.schema.fields):
        return projected
    return projected.observe(PREFIX + step_id + INPUT_SUFFIX, F.count(F.lit(1)).alias("rows"))


_WATERMARK = "spark.watermarkDelayMs"  # column metadata of withWatermark's event time


def _never_late(projected: DataFrame, time: EventTime) -> DataFrame:
    """The watermarked event-time column as nulls that keep its watermark
    (``EventTimeTimeout`` needs a watermarked input column). Spark's late
    filter drops no null, so every late row reaches the host, where the
    driver drops and counts it, as offline (the host reads the µs copy)."""
    blank = _blank_event_time(time)
    return projected.select(*[blank if name == time.column else F.col(f"`{name}`")
                              for name in projected.columns])


def _prepacked(projected: DataFrame, bucket: Any, buckets: int, time: Optional[TimeMode],
               keys: Sequence[str], spark: Any) -> DataFrame:
    """The packed step's rows as ``(bucket, payload)`` rows, packed per
    bucket before the shuffle (``prepack.pack_rows``). An event-time step
    keeps a null event-time column that carries the watermark
    (``EventTimeTimeout`` needs one, see ``_never_late``): no late row is
    dropped before the host, whose driver drops and counts them all, so
    nothing needs counting on the way in (``_input_counted``). The
    timestamp column itself stays out of the payload unless it is a key
    (the host reads the µs copy)."""
    event = isinstance(time, EventTime)
    names = [n for n in projected.columns
             if not (event and n == time.column and n not in keys)]  # type: ignore[union-attr]
    rows = projected.select(*[F.col(f"`{n}`") for n in names], bucket)
    # the bucket column as the row-by-row plan has it: the state's key schema
    packed = rows.mapInArrow(ship_function(spark, pack_rows(BUCKET_COLUMN, buckets)),
                             T.StructType([rows.schema[BUCKET_COLUMN],
                                           T.StructField(PAYLOAD, T.BinaryType(), False)]))
    if isinstance(time, EventTime):
        packed = packed.select("*", _blank_event_time(time))
    return packed


def _blank_event_time(time: EventTime) -> Column:
    """A null event-time column that keeps the step's watermark."""
    return F.lit(None).cast(T.TimestampType()).alias(time.column,
                                                      metadata={_WATERMARK: time.delay_ms})


def _observed(result: DataFrame, step_id: str, stage_ids: Sequence[str] = ()) -> DataFrame:
    """The step's counts into Spark's progress (``observedMetrics``, once per
    micro-batch), and a chained step's each stage's (``metrics.stage_name``),
    then the counts-only rows and the column out of the output."""
    counts = F.col(METRICS_COLUMN)
    observed = result
    for name, offset, place in [(PREFIX + step_id, 0, [])] + [
            (stage_name(step_id, stage), stage_offset(index),
             [F.lit(index).alias(STAGE_FIELD)])   # Spark's map of metrics keeps no order
            for index, stage in enumerate(stage_ids)]:
        observed = observed.observe(name, *[
            F.coalesce(F.sum(counts[offset + index]), F.lit(0)).alias(field)
            for index, field in enumerate(FIELDS)], *place)
    only_counts = F.coalesce(counts[len(FIELDS)], F.lit(0)) == F.lit(ONLY_METRICS)
    return observed.where(~only_counts).drop(METRICS_COLUMN)


def _bucket_count(df: Any, buckets: Optional[int], step_id: str) -> int:
    """Default: 4 x shuffle partitions (frozen into the checkpoint, like them)."""
    if buckets is None:
        partitions = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
        return 4 * partitions
    if not isinstance(buckets, int) or isinstance(buckets, bool) or buckets < 1:
        raise ConfigError(f"step {step_id!r}: buckets must be a positive int, got {buckets!r}")
    return buckets


def _as_function(host: HostFunction, spark: Any) -> Callable[..., Any]:
    """PySpark inspects the function's signature: hand it a plain function,
    with sparkwax shipped to ``spark``'s workers."""
    if isinstance(host, (BoundedHost, PackedBoundedHost)):
        def run_bounded_group(key: Tuple[Any, ...], frame: pd.DataFrame) -> pd.DataFrame:
            return host(key, frame)
        return ship_function(spark, run_bounded_group)

    def run_streaming_group(key: Tuple[Any, ...], frames: Iterator[pd.DataFrame], state: Any
                            ) -> Iterator[pd.DataFrame]:
        out: Iterator[pd.DataFrame] = host(key, frames, state)
        return out
    return ship_function(spark, run_streaming_group)
