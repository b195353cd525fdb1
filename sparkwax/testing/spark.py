"""Play an offline script (``sparkwax.testing`` steps) through a real streaming query.

Test tooling that imports the engine (the engine never imports this
package). Each ``Batch`` becomes one JSON file (modification times
increasing, read with ``maxFilesPerTrigger=1``, so one file is one
micro-batch); ``Crash`` stops the query and starts a new one on the same
checkpoint. The result's ``metrics`` and ``batch_metrics`` are the step's
counts from Spark's progress reports (``observedMetrics``), and for a
chained step ``stage_metrics`` and ``batch_stage_metrics`` its stages'. A
step whose Spark operator asks for a micro-batch at every trigger
(processing-time timers) is drained as ``sw.start``'s query drains it. Every
micro-batch's outputs are appended, with their batch id and position, to a
Parquet folder through ``foreachBatch``, so the harness works
the same on a classic session and over Spark Connect (where ``foreachBatch``
runs on the server). This is what the differential tests compare with the
offline runner, per key.

Files are written to the local folder ``workdir``; ``uri`` is how Spark sees
that folder (default: the folder itself), e.g. a ViewFS mount of it.

>>> result = run_script_on_spark(spark, Counter, script,           # doctest: +SKIP
...                              input_schema="key string, ts timestamp, value long",
...                              output_schema="n long", time=EventTime("ts"))
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import uuid
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ..engine.planning.plan import stateful
from ..engine.checkpoints.storage import join_path
from ..engine.planning.following import start_confs, upstream_descriptions
from ..engine.queries.catch_up import asks_every_batch, process_all_available
from ..engine.planning.seeding import seed_frame
from ..errors import ConfigError
from ..logic import Builder
from ..metrics import StepMetrics, by_batch, stages_by_batch, steps_in
from .._ops.rebuild import task_errors
from ..step import Host, Step, StepOptions
from .result import RunResult
from .script import Batch, Crash, Eof, ScriptStep, Tick

if TYPE_CHECKING:
    from typing_extensions import Unpack

_BASE_MTIME = 1_600_000_000
_BATCH, _POSITION = "__sw_batch", "__sw_position"


def run_script_on_spark(spark: Any, builder: Union[Builder, Step], script: Sequence[ScriptStep],
                        *, input_schema: str, key: str = "key", workdir: Optional[str] = None,
                        uri: Optional[str] = None, trigger: Optional[Dict[str, Any]] = None,
                        host: Host = "per_key", buckets: Optional[int] = None,
                        seed: Optional[Dict[Any, Any]] = None, seed_key: Optional[str] = None,
                        **options: Unpack[StepOptions]) -> RunResult:
    """Outputs (with ``Row`` values turned into tuples) of the script on Spark.
    The step options go to ``stateful`` (docs/guide.md, "Step options";
    ``batch=True``: a StatefulBatchLogic); ``builder`` may be a
    ``sparkwax.Step`` (then no step options: the Step carries them).
    ``seed``: ``{key: snapshot}`` the step starts from, given to
    ``stateful`` as it is, as to ``run(..., seed=)``; with ``seed_key`` (a
    DDL of the key columns) it goes as ``seed_frame``'s DataFrame instead."""
    seeded = seed if seed is None or seed_key is None else seed_frame(spark, seed, seed_key)

    def plan(stream: Any) -> Any:
        return stateful(stream, key=key, builder=builder, host=host, buckets=buckets,
                        seed=seeded, **options)
    return run_plan_on_spark(spark, plan, script, input_schema=input_schema, key=key,
                             workdir=workdir, uri=uri, trigger=trigger)


def _drain(query: Any, every_batch: bool, logged: Optional[int]) -> None:
    """Spark's ``processAllAvailable``, or for a query that asks for a
    micro-batch at every trigger (processing-time timers: Spark's never
    returns) sparkwax's (``catch_up.process_all_available``), as
    ``sw.start``'s query does; ``logged``: the last batch in the offset log
    when the query started, which a restart runs first without reading (not
    a sign of being caught up)."""
    if not every_batch:
        query.processAllAvailable()
    elif not process_all_available(query, woken=logged):
        query.awaitTermination()  # stopped: its failure, if any


def _last_logged(checkpoint_dir: str) -> Optional[int]:
    """The newest batch id in a local checkpoint's offset log (None: none)."""
    offsets = os.path.join(checkpoint_dir, "offsets")
    ids = [int(name) for name in os.listdir(offsets) if name.isdigit()] \
        if os.path.isdir(offsets) else []
    return max(ids) if ids else None


def run_plan_on_spark(spark: Any, plan: Callable[[Any], Any], script: Sequence[ScriptStep],
                      *, input_schema: str, key: str = "key", workdir: Optional[str] = None,
                      uri: Optional[str] = None, trigger: Optional[Dict[str, Any]] = None,
                      metrics_of: Optional[str] = None) -> RunResult:
    """``run_script_on_spark`` of any ``plan(stream) -> DataFrame`` (several
    steps, say): the result's outputs are the plan's rows, keyed by the
    first column; its metrics are step ``metrics_of``'s (None: the only
    step's)."""
    workdir = workdir or tempfile.mkdtemp(prefix="sparkwax-script-")
    uri = uri or workdir
    source = os.path.join(workdir, "input")
    os.makedirs(source, exist_ok=True)
    # this call's outputs only (a second call may continue on the same checkpoint)
    checkpoint, sink = join_path(uri, "checkpoint"), join_path(uri, f"outputs-{uuid.uuid4().hex}")
    files = 0
    every_batch = False  # a step whose Spark operator asks for a micro-batch at every trigger
    logged: Optional[int] = None  # the offset log's last batch at the query's start

    def start() -> Any:
        nonlocal every_batch, logged
        logged = _last_logged(os.path.join(workdir, "checkpoint"))
        stream = spark.readStream.schema(input_schema).option("maxFilesPerTrigger", 1) \
            .json(join_path(uri, "input"))
        out = plan(stream)
        every_batch = asks_every_batch(upstream_descriptions(out))
        writer = out.writeStream.foreachBatch(_appender(sink)) \
            .option("checkpointLocation", checkpoint)
        if trigger:
            writer = writer.trigger(**trigger)
        with start_confs(out):  # several steps: as sw.start starts them
            return writer.start()

    query = start()
    reports: List[Any] = []  # every query's progress reports, in order
    try:
        for step in script:
            if isinstance(step, Batch):
                if step.now is not None:
                    raise ConfigError("run_script_on_spark cannot set processing time; "
                                      "use EventTime scripts")
                _write_batch(source, files, key, step.items)
                files += 1
            elif isinstance(step, Crash):
                with task_errors():  # a sparkwax error from a task as itself
                    _drain(query, every_batch, logged)
                reports.extend(query.recentProgress)
                query.stop()
                query = start()
            elif isinstance(step, (Tick, Eof)):
                continue  # Spark runs no-data batches itself; Eof needs finish()
        with task_errors():
            _drain(query, every_batch, logged)
        reports.extend(query.recentProgress)
    finally:
        query.stop()
    result = _collected(spark, sink)
    batches = by_batch(reports, metrics_of)
    result.batch_metrics = [batches[number] for number in sorted(batches)]
    result.metrics = sum(result.batch_metrics, StepMetrics())
    named = sorted({step for report in reports for step in steps_in(report)})
    result.step_id = ", ".join(named)  # as Spark's progress names the step
    staged = stages_by_batch(reports, metrics_of or result.step_id)
    result.batch_stage_metrics = [staged[number] for number in sorted(staged)]
    for stages in result.batch_stage_metrics:
        for stage, counts in stages.items():
            result.stage_metrics[stage] = result.stage_metrics.get(stage, StepMetrics()) + counts
    return result


def _appender(sink: str) -> Callable[[Any, int], None]:
    """A foreachBatch function appending a batch's rows, numbered, to ``sink``.
    It refers to pyspark only, so a Connect server runs it without sparkwax."""
    def append(frame: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        frame.withColumn(_BATCH, F.lit(batch_id)) \
            .withColumn(_POSITION, F.monotonically_increasing_id()) \
            .write.mode("append").parquet(sink)
    return append


def _collected(spark: Any, sink: str) -> RunResult:
    from pyspark.errors import AnalysisException

    result = RunResult()
    try:
        rows = spark.read.parquet(sink).orderBy(_BATCH, _POSITION).collect()
    except AnalysisException as error:
        if "PATH_NOT_FOUND" in str(error) or "does not exist" in str(error):
            return result  # the query never ran a batch
        raise
    for row in rows:
        values = tuple(_aware(v) for v in row)[:-2]
        result.outputs.append((values[0], values[1:]))
    return result


def _write_batch(source: str, number: int, key: str, items: Sequence[Tuple[Any, Any]]) -> None:
    path = os.path.join(source, f"batch-{number:05d}.json")
    staging = os.path.join(os.path.dirname(source), f"staging-{number:05d}.json")
    with open(staging, "w") as handle:
        for item_key, item in items:
            row = {key: item_key}
            row.update(item if isinstance(item, dict) else {"value": item})
            handle.write(json.dumps(row, default=_json_default) + "\n")
    os.utime(staging, (_BASE_MTIME + number,) * 2)
    os.replace(staging, path)  # atomic: the source never sees a half-written file


def _json_default(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    raise TypeError(f"cannot write {value!r} to JSON")


def _aware(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.timezone.utc)  # local_session runs in UTC
    return value
