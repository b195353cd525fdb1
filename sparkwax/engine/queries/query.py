"""What ``sw.start`` returns: Spark's streaming query, with sparkwax's errors.

``Query`` passes every attribute and method to Spark's ``StreamingQuery``
(``query.spark_query``), except the three that hand back the query's
failure: ``awaitTermination()``, ``processAllAvailable()`` and
``exception()``, and ``stop()``, which lets the micro-batch in flight end
first. A sparkwax error raised in a task (a ``CallbackError``
from ``on_item``, a ``SchemaError`` for an emit) comes back as the same
sparkwax class, and a damaged checkpoint as a ``CheckpointError`` naming the
step, the file and the ways out; Spark's exception is their ``__cause__``.

>>> query = sw.start(counts, checkpoint="/data/ck", path="/data/out")   # doctest: +SKIP
>>> try:                                                                # doctest: +SKIP
...     query.awaitTermination()
... except sw.CallbackError as error:
...     print(error.step_id, error.key, error.callback)
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional

from ...errors import SparkwaxError
from .catch_up import asks_every_batch, process_all_available
from ..checkpoints.diagnose import explained, last_commit
from .progress import wait_for_stop
from .stopping import stop_quietly
from ..checkpoints.storage import storage_for


class Query:
    """Spark's ``StreamingQuery`` whose failures arrive as sparkwax errors."""

    def __init__(self, spark_query: Any, spark: Any, checkpoint: str,
                 steps: Optional[Dict[str, Dict[str, Any]]] = None):
        self.spark_query = spark_query
        self._spark = spark
        self._checkpoint = checkpoint
        self._steps = steps
        self.following: Any = None  # sw.start(progress=True)'s progress thread
        self.stopper: Any = None    # availableNow's stop (``catch_up.stop_when_caught_up``)
        self.lease: Any = None      # the checkpoint's liveness record (``checkpoints.liveness``)
        self.woken: Optional[int] = None  # the restart's wake-up batch (``checkpoints.wake``)
        # a ProcessingTimeTimeout operator: Spark never finds this query caught up
        self.asks_every_batch = asks_every_batch((steps or {}).values())

    @property
    def step_ids(self) -> List[str]:
        """The ids of the sparkwax steps this query runs (its label in
        progress lines when it has no name)."""
        return sorted(self._steps or {})

    def __getattr__(self, name: str) -> Any:
        return getattr(self.spark_query, name)

    @contextmanager
    def _explained(self) -> Iterator[None]:
        """``explained``; a task's error also gets ``batch_id``, the
        micro-batch that failed (the last committed one + 1), for
        ``sparkwax._ops.failure``'s block."""
        try:
            with explained(self._spark, self._checkpoint, steps=self._steps):
                yield
        except SparkwaxError as error:
            if error.__cause__ is not None and getattr(error, "batch_id", None) is None:
                error.batch_id = self._failed_batch()  # type: ignore[attr-defined]
            raise

    def _failed_batch(self) -> Optional[int]:
        try:
            committed = last_commit(storage_for(self._spark), self._checkpoint)
        except Exception:  # the checkpoint cannot be listed: no batch number
            return None
        return 0 if committed is None else committed + 1

    def awaitTermination(self, timeout: Optional[float] = None) -> Optional[bool]:
        """Spark's ``awaitTermination``; a failure as its sparkwax error."""
        try:
            with self._explained():
                ended: Optional[bool]
                if timeout is None:
                    ended = self.spark_query.awaitTermination()
                    return ended
                ended = self.spark_query.awaitTermination(timeout)
                return ended
        finally:
            self._print_progress()

    def processAllAvailable(self) -> None:
        """Spark's ``processAllAvailable``; a failure as its sparkwax error.
        For a step with processing-time timers or deadlines (whose Spark
        operator asks for a micro-batch at every trigger, so Spark's own
        never returns): returns once a micro-batch that started after the
        call read nothing and found nothing more to read
        (``catch_up.process_all_available``)."""
        try:
            with self._explained():
                if not self.asks_every_batch:
                    self.spark_query.processAllAvailable()
                elif not process_all_available(self.spark_query, woken=self.woken):
                    self.spark_query.awaitTermination()  # stopped: its failure, if any
        finally:
            self._print_progress()

    def _print_progress(self) -> None:
        """The progress lines reported so far, and, once the query has
        stopped, the last ones: they come before what the caller prints next
        (and before the program ends: the progress thread is a daemon); after
        a graceful stop (Ctrl-C, SIGTERM), the "stopped" line too."""
        if not self.spark_query.isActive:
            wait_for_stop(self)
            self._release()
        if self.following is not None:
            self.following.finish()

    def _release(self) -> None:
        """The query has stopped: its liveness record goes now, not at the
        next beat (a tool called right after finds the checkpoint free)."""
        if self.lease is not None:
            self.lease.release()

    def stop(self) -> None:
        """Stop the query after its micro-batch in flight
        (``stopping.stop_quietly``; Spark's ``stop()`` at once over Spark
        Connect, or after 60 s). Spark's own ``stop()`` interrupts that
        batch: a ProcessingTime step, which asks for a micro-batch at every
        trigger, stopped after ``processAllAvailable()`` logged ``ERROR
        FileFormatWriter: Aborting job`` (the batch reruns at the restart)."""
        stop_quietly(self.spark_query)
        if not self.spark_query.isActive:
            self._release()

    def exception(self) -> Optional[BaseException]:
        """The error that stopped the query (the sparkwax error when there is
        one, Spark's exception as its ``__cause__``), or None."""
        error = self.spark_query.exception()
        if error is None:
            return None
        try:
            with self._explained():
                raise error
        except Exception as translated:
            return translated

    def __repr__(self) -> str:
        return f"<sparkwax Query {self.spark_query!r}>"


__all__ = ["Query"]
