"""Progress lines pushed by Spark's ``StreamingQueryListener``, not polled.

Spark posts each micro-batch's ``StreamingQueryProgress`` to the session's
query listeners (``onQueryProgress``) once the batch is done; ``listen``
adds one listener that hands them to ``progress.Follower`` (which prints
each batch once, in order) and removes itself when the followed queries have
ended. It works on a classic session (Spark calls the Python listener
through py4j) and over Spark Connect (pyspark 4's client receives the events
from the server). The listener bus is asynchronous: an event may arrive after
the query has ended, so ``finish()`` also reads ``recentProgress`` once, as
the polling thread did, before the caller prints anything else.
"""

from __future__ import annotations

import atexit
import json
import threading
from typing import Any, Dict, Mapping, Optional, Protocol, Set

from ..spark_version import java_spark_context


class ProgressTarget(Protocol):
    """What the listener hands the progress to (``progress.Follower``; a
    protocol here: progress imports this module)."""

    def poll(self) -> None: ...

    def push(self, name: str, progress: Mapping[str, Any]) -> None: ...


class Listening:
    """``follow``'s result with a listener: ``follower`` and ``finish()``."""

    def __init__(self, follower: ProgressTarget, spark: Any, queries: Dict[str, Any]) -> None:
        self.follower = follower
        self._spark = spark
        self._queries = queries
        self._ids = {str(query.id): name for name, query in queries.items()}
        self._ended: Set[str] = set()
        self._lock = threading.Lock()
        self._all_ended = threading.Event()
        self._listener: Optional[Any] = None

    def start(self) -> "Listening":
        self._listener = _listener_for(self)
        self._spark.streams.addListener(self._listener)
        _LIVE.add(self)
        self.follower.poll()  # a batch that ended before the listener was added
        return self

    # called by the listener, on Spark's listener thread
    def progress(self, query_id: str, progress_json: str) -> None:
        name = self._ids.get(query_id)
        if name is not None:
            self.follower.push(name, json.loads(progress_json))

    def terminated(self, query_id: str) -> None:
        if query_id in self._ids:
            with self._lock:
                self._ended.add(query_id)
                if self._ended == set(self._ids):
                    self._all_ended.set()

    def finish(self, timeout: float = 10.0) -> None:
        """Print every batch reported so far (read from the queries); once
        they have all stopped, wait for the listener's last event (a query's
        end comes after its last progress) and remove it: an event still on
        its way when the program ends would fail in Spark's listener bus
        (an ERROR line) as Python's side of py4j closes."""
        self.follower.poll()
        if not any(query.isActive for query in self._queries.values()):
            self._all_ended.wait(timeout)
            self._remove()

    def _remove(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
        _LIVE.discard(self)
        if listener is not None:
            try:
                self._spark.streams.removeListener(listener)
            except Exception:  # the session has stopped: its listeners went with it
                return
            _drain(self._spark)


def _drain(spark: Any, timeout_ms: int = 10_000) -> None:
    """Wait until Spark's listener bus has delivered every event it holds.

    ``removeListener`` does not wait for a delivery already on its way: the
    bus thread may still be inside this listener's Python callback (a
    query's end, its last progress), and a program that ends then breaks
    the py4j call (``ERROR StreamingQueryListenerBus: Listener
    PythonStreamingQueryListenerWrapper threw an exception``). The streaming
    listeners are called from the session's ``LiveListenerBus``, whose
    ``waitUntilEmpty`` returns once each queued event has been handled. Over
    Spark Connect there is no such bus here (the client's listener has no
    py4j call to break): nothing to wait for."""
    try:
        bus = java_spark_context(spark).listenerBus()
    except Exception:  # Spark Connect, or the context has stopped
        return
    try:
        bus.waitUntilEmpty(timeout_ms)
    except Exception:  # still busy after the timeout: end anyway
        pass


_LIVE: Set[Listening] = set()  # listeners to remove when the program ends


@atexit.register
def remove_all() -> None:
    """Remove the listeners of queries nobody waited for, before py4j closes
    (at exit, and from ``session.ending`` once it has stopped the queries)."""
    for listening in list(_LIVE):
        listening._remove()


def listen(spark: Any, follower: ProgressTarget, queries: Dict[str, Any]) -> Optional[Listening]:
    """A started ``Listening`` for ``queries`` on ``spark``, or None if this
    session takes no Python listener (the caller then polls)."""
    try:
        return Listening(follower, spark, queries).start()
    except Exception:  # an older pyspark, a session without listeners
        return None


def _listener_for(listening: Listening) -> Any:
    from pyspark.sql.streaming.listener import StreamingQueryListener

    class ProgressListener(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            listening.progress(str(event.progress.id), event.progress.json)

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            listening.terminated(str(event.id))

    return ProgressListener()


__all__ = ["Listening", "listen", "remove_all"]
