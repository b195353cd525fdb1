"""Ctrl-C in a sparkwax driver: one short line, not six py4j tracebacks.

PySpark's SIGINT handler cancels the running jobs through py4j and raises
``KeyboardInterrupt``. Inside another py4j call of the main thread (a
``collect()``, a query being built, a session call) its own py4j call fails,
py4j logs ``ERROR:root:KeyboardInterrupt while sending command.`` with a
traceback, and the exception chain prints up to six tracebacks (measured:
six for a Ctrl-C during a ``collect()``). ``quiet_interrupts(spark)``
(``sw.local_session`` calls it) replaces that handler, in the main thread
and only while it is PySpark's, by one that cancels the jobs from another
thread and raises ``KeyboardInterrupt`` alone, and drops py4j's log records
of it. ``sparkwax._ops.failure``'s exception hook then prints one line naming
the app's line (``SPARKWAX_VERBOSE=1`` shows the trace). Ctrl-C still
stops the program where it is, as before; ``sw.start``'s queries keep their
own graceful stop (``queries.progress.stop_on_signals``).
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any, Optional

from ..._ops.failure import unwinding_interrupt

PY4J_RECORD = "KeyboardInterrupt while sending command."
_installed: Optional[logging.Filter] = None


PY4J_LOGGERS = ("", "py4j", "py4j.clientserver", "py4j.java_gateway")  # "": the root


class _DropPy4jInterrupt(logging.Filter):
    """Drops py4j's records of an interrupted call: the root logger's
    ``KeyboardInterrupt while sending command.`` and any record whose error
    happened while a ``KeyboardInterrupt`` unwound (``Exception occurred
    while shutting down connection``: a broken pipe, the JVM got the Ctrl-C
    too). The ``KeyboardInterrupt`` itself still propagates."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() == PY4J_RECORD:
            return False
        return not unwinding_interrupt(record.exc_info[1] if record.exc_info else None)


def is_pyspark_handler(handler: Any) -> bool:
    """Whether ``handler`` is the SIGINT handler a SparkContext installs."""
    return "SparkContext" in getattr(handler, "__qualname__", "") or \
        getattr(handler, "__module__", "").startswith("pyspark")


def quiet_interrupts(spark: Any) -> bool:
    """Install the quiet Ctrl-C for ``spark``'s context (see the module's
    text); False where it does not apply (not the main thread, or SIGINT is
    not PySpark's handler: a user's own, or an earlier call's)."""
    global _installed
    if threading.current_thread() is not threading.main_thread():
        return False
    if not is_pyspark_handler(signal.getsignal(signal.SIGINT)):
        return False
    context = spark.sparkContext

    def on_interrupt(number: int, frame: Any) -> None:
        threading.Thread(target=_cancel_jobs, args=(context,), daemon=True,
                         name="sparkwax-cancel-jobs").start()
        raise KeyboardInterrupt()

    signal.signal(signal.SIGINT, on_interrupt)
    if _installed is None:
        _installed = _DropPy4jInterrupt()
        for name in PY4J_LOGGERS:  # a logger's filter sees only its own records
            logging.getLogger(name).addFilter(_installed)
    return True


def _cancel_jobs(context: Any) -> None:
    try:
        context.cancelAllJobs()
    except Exception:  # the JVM is going away with the program: nothing to cancel
        pass


__all__ = ["PY4J_LOGGERS", "PY4J_RECORD", "is_pyspark_handler", "quiet_interrupts"]
