"""Progress of streaming queries: one line per micro-batch, and clean stops.

``follow(queries)`` prints a line per finished micro-batch of each query
(batch id, input rows, rows/s, late rows (dropped by sparkwax steps, see
``sparkwax.metrics``, or by Spark's own state operators), timers fired, state rows,
watermark, duration; for a query of several steps each step's rows in,
emits out and timers fired, first step first; a chained step's stages, rows
in and out of each), read from Spark's own ``StreamingQueryProgress``, to
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
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, TextIO, Tuple

from ...metrics import stages_summary, steps_in, steps_summary
from .catch_up import ran_batch
from .stopping import end_after_batch, execution

Say = Callable[[str], None]


def progress_line(name: str, progress: Mapping[str, Any], width: int = 0,
                  order: Sequence[str] = ()) -> str:
    """One line for one micro-batch's progress (a ``StreamingQueryProgress``);
    ``order``: the query's step ids, first step first (``step_order``)."""
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
    parts = [part for part in (steps_summary(progress, order), stages_summary(progress)) if part]
    return (f"{name:<{width}}  batch {int(progress['batchId']):>3}  {what}  late {late}  "
            f"timers {timers}  state {state:,} rows  watermark {shown}  {seconds:.1f} s"
            + "".join(f"  {part}" for part in parts))


def step_order(query: Any) -> List[str]:
    """An ``sw.start`` query's step ids, first step first as far as their
    descriptions tell (one on transformWithStateInPandas after the others)."""
    steps = getattr(query, "_steps", None)
    if not isinstance(steps, dict):
        return []
    return sorted(steps, key=lambda step: (str(steps[step].get("state")).endswith(" tws"), step))


def printer(out: Optional[TextIO] = None) -> Say:
    """A line printer: rich's console on an interactive terminal, else plain
    lines. With no ``out``, each line goes to the ``sys.stderr`` of when it
    is printed: a signal's line for a query started earlier never goes to a
    stream closed since (a replaced ``sys.stderr``, a test's capture)."""
    target = out or sys.stderr
    if target.isatty():
        try:
            from rich.console import Console

            console = Console(file=target, highlight=False, soft_wrap=True)
            return lambda line: console.print(line, markup=False)
        except ImportError:  # rich is optional for the engine
            pass

    def say(line: str) -> None:
        stream = out or sys.stderr
        stream.write(line + "\n")
        stream.flush()
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
        self.orders = {name: step_order(query) for name, query in queries.items()}
        self.width = max((len(name) for name in queries), default=0)
        self._lock = threading.RLock()  # the handler may run while the main thread adds

    def poll(self) -> None:
        """Print the batches the queries report and no line has shown yet."""
        with self._lock:
            for name, query in self.queries.items():
                for progress in query.recentProgress:
                    self._show(name, progress)

    def push(self, name: str, progress: Mapping[str, Any]) -> None:
        """Print one batch's progress (a listener's event) unless shown."""
        with self._lock:
            self._show(name, progress)

    def _show(self, name: str, progress: Mapping[str, Any]) -> None:
        if not ran_batch(progress):  # Spark's idle report: no batch ran
            return
        batch = int(progress["batchId"])
        if batch > self.seen[name]:
            self.seen[name] = batch
            order = self.orders.get(name, ()) if self.line is progress_line else None
            self.say(self.line(name, progress, self.width, *([order] if order else [])))


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


def follow(queries: Any, *, say: Optional[Say] = None, interval: float = 0.2) -> Any:
    """Print progress lines until every query has stopped.

    ``queries``: one query, a list, or a ``{name: query}`` dict. Queries
    ``sw.start`` returned (they know their session) get their lines from a
    ``StreamingQueryListener`` that Spark calls after each micro-batch
    (``sparkwax.engine.queries.listening``), on a classic session and over Spark
    Connect; other query objects are polled by a daemon thread every
    ``interval`` seconds. Either way, ``finish()`` on the returned object
    (which ``sw.start``'s ``awaitTermination`` calls) prints the last lines
    before the program goes on."""
    named = _named(queries)
    follower = Follower(named, say)
    sessions = {id(getattr(query, "_spark", None)) for query in named.values()}
    spark = getattr(next(iter(named.values()), None), "_spark", None)
    if spark is not None and len(sessions) == 1:
        from .listening import listen

        listening = listen(spark, follower, named)
        if listening is not None:
            return listening
    thread = Following(follower, named, interval)
    thread.start()
    return thread


Entry = Tuple[str, Any, Say, Optional["Follower"]]  # name, query, its printer, its follower


class _Stopper:
    """The process's one SIGINT/SIGTERM handler for every query given to
    ``stop_on_signals`` (an app that starts two queries gets one handler
    stopping both, not two handlers each stopping its own)."""

    def __init__(self, signals: Tuple[int, ...], wait_seconds: float,
                 before: Optional["_Stopper"] = None) -> None:
        self.signals = tuple(signals)
        self.wait_seconds = wait_seconds
        self.previous = {number: signal.getsignal(number) for number in self.signals}
        if before is not None and before.signals == self.signals and all(
                handler == before.handler for handler in self.previous.values()):
            self.previous = dict(before.previous)  # replaces a finished one: its own before
        self.entries: List[Entry] = []
        self.stopping, self.done = threading.Event(), threading.Event()
        self.reason = ""
        self._lock = threading.RLock()  # the handler may run while the main thread adds

    def installed(self) -> bool:
        return not self.done.is_set() and all(
            signal.getsignal(number) == self.handler for number in self.signals)

    def install(self) -> None:
        for number in self.signals:
            signal.signal(number, self.handler)

    def add(self, named: Dict[str, Any], say: Say, follower: Optional[Follower]) -> bool:
        """Stop these queries too; False if this handler is done (a new one is needed)."""
        with self._lock:
            if self.done.is_set():
                return False
            added = [(name, query, say, follower) for name, query in named.items()]
            self.entries.extend(added)
            late = self.stopping.is_set()
        for entry in added if late else ():  # started after the signal: stop it too
            self._stop_thread(entry)
        return True

    def handler(self, number: int, frame: Any) -> None:
        # Runs in the main thread, maybe inside a py4j call (awaitTermination):
        # no Spark call here, only threads (each has its own py4j connection).
        if self.done.is_set():  # ours no more: what the old handler does
            for old_number, old_handler in self.previous.items():
                signal.signal(old_number, old_handler)
            _delegate(self.previous[number], number, frame)
            return
        reason = signal.Signals(number).name
        with self._lock:
            entries, again = list(self.entries), self.stopping.is_set()
            self.stopping.set()
            self.reason = self.reason or reason
        if again:  # second signal: now
            threading.Thread(target=_stop_now, args=([e[1] for e in entries],), daemon=True,
                             name="sparkwax-stop").start()
            return
        if entries:  # once (each sw.start has its own printer, all to stderr)
            entries[0][2](f"sparkwax: {reason}: stopping after the current micro-batch "
                          "(again to stop at once)")
        for entry in entries:  # at the same time: none waits for another's batch
            self._stop_thread(entry)

    def _stop_thread(self, entry: Entry) -> None:
        # not a daemon: the program does not end before the "stopped" line
        thread = threading.Thread(target=self._stop_one, args=entry, name="sparkwax-stop")
        _STOPS[id(entry[1])] = thread
        thread.start()

    def _stop_one(self, name: str, query: Any, say: Say, follower: Optional[Follower]) -> None:
        deadline = time.monotonic() + self.wait_seconds
        jvm = execution(query)
        if jvm is not None:  # a classic query: Spark ends it after the batch in flight
            if not end_after_batch(query, jvm, deadline):
                query.stop()  # the batch took longer than wait_seconds
            if _failed(query):
                return  # its error is the story (awaitTermination raises it)
            if follower is not None:
                follower.poll()  # the last batch's line before "stopped"
            say(_stopped_line(self.reason, name, query))
            return
        # Spark Connect (or another query object): wait while a batch runs, then stop()
        running = _last_batch(query)
        while (query.isActive and time.monotonic() < deadline and _busy(query)
               and _last_batch(query) == running):
            time.sleep(0.05)
        if query.isActive:
            if follower is not None:
                follower.poll()
            # said before stop(): the main thread (in awaitTermination) may end the
            # program as soon as the query stops
            say(_stopped_line(self.reason, name, query))
            query.stop()

    def watch(self) -> None:
        while True:
            with self._lock:  # a query added meanwhile is seen, or gets a new handler
                if not any(_alive(entry[1]) for entry in self.entries):
                    self.done.set()
                    return
            time.sleep(0.2)


_STOPPER: Optional[_Stopper] = None
_STOPPER_LOCK = threading.Lock()
_STOPS: Dict[int, threading.Thread] = {}  # id(query) -> the thread stopping it


def stop_on_signals(queries: Any, *, say: Optional[Say] = None, wait_seconds: float = 60.0,
                    signals: Tuple[int, ...] = (signal.SIGINT, signal.SIGTERM),
                    follower: Optional[Follower] = None) -> bool:
    """Stop ``queries`` between micro-batches on SIGINT/SIGTERM (main thread
    only; returns False elsewhere). Every query given to this function (by
    each ``sw.start``) is stopped by the same signal, all at the same time;
    on a classic session Spark ends each after its batch in flight
    (``sparkwax.engine.queries.stopping``), over Spark Connect each is stopped once no
    batch runs. The previous handlers come back once the queries have
    stopped (a signal then goes to them); a second signal stops the queries
    at once. With ``follower`` (``follow``'s), the progress lines of every
    batch are printed before the "stopped" line."""
    global _STOPPER
    if threading.current_thread() is not threading.main_thread():
        return False
    named = _named(queries)
    with _STOPPER_LOCK:
        stopper = _STOPPER
        if stopper is None or stopper.signals != tuple(signals) or not stopper.installed() \
                or not stopper.add(named, say or printer(), follower):
            stopper = _STOPPER = _Stopper(signals, wait_seconds, stopper)
            stopper.install()
            stopper.add(named, say or printer(), follower)
            threading.Thread(target=stopper.watch, daemon=True, name="sparkwax-signals").start()
    return True


def handling_signals() -> bool:
    """Whether ``stop_on_signals``' handler is installed, for queries still
    running: a signal then stops them all, and a query started meanwhile
    too (``sparkwax.engine.queries.start_guard`` leaves the signals to it)."""
    stopper = _STOPPER
    return stopper is not None and stopper.installed()


def wait_for_stop(query: Any, timeout: float = 120.0) -> None:
    """Wait for the "stopped" line of a graceful stop of ``query`` under
    way (``sw.start``'s ``awaitTermination`` does, so the line comes before
    what the app prints next)."""
    thread = _STOPS.get(id(query))
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout)
        if not thread.is_alive():
            _STOPS.pop(id(query), None)


def _stop_now(queries: List[Any]) -> None:
    for query in queries:  # Spark's stop(): interrupts a batch still running
        if _alive(query):  # (a sparkwax Query's own stop() would wait for the batch)
            getattr(query, "spark_query", query).stop()


def _stopped_line(reason: str, name: str, query: Any) -> str:
    last = _last_batch(query)
    committed = f"last batch {last}" if last >= 0 else "no batch yet"
    return (f"sparkwax: {reason}: stopped query {name!r} ({committed}); start it "
            f"again with the same checkpoint to resume")


def _alive(query: Any) -> bool:
    """Still running: a classic query whose state says TERMINATED may still
    be finishing its batch."""
    jvm = execution(query)
    if jvm is not None:
        try:
            return bool(jvm.queryExecutionThread().isAlive())
        except Exception:  # the session is gone
            return False
    return bool(query.isActive)


def _failed(query: Any) -> bool:
    try:
        return query.exception() is not None
    except Exception:  # cannot tell: say the line
        return False


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


__all__ = ["Follower", "Following", "follow", "handling_signals", "printer", "progress_line",
           "query_name", "step_order", "steps_summary", "stop_on_signals", "wait_for_stop"]
