"""Progress of streaming queries: one line per micro-batch, and clean stops.

``follow(queries)`` prints a line per finished micro-batch of each query
(batch id, input rows, rows/s, late rows (dropped by sparkwax steps, see
``sparkwax.metrics``, or by Spark's own state operators), timers fired, state rows,
watermark, duration), read from Spark's own ``StreamingQueryProgress``, to
stderr: through rich on an interactive terminal, plain text otherwise.
``stop_on_signals(queries)`` makes Ctrl-C (SIGINT) and SIGTERM stop the
queries between micro-batches with one line saying how to resume; a second
signal stops at once. ``sw.start(..., progress=True)`` does both.

This module does not import pyspark: it reads the progress dictionaries.

>>> print(progress_line("sessions", {"batchId": 3, "numInputRows": 1200,
...     "processedRowsPerSecond": 2400.0, "durationMs": {"triggerExecution": 500},
...     "stateOperators": [{"numRowsTotal": 42, "numRowsDroppedByWatermark": 5}],
...     "eventTime": {"watermark": "2024-01-01T00:10:00.000Z"},
...     "observedMetrics": {"sparkwax:s": {"rows_late": 2, "timers_fired": 7}}}))
sessions  batch   3     1,200 rows     2,400 rows/s  late 7  timers 7  state 42 rows  watermark 2024-01-01 00:10:00  0.5 s
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional, TextIO, Tuple

from ..metrics import steps_in

Say = Callable[[str], None]


def progress_line(name: str, progress: Mapping[str, Any], width: int = 0) -> str:
    """One line for one micro-batch's progress (a ``StreamingQueryProgress``)."""
    rows = int(progress.get("numInputRows") or 0)
    rate = float(progress.get("processedRowsPerSecond") or 0.0)
    state_ops = progress.get("stateOperators") or []
    state = sum(int(op.get("numRowsTotal") or 0) for op in state_ops)
    steps = steps_in(progress, spark_drops=False).values()  # Spark's are in stateOperators
    late = sum(int(op.get("numRowsDroppedByWatermark") or 0) for op in state_ops) + sum(
        step.rows_late for step in steps)
    timers = sum(step.timers_fired for step in steps)
    seconds = int((progress.get("durationMs") or {}).get("triggerExecution") or 0) / 1000
    watermark = (progress.get("eventTime") or {}).get("watermark", "")
    shown = watermark[:19].replace("T", " ") if watermark and not watermark.startswith(
        "1970") else "-" * 19
    what = (f"{rows:>8,} rows {rate:>9,.0f} rows/s" if rows
            else f"{'no data (timers)':>30}")
    return (f"{name:<{width}}  batch {int(progress['batchId']):>3}  {what}  late {late}  "
            f"timers {timers}  state {state:,} rows  watermark {shown}  {seconds:.1f} s")


def printer(out: Optional[TextIO] = None) -> Say:
    """A line printer: rich's console on an interactive terminal, else plain lines."""
    out = out or sys.stderr
    if out.isatty():
        try:
            from rich.console import Console

            console = Console(file=out, highlight=False, soft_wrap=True)
            return lambda line: console.print(line, markup=False)
        except ImportError:  # rich is optional for the engine
            pass

    def say(line: str) -> None:
        out.write(line + "\n")
        out.flush()
    return say


def query_name(query: Any) -> str:
    """A query's name; else, for a query ``sw.start`` returned, its steps'
    ids; else its id's first 8 characters.

    >>> class Unnamed:
    ...     name, id, step_ids = None, "1b9d6bcd-bbfd", ["sessions", "alerts"]
    >>> query_name(Unnamed())
    'sessions,alerts'
    """
    if query.name:
        return str(query.name)
    steps = getattr(query, "step_ids", None)
    if steps:
        return ",".join(steps)
    return str(query.id)[:8]


class Follower:
    """Prints each new micro-batch of ``queries`` (name -> query) once, in
    batch order; ``poll`` may be called from several threads."""

    def __init__(self, queries: Dict[str, Any], say: Optional[Say] = None,
                 line: Callable[[str, Mapping[str, Any], int], str] = progress_line):
        self.queries = queries
        self.say = say or printer()
        self.line = line
        self.seen = {name: -1 for name in queries}
        self.width = max((len(name) for name in queries), default=0)
        self._lock = threading.Lock()

    def poll(self) -> None:
        with self._lock:
            for name, query in self.queries.items():
                for progress in query.recentProgress:
                    batch = int(progress["batchId"])
                    if batch > self.seen[name]:
                        self.seen[name] = batch
                        self.say(self.line(name, progress, self.width))


class Following(threading.Thread):
    """``follow``'s thread; ``finish()`` waits for it to print the last lines."""

    def __init__(self, follower: Follower, queries: Dict[str, Any], interval: float):
        super().__init__(name="sparkwax-progress", daemon=True)
        self.follower, self._queries, self._interval = follower, queries, interval

    def run(self) -> None:
        while any(q.isActive for q in self._queries.values()):
            self.follower.poll()
            time.sleep(self._interval)
        self.follower.poll()

    def finish(self, timeout: float = 10.0) -> None:
        """Print every batch reported so far; once the queries have stopped,
        wait for the thread's last poll (their final no-data batch)."""
        self.follower.poll()
        if not any(q.isActive for q in self._queries.values()):
            self.join(timeout)


def follow(queries: Any, *, say: Optional[Say] = None, interval: float = 0.2) -> Following:
    """Print progress lines in a daemon thread until every query has stopped.

    ``queries``: one query, a list, or a ``{name: query}`` dict. A daemon
    thread dies with the program: ``finish()`` on the returned thread (which
    ``sw.start``'s ``awaitTermination`` calls) prints the last lines first."""
    named = _named(queries)
    thread = Following(Follower(named, say), named, interval)
    thread.start()
    return thread


def stop_on_signals(queries: Any, *, say: Optional[Say] = None, wait_seconds: float = 60.0,
                    signals: Tuple[int, ...] = (signal.SIGINT, signal.SIGTERM),
                    follower: Optional[Follower] = None) -> bool:
    """Stop ``queries`` between micro-batches on SIGINT/SIGTERM (main thread
    only; returns False elsewhere). The previous handlers come back once the
    queries have stopped (a signal then goes to them); a second signal stops
    the queries at once. With ``follower`` (``follow``'s), the progress lines
    of every batch are printed before the "stopped" line."""
    if threading.current_thread() is not threading.main_thread():
        return False
    named = _named(queries)
    say = say or printer()
    previous = {number: signal.getsignal(number) for number in signals}
    stopping, done = threading.Event(), threading.Event()

    def stop_between_batches(reason: str) -> None:
        deadline = time.monotonic() + wait_seconds
        for name, query in named.items():
            running = _last_batch(query)  # wait for the batch in flight to finish
            while (query.isActive and time.monotonic() < deadline and _busy(query)
                   and _last_batch(query) == running):
                time.sleep(0.05)
            if query.isActive:
                if follower is not None:
                    follower.poll()  # the last batch's line before "stopped"
                last = _last_batch(query)
                committed = f"last batch {last}" if last >= 0 else "no batch yet"
                # said before stop(): the main thread (in awaitTermination) may end the
                # program as soon as the query stops
                say(f"sparkwax: {reason}: stopped query {name!r} ({committed}); start it "
                    f"again with the same checkpoint to resume")
                query.stop()

    def stop_now() -> None:
        for query in named.values():
            if query.isActive:
                query.stop()

    def handler(number: int, frame: Any) -> None:
        # Runs in the main thread, maybe inside a py4j call (awaitTermination):
        # no Spark call here, only threads (each has its own py4j connection).
        if done.is_set():  # ours no more: what the old handler does
            for old_number, old_handler in previous.items():
                signal.signal(old_number, old_handler)
            _delegate(previous[number], number, frame)
            return
        reason = signal.Signals(number).name
        if stopping.is_set():  # second signal: now
            threading.Thread(target=stop_now, daemon=True, name="sparkwax-stop").start()
            return
        stopping.set()
        say(f"sparkwax: {reason}: stopping after the current micro-batch "
            "(again to stop at once)")
        threading.Thread(target=stop_between_batches, args=(reason,), daemon=True,
                         name="sparkwax-stop").start()

    def watch() -> None:
        while any(q.isActive for q in named.values()):
            time.sleep(0.2)
        done.set()

    for number in signals:
        signal.signal(number, handler)
    threading.Thread(target=watch, daemon=True, name="sparkwax-signals").start()
    return True


def _delegate(handler: Any, number: int, frame: Any) -> None:
    """Do what the handler before ours would have done."""
    if callable(handler):
        handler(number, frame)
    elif handler == signal.SIG_DFL:
        if number == signal.SIGINT:
            raise KeyboardInterrupt
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)


def _last_batch(query: Any) -> int:
    progress = query.lastProgress
    return int(progress["batchId"]) if progress else -1


def _busy(query: Any) -> bool:
    try:
        return bool(query.status.get("isTriggerActive"))
    except Exception:  # a query that just stopped
        return False


def _named(queries: Any) -> Dict[str, Any]:
    if isinstance(queries, dict):
        return dict(queries)
    if not isinstance(queries, (list, tuple)):
        queries = [queries]
    return {query_name(q): q for q in queries}


__all__ = ["Follower", "Following", "follow", "printer", "progress_line", "query_name", "stop_on_signals"]
