"""``start``: start a streaming query with the checks a checkpoint needs.

Spark checks the key and state schemas of a restarted query, but not a step's
output schema, its time mode, or a changed number of shuffle partitions (it
silently keeps the checkpoint's). ``stateful`` records each step's
description in the metadata of its output columns; ``start`` writes those
descriptions next to the checkpoint (``<checkpoint>/sparkwax-steps.json``,
written through Spark's file system, so any checkpoint URI works) and refuses
a restart whose steps differ, saying what changed.

>>> query = sw.start(sessions, checkpoint="/data/ck", path="/data/out")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple

from ..checkpoints.format.files import STEPS_FILE
from ...errors import ConfigError
from .catch_up import ONCE_CONF, asks_every_batch, bounded, stop_when_caught_up
from ..checkpoints.diagnose import check_logs, read_steps
from ..checkpoints.step_changes import FROZEN_CONFS, describe_changes, refusal
from .progress import follow, stop_on_signals
from .query import Query
from .start_guard import as_race, guard_start
from ..planning.following import start_confs, upstream_descriptions
from ..checkpoints.batch_history import keep_batch_plan, log_files
from ..checkpoints.format.metadata_logs import parse_offsets
from ..checkpoints.state.rescale import finish_interrupted
from ..deploy.session_confs import is_connect
from ..checkpoints.storage import join_path, storage_for
from ..checkpoints.liveness import NO_OVERRIDE, hold
from ..checkpoints.wake import wake_timers
from ..planning.recorded_counts import PARTITIONS_CONF, partitions_note, replanned

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_LOG = logging.getLogger("sparkwax")


def step_descriptions(frame: DataFrame) -> List[Dict[str, Any]]:
    """The sparkwax step descriptions carried by ``frame``'s columns."""
    return upstream_descriptions(frame)  # (those a step follows in the query too)


def check_checkpoint(store: Any, checkpoint: str, steps: List[Dict[str, Any]],
                     confs: Dict[str, Optional[str]],
                     sink: Optional[Dict[str, str]] = None) -> None:
    """Compare with what the checkpoint was started with; record it the first
    time. ``store`` is the session's storage (``storage_for(spark)``). A
    damaged steps file, offset or commit log is a ``CheckpointError`` naming
    the file (the steps file is never overwritten). ``sink`` (its format and
    path, which may change between runs) is recorded for ``rescale``, which
    writes the file sink's log entry of its batch."""
    path = join_path(checkpoint, STEPS_FILE)
    current: Dict[str, Any] = {"steps": {s["step_id"]: s for s in steps}, "confs": confs}
    if sink:
        current["sink"] = sink
    saved = read_steps(store, checkpoint)
    check_logs(store, checkpoint, sorted(s["step_id"] for s in steps))
    if saved is None:
        store.write_text(path, json.dumps(current, indent=2, sort_keys=True))
        return
    changes = describe_changes(saved, current)
    if changes:
        raise ConfigError(refusal(checkpoint, changes))
    if saved != current:  # only allowed changes (a watermark delay): record the new run
        store.write_text(path, json.dumps(current, indent=2, sort_keys=True))


@guard_start  # signals held while it starts; a dead first run's leftovers cleared
def start(frame: DataFrame, *, checkpoint: str, path: Optional[str] = None, format: str = "parquet",
          trigger: Optional[Dict[str, Any]] = None, output_mode: str = "append",
          foreach_batch: Optional[Callable[[DataFrame, int], Any]] = None,
          query_name: Optional[str] = None,
          options: Optional[Dict[str, str]] = None, progress: bool = False,
          stop_on_signal: bool = True) -> Query:
    """Start ``frame`` as a streaming query on ``checkpoint`` after checking it.

    Writes to ``path`` in ``format`` (default Parquet, Spark's exactly-once
    file sink) or calls ``foreach_batch(batch_frame, batch_id)``. With a
    ProcessingTime step and no ``trigger``, a 1 second processing-time trigger
    is set (Spark's default trigger would run no-data batches back to back).
    ``trigger`` takes ``DataStreamWriter.trigger``'s keywords, e.g.
    ``{"availableNow": True}`` or ``{"processingTime": "10 seconds"}``.
    ``availableNow`` ends a query of a step with processing-time timers or
    deadlines too: once a micro-batch read nothing and found
    nothing more (it fired what the input made due), sparkwax stops the
    query (``sparkwax.engine.queries.catch_up``); under ``sparkwax submit --once``
    every query runs as ``availableNow``.
    ``progress=True`` prints a line per micro-batch to stderr
    (``sparkwax.engine.queries.progress.follow``). With ``stop_on_signal`` (default), Ctrl-C
    or SIGTERM stops the query between micro-batches, with one line saying so
    (when called from the main thread).

    A restart runs on the checkpoint's recorded partition and bucket counts
    (``recorded_counts``); a step that asks for a micro-batch at every trigger
    gets one at the first trigger, input or not (``checkpoints.wake``: timers
    due while it was stopped fire). While the query runs, ``start`` keeps the
    checkpoint's liveness record fresh, and refuses a checkpoint another
    query or a rescale holds (``checkpoints.liveness``).

    Returns a ``sparkwax.engine.queries.query.Query``: Spark's ``StreamingQuery``
    (``.spark_query``) whose ``awaitTermination()``,
    ``processAllAvailable()`` and ``exception()`` give a sparkwax error
    raised in a task as the same class (``except sw.SchemaError`` works) and
    a damaged checkpoint as a ``CheckpointError`` naming the file, with
    Spark's exception as the ``__cause__``.
    """
    spark = frame.sparkSession
    store = storage_for(spark)
    lease = hold(spark, checkpoint, "query", "start a query on", override=NO_OVERRIDE)
    if lease is not None:
        lease.keep_while(lambda: True)  # beats from now
    try:
        with start_confs(frame):  # a query of several steps: RocksDB state (planning.following)
            started = _start(frame, spark, store, checkpoint, path=path, format=format,
                             trigger=trigger, output_mode=output_mode,
                             foreach_batch=foreach_batch, query_name=query_name,
                             options=options, progress=progress, stop_on_signal=stop_on_signal)
    except BaseException as error:
        if lease is not None:
            lease.release()
        race = as_race(error, checkpoint)
        if race is not None:
            raise race from None
        raise
    if lease is not None:
        started.lease = lease.keep_while(lambda: bool(started.spark_query.isActive))
    return started


def _start(frame: DataFrame, spark: Any, store: Any, checkpoint: str, *, path: Optional[str],
           format: str, trigger: Optional[Dict[str, Any]], output_mode: str,
           foreach_batch: Optional[Callable[[DataFrame, int], Any]], query_name: Optional[str],
           options: Optional[Dict[str, str]], progress: bool, stop_on_signal: bool) -> Query:
    """``start``'s work, under its lease."""
    interrupted = (finish_interrupted(spark, checkpoint, checked=True)  # (needs a classic session)
                   if not is_connect(spark) and store.exists(checkpoint) else None)
    if interrupted:
        _LOG.warning("sparkwax: %s", interrupted)
    frame, steps, confs = _recorded_counts(frame, spark, store, checkpoint)
    sink = {"format": format, "path": path} if foreach_batch is None and path else None
    check_checkpoint(store, checkpoint, steps, confs, sink)
    keep_batch_plan(spark, checkpoint)  # a file source's next batch, logged before a stop
    if str(spark.conf.get(ONCE_CONF, "false")).lower() == "true":  # `sparkwax submit --once`
        trigger = {"availableNow": True}
    every_batch = asks_every_batch(steps)
    if foreach_batch is None and path is None and format not in ("console", "memory", "noop"):
        raise ConfigError(f"start needs path= for the {format!r} sink (or foreach_batch=)")
    woken = None
    if every_batch and not (trigger or {}).get("once"):  # "once" would run only that batch
        woken = wake_timers(spark, checkpoint)  # timers due while stopped fire at this start
    writer = frame.writeStream.option("checkpointLocation", checkpoint).outputMode(output_mode)
    if query_name:
        writer = writer.queryName(query_name)
    for name, value in (options or {}).items():
        writer = writer.option(name, value)
    if trigger is None and every_batch:
        trigger = {"processingTime": "1 second"}
    if trigger:
        writer = writer.trigger(**trigger)
    if foreach_batch is not None:
        query = writer.foreachBatch(foreach_batch).start()
    else:
        writer = writer.format(format)
        query = writer.start(path) if path is not None else writer.start()
    started = StartedQuery(query, spark, checkpoint, {s["step_id"]: s for s in steps})
    started.woken = woken  # runs from the offset log without looking for input: not
    #                        a sign of being caught up
    if every_batch and bounded(trigger):  # Spark would run no-data batches forever
        started.stopper = stop_when_caught_up(query, after=-1 if woken is None else woken)
    following = follow(started) if progress else None
    started.following = following
    if stop_on_signal:
        stop_on_signals(started, follower=following.follower if following else None)
    return started


class StartedQuery(Query):
    """``start``'s query: one Spark stopped because another query wrote its
    checkpoint (Spark's own guard, ``start_guard.spark_guard``) fails with
    a ``CheckpointInUseError`` saying so, not Spark's trace."""

    @contextmanager
    def _explained(self) -> Iterator[None]:
        with super()._explained():
            try:
                yield
            except Exception as error:
                race = as_race(error, self._checkpoint)
                if race is None:
                    raise
                raise race from None


def _with_logged_partitions(store: Any, checkpoint: str, saved: Optional[Dict[str, Any]]
                            ) -> Optional[Dict[str, Any]]:
    """The steps file's record with the partition count Spark will use: the
    newest offset log entry's, when the two disagree (a rescale forced under
    a query that was not ``sw.start``'s), said in one line."""
    offsets = log_files(store, join_path(checkpoint, "offsets"))
    if not saved or not offsets:
        return saved
    (number, _), path = max(offsets.items())
    try:
        logged = parse_offsets(number, store.read_text(path), path).metadata.get(
            "conf", {}).get(PARTITIONS_CONF)
    except (ConfigError, ValueError):  # damaged (not JSON, not UTF-8): the log check names it
        return saved
    recorded = (saved.get("confs") or {}).get(PARTITIONS_CONF)
    if logged is None or recorded is None or str(logged) == str(recorded):
        return saved
    print(f"sparkwax: {checkpoint}: {STEPS_FILE} records {recorded} state partitions but "
          f"Spark's offset log (offsets/{number}) says {logged}, and Spark follows the log: "
          f"recording {logged}", file=sys.stderr, flush=True)
    fixed = {**saved, "confs": {**saved["confs"], PARTITIONS_CONF: str(logged)}}
    store.write_text(join_path(checkpoint, STEPS_FILE), json.dumps(fixed, indent=2,
                                                                   sort_keys=True))
    return fixed


def _recorded_counts(frame: DataFrame, spark: Any, store: Any, checkpoint: str
                     ) -> Tuple[DataFrame, List[Dict[str, Any]], Dict[str, Optional[str]]]:
    """``frame``, its step descriptions and the frozen confs, with the
    checkpoint's recorded partition and bucket counts in place of the
    session's (``recorded_counts``), and one line saying so."""
    steps = step_descriptions(frame)
    confs = {name: spark.conf.get(name, None) for name in FROZEN_CONFS}
    saved = _with_logged_partitions(store, checkpoint, read_steps(store, checkpoint))
    frame, steps, kept = replanned(frame, saved, steps, step_descriptions)
    note = partitions_note(checkpoint, saved, confs[PARTITIONS_CONF])
    if note:
        confs[PARTITIONS_CONF] = saved["confs"][PARTITIONS_CONF]  # type: ignore[index]
    if note or kept:
        print(note or f"sparkwax: {checkpoint}: {'; '.join(kept)}",
              *(["  " + line for line in kept] if note else []), sep="\n", file=sys.stderr,
              flush=True)
    return frame, steps, confs
