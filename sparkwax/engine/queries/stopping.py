"""Stop a classic streaming query between micro-batches, without interrupting one.

Spark's ``StreamingQuery.stop()`` interrupts the query's thread and cancels
its jobs at once. A micro-batch cut short is run again at the restart (so
nothing is lost), but the interrupted code logs it: ``ERROR FileFormatWriter:
Aborting job``, ``ERROR TorrentBroadcast: Store broadcast ... fail``, and a
``foreachBatch`` function whose job was cancelled fails with a py4j error
that Spark (4.x) tests with a regular expression, ``(.|\\r\\n|\\r|\\n)*``,
which recurses once per character of the error's long text: a
``java.lang.StackOverflowError`` in the stream thread. Spark has no stop that
waits for the batch in flight.

``end_after_batch`` does it with Spark's own between-batch check: the stream
thread runs a trigger only while the query's state is ACTIVE, so setting it
to TERMINATED (what ``stop()`` does first, without the interrupt) ends the
query after the batch in flight, through Spark's normal shutdown. One
condition: Spark also checks the state once more after planning a batch,
before running it, and interrupts its own thread if it is no longer ACTIVE,
so the state is changed only when the thread is not in a trigger (seen on
two polls in a row: a query falling behind starts its next trigger as one
ends, so a single such reading may be stale) or one of the in-flight
batch's jobs is running (past that check; read from the scheduler's active
jobs, whose job group and batch id properties the stream thread sets). A signal that comes after a batch's last job, as the next
batch starts at once (a trigger shorter than a batch), waits for that next
batch's first job: the query then stops after it.

A query still initializing (started, its thread not yet at its first
trigger: the signal came during start-up) is set to TERMINATED at once: Spark's
thread then ends without running a batch.

This needs the JVM query (a classic session): ``execution(query)`` is None
over Spark Connect or for an object that is not a Spark query, and callers
stop those with ``stop()``. No pyspark import: the JVM objects are reached
through the query's py4j handle.
"""

from __future__ import annotations

import time
from typing import Any, Optional

from ..spark_version import java_query, running_batch_id

RUNNING = ("Processing new data", "No new data but cleaning up state")  # Spark's status
GROUP, BATCH = "spark.jobGroup.id", "streaming.sql.batchId"  # a stream thread's job properties


def execution(query: Any) -> Optional[Any]:
    """The JVM ``StreamExecution`` of a classic query (or of a sparkwax
    ``Query`` around one), else None."""
    spark_query = getattr(query, "spark_query", query)
    handle = java_query(spark_query)
    if handle is None:
        return None
    try:
        found = handle.streamingQuery()
        found.state()  # an execution with the field this module sets
        return found
    except Exception:  # not the JVM object this module knows
        return None


def end_after_batch(query: Any, jvm: Any, deadline: float, poll: float = 0.02) -> bool:
    """Make ``query`` (its JVM execution ``jvm``) end after the micro-batch
    in flight; True once its thread has ended, False at ``deadline`` (the
    caller then stops it at once)."""
    state = jvm.state()
    between = 0  # polls in a row that found the thread between triggers
    while time.monotonic() < deadline:
        current = state.get()
        if current.toString() == "INITIALIZING":  # no batch yet: Spark's thread ends
            if state.compareAndSet(current, _terminated(current)):  # before its first one
                break
            continue  # it has just become ACTIVE
        if current.toString() != "ACTIVE":
            break  # ended already, or stopped by someone else
        point = _safe_point(query, jvm)
        between = between + 1 if point == BETWEEN else 0
        # Between triggers counts once seen twice, a poll apart: a query falling
        # behind starts its next trigger as one ends, so one such reading is
        # stale by the time the state is set (the next batch would be planning).
        if point == IN_JOB or between >= 2:
            state.compareAndSet(current, _terminated(current))
            break
        time.sleep(poll)
    idle = 0
    while time.monotonic() < deadline:
        if _ended(jvm, min(0.2, max(deadline - time.monotonic(), 0.0))):
            return True
        # a thread waiting for its next trigger time (a long interval) has no
        # batch to lose: Spark's stop() ends the wait
        idle = idle + 1 if not _in_trigger(query) else 0
        if idle >= 2:
            query.stop()
            return True
    return _ended(jvm, 0.0)


def stop_quietly(query: Any, wait_seconds: float = 60.0) -> None:
    """Stop ``query`` after its micro-batch in flight (``end_after_batch``);
    Spark's ``stop()`` over Spark Connect, or after ``wait_seconds``."""
    jvm = execution(query)
    if jvm is None or not end_after_batch(query, jvm, time.monotonic() + wait_seconds):
        query.stop()


BETWEEN, IN_JOB = "between triggers", "in a job of the batch"


def _safe_point(query: Any, jvm: Any) -> Optional[str]:
    """``BETWEEN``: not in a trigger (the next one sees the state first);
    ``IN_JOB``: running a job of the batch (past Spark's last check before
    running it); None: neither (planning, or between the batch's jobs)."""
    status = query.status or {}
    if not status.get("isTriggerActive"):
        return BETWEEN
    return IN_JOB if status.get("message") in RUNNING and _running_job(query, jvm) else None


def _running_job(query: Any, jvm: Any) -> bool:
    """A job of the batch in flight is running: the scheduler's own active
    jobs (not its status store, which Spark's listener bus updates later: a
    job already done may still show there while the next batch is planned)
    with this run's job group and the in-flight batch's id, the properties
    the stream thread gives its jobs."""
    run_id = str(query.runId)
    try:
        batch = str(running_batch_id(jvm))
        jobs = jvm.sparkSession().sparkContext().dagScheduler().activeJobs().toList()
        for index in range(jobs.size()):
            properties = jobs.apply(index).properties()
            if properties is not None and properties.getProperty(GROUP) == run_id \
                    and properties.getProperty(BATCH) == batch:
                return True
        return False
    except Exception:  # another Spark version, or a job ending meanwhile: not yet
        return False


def _in_trigger(query: Any) -> bool:
    try:
        return bool((query.status or {}).get("isTriggerActive"))
    except Exception:  # a query that just ended
        return False


def _terminated(current: Any) -> Any:
    """Spark's TERMINATED state object, found next to ``current`` (its
    package moved between Spark versions)."""
    kind = current.getClass()
    name = kind.getName().rsplit(".", 1)[0] + ".TERMINATED$"
    return kind.forName(name).getField("MODULE$").get(None)


def _ended(jvm: Any, seconds: float) -> bool:
    """The stream thread has ended (waiting up to ``seconds``). Not Spark's
    ``awaitTermination(timeout)``: it answers "not ACTIVE", true as soon as
    the state is set, while the batch in flight still runs."""
    try:
        thread = jvm.queryExecutionThread()
        if seconds > 0:
            thread.join(int(seconds * 1000))
        return not thread.isAlive()
    except Exception:  # the session is gone: so is the query
        return True


__all__ = ["end_after_batch", "execution", "stop_quietly"]
