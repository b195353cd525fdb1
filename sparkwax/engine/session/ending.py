"""The end of a program that did not stop its Spark session.

A program that returns without ``spark.stop()`` (docs/guide.md's examples,
a script that ends after ``processAllAvailable()``) leaves its session to
the JVM's shutdown hooks, which run in no set order. On a ``local-cluster``
master the in-process worker killed its executor JVMs while the
application was still registered; the master saw them exit and launched
new ones, which failed: 25-41 lines such as ``ERROR Worker: Failed to
launch executor``, ``ERROR Master: Application sparkwax ... failed 25
times; removing it`` and a ``RejectedExecutionException`` trace, after the
program had printed its last line. A query still running was cut mid-batch.

``stop_at_exit`` (called by ``local_session``) registers one ``atexit``
hook. When the program ends with a classic session still up, it stops the
session's active queries after their micro-batch in flight
(``stopping.stop_quietly``), removes sparkwax's progress listeners (waiting
for Spark's listener bus), then stops the session, in Spark's own order:
the application leaves the master before its executors go. A program that
stopped its session itself finds nothing to do. No pyspark import here
until the program ends.
"""

from __future__ import annotations

import atexit
import logging
from typing import Any, List

from ..spark_version import active_context, instantiated_session

_LOG = logging.getLogger("sparkwax")
QUERY_WAIT_SECONDS = 30.0  # per query: its micro-batch in flight, then Spark's stop()
_registered: List[bool] = []


def stop_at_exit() -> None:
    """Register ``stop_session_at_exit`` with ``atexit``, once per process."""
    if not _registered:
        atexit.register(stop_session_at_exit)
        _registered.append(True)


def stop_session_at_exit() -> None:
    """Stop what the program left running: queries, listeners, the session.
    Never raises (an end already under way, a JVM gone: nothing to stop; a
    Ctrl-C while it waits ends it)."""
    session = running_session()
    if session is None:
        return
    try:
        stop_queries(session)
        _remove_listeners()
        session.stop()
    except KeyboardInterrupt:  # Ctrl-C while it waits: end now, as Python would have
        return
    except Exception as error:  # the gateway closing under us: the JVM ends anyway
        _LOG.debug("sparkwax: stopping the session at exit: %r", error)


def running_session() -> Any:
    """The classic session whose SparkContext still runs, or None."""
    if active_context() is None:  # (None without pyspark too)
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() or instantiated_session()


def stop_queries(session: Any) -> None:
    """Stop ``session``'s active queries, each after its micro-batch in flight."""
    from ..queries.stopping import stop_quietly

    for query in session.streams.active:
        try:
            stop_quietly(query, QUERY_WAIT_SECONDS)
        except Exception as error:  # ended meanwhile, or failed: nothing to wait for
            _LOG.debug("sparkwax: stopping query %s at exit: %r", query.name, error)


def _remove_listeners() -> None:
    """sparkwax's progress listeners, removed once their last event is delivered."""
    from ..queries.listening import remove_all

    remove_all()


__all__ = ["QUERY_WAIT_SECONDS", "running_session", "stop_at_exit", "stop_queries",
           "stop_session_at_exit"]
