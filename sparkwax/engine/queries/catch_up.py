"""Queries that end: ``availableNow`` and ``processAllAvailable`` for steps
that ask Spark for a micro-batch at every trigger.

A step with processing-time timers, or with both timer kinds, runs under
Spark's ``ProcessingTimeTimeout``, whose operator asks for another
micro-batch after every one (a timer may come due at any time): Spark then
never finds a query "caught up", so an ``availableNow`` query never stops
and ``processAllAvailable()`` never returns. sparkwax decides it instead,
from Spark's own progress reports:

- a query is *caught up* after a micro-batch that read nothing and found
  nothing more to read (every source's start, end and latest offsets equal):
  that batch ran with the last watermark and at its own processing time, so
  it fired every timer and deadline the input made due;
- ``availableNow`` stops the query once it is caught up (the rest of the
  timers stay in state for the next run); ``once`` is Spark's, one
  micro-batch then stop;
- ``processAllAvailable()`` returns once a micro-batch that started after
  the call is caught up (the query goes on).

Steps with no timers or event-time timers only are Spark's to end, as
before. This module does not import pyspark: it reads the progress
dictionaries.

>>> caught_up({"batchId": 4, "numInputRows": 0, "durationMs": {"addBatch": 80},
...            "sources": [{"startOffset": {"logOffset": 2}, "endOffset": {"logOffset": 2},
...                         "latestOffset": None}]})
True
>>> caught_up({"batchId": 3, "numInputRows": 2, "durationMs": {"addBatch": 90},
...            "sources": [{"startOffset": {"logOffset": 1}, "endOffset": {"logOffset": 2},
...                         "latestOffset": None}]})
False
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterable, Mapping, Optional

from ..spark_version import progress_offset
from .stopping import stop_quietly

POLL_SECONDS = 0.05
ONCE_CONF = "spark.sparkwax.once"  # `sparkwax submit --once`: sw.start's queries as availableNow
BOUNDED_TRIGGERS = ("availableNow",)  # "once" ends by itself: one micro-batch


def asks_every_batch(steps: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a query of these step descriptions (``start.step_descriptions``)
    runs a ``ProcessingTimeTimeout`` operator: a ``ProcessingTime`` step with
    timers, or a step with processing deadlines (two clocks)."""
    return any(step.get("time") == "processing" and step.get("timers")
               or step.get("deadlines") for step in steps)


def bounded(trigger: Optional[Mapping[str, Any]]) -> bool:
    """Whether ``trigger`` (``sw.start``'s keywords) asks for a run that
    ends when the input present at its start is done (``availableNow``).

    >>> bounded({"availableNow": True}), bounded({"processingTime": "1 second"}), bounded(None)
    (True, False, False)
    """
    return any(bool((trigger or {}).get(name)) for name in BOUNDED_TRIGGERS)


def ran_batch(progress: Optional[Mapping[str, Any]]) -> bool:
    """Whether ``progress`` reports a micro-batch that ran, not Spark's idle
    report (a query waiting for data reports its next batch id, with no
    ``addBatch`` duration)."""
    if not progress:
        return False
    return "addBatch" in (progress.get("durationMs") or {})


def caught_up(progress: Optional[Mapping[str, Any]]) -> bool:
    """Whether ``progress`` (a ``StreamingQueryProgress`` as a dict) is a
    micro-batch that ran (``ran_batch``), read no new offsets and had none
    left to read."""
    if not progress or not ran_batch(progress):
        return False
    for source in progress.get("sources") or []:
        start, end = _offset(source.get("startOffset")), _offset(source.get("endOffset"))
        latest = _offset(source.get("latestOffset"))
        if start != end or (latest is not None and latest != end):
            return False
    return True


def _offset(value: Any) -> Any:
    """An offset as a comparable value: Spark reports some as text, JSON
    (4.2+) or Python repr and ``"None"`` (4.0/4.1): ``spark_version.progress_offset``."""
    return progress_offset(value)


def last_batch(query: Any) -> int:
    """The id of the last micro-batch ``query`` reported (-1: none yet)."""
    progress = query.lastProgress
    return int(progress["batchId"]) if progress else -1


def wait_caught_up(query: Any, *, after: int = -1, poll: float = POLL_SECONDS,
                   sleep: Callable[[float], None] = time.sleep) -> bool:
    """Wait until a micro-batch with id > ``after`` is caught up (True), or
    the query stops (False). Every batch reports its progress, and once
    caught up every later batch is caught up too (until new input comes),
    so reading the last report is enough."""
    while query.isActive:
        progress = query.lastProgress
        if progress and int(progress["batchId"]) > after and caught_up(progress):
            return True
        sleep(poll)
    return False


def stop_when_caught_up(query: Any, stop: Optional[Callable[[], None]] = None,
                        poll: float = POLL_SECONDS, after: int = -1) -> threading.Thread:
    """A daemon thread that stops ``query`` once a micro-batch with id >
    ``after`` is caught up: the ``availableNow`` of a step that asks for a
    micro-batch at every trigger (``after``: a restart's wake-up batch, which
    Spark runs as logged, without looking for input). ``stop`` (default:
    ``stopping.stop_quietly``, after the micro-batch in flight, a no-data one
    that Spark started at once) ends it."""
    def run() -> None:
        if wait_caught_up(query, after=after, poll=poll):
            (stop or (lambda: stop_quietly(query)))()
    thread = threading.Thread(target=run, name="sparkwax-available-now", daemon=True)
    thread.start()
    return thread


def process_all_available(query: Any, poll: float = POLL_SECONDS, woken: Optional[int] = None
                          ) -> bool:
    """Block until every row available when called is processed and a
    micro-batch that started after the call found nothing more (the timers
    those rows made due fired in it). The batch in flight when called may
    have been planned before the call: the wait is for a later one. False:
    the query stopped first."""
    after = last_batch(query) + 1
    return wait_caught_up(query, after=after if woken is None else max(after, woken),
                          poll=poll)


__all__ = ["ONCE_CONF", "asks_every_batch", "bounded", "caught_up", "last_batch",
           "process_all_available", "ran_batch",
           "stop_when_caught_up", "wait_caught_up"]
