"""``sw.start``'s start-up: signals held while it runs, a dead first run cleared.

Ctrl-C while ``sw.start`` was in a py4j call (``writer.start()``, the
checkpoint checks) ran PySpark's SIGINT handler there: it cancels the jobs
and raises ``KeyboardInterrupt`` inside py4j, which logged ``ERROR:root:
KeyboardInterrupt while sending command.`` with up to six tracebacks, and
the driver died while Spark's query thread was writing ``offsets/0`` (see
``sparkwax.engine.checkpoints.first_run`` for what that left).

``guard_start`` wraps ``start``: while it runs, SIGINT and SIGTERM are only
noted (a second one does at once what it did before: stop now), and once
``start`` has returned the signal is delivered again, to the handler then
installed: ``stop_on_signals``' (``start``'s default), which stops the new
query with its one "stopped" line; else the one before (PySpark's SIGINT
handler raises ``KeyboardInterrupt`` from ``sw.start``, outside py4j). When
``stop_on_signals``' handler already runs for other queries, signals are
left to it (it stops a query started meanwhile too). Before ``start`` runs,
``clear_dead_first_run`` clears what a first run that died before its first
micro-batch was logged left in the checkpoint. Only in the main thread (the
only one Python delivers signals to).

Spark's own guards against two queries on one checkpoint (``SPARK_GUARDS``:
``CONCURRENT_STREAM_LOG_UPDATE``, "Multiple streaming queries are
concurrently using") are the last line behind the liveness record's
(``checkpoints.liveness``): ``spark_guard`` knows them, and ``start`` and its
query give ``raced``'s ``CheckpointInUseError`` in their place, without
Spark's plan and Java frames.
"""

from __future__ import annotations

import functools
import signal
import threading
from typing import Any, Callable, Dict, Optional, ParamSpec, Tuple, TypeVar

from ...errors import CheckpointInUseError, SparkwaxError
from ..checkpoints.first_run import clear_dead_first_run
from ..deploy.session_confs import is_connect
from .progress import handling_signals

Args = ParamSpec("Args")
Started = TypeVar("Started")
HELD = (signal.SIGINT, signal.SIGTERM)


class HeldSignals:
    """Notes SIGINT/SIGTERM while active (``with``); ``deliver()`` raises the
    noted one again once the handlers before it are back."""

    def __init__(self, signals: Tuple[int, ...] = HELD) -> None:
        self.signals = signals
        self.previous: Dict[int, Any] = {}
        self.pending: Optional[int] = None
        self.active = False

    def __enter__(self) -> "HeldSignals":
        self.previous = {number: signal.getsignal(number) for number in self.signals}
        for number in self.signals:
            signal.signal(number, self.handler)
        self.active = True
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.release()

    def release(self) -> None:
        """Give the signals back to the handlers before ours (where ours is
        still installed; a handler installed meanwhile keeps ours as its own
        "before", which then passes them on)."""
        self.active = False
        for number in self.signals:
            if signal.getsignal(number) == self.handler:  # None: installed outside Python
                signal.signal(number, self.previous[number] or signal.SIG_DFL)

    def handler(self, number: int, frame: Any) -> None:
        # May run inside a py4j call: no Spark call and no exception here.
        if not self.active:  # released: a later handler's "before" is ours
            pass_on(self.previous[number], number, frame)
        elif self.pending is not None:  # a second signal: what it did before, now
            self.release()
            pass_on(self.previous[number], number, frame)
        else:
            self.pending = number

    def deliver(self) -> None:
        """Raise the noted signal again (to the handler installed now)."""
        number, self.pending = self.pending, None
        if number is not None:
            signal.raise_signal(number)


def pass_on(handler: Any, number: int, frame: Any) -> None:
    """Do what ``handler`` (a handler we replaced) does with the signal."""
    if callable(handler):
        handler(number, frame)
    elif handler in (signal.SIG_DFL, None):
        if number == signal.SIGINT:
            raise KeyboardInterrupt
        signal.signal(number, signal.SIG_DFL)
        signal.raise_signal(number)


def guard_start(start: Callable[Args, Started]) -> Callable[Args, Started]:
    """``start`` with its signals held while it runs, and a checkpoint a
    dead first run left cleared first (``start(frame, checkpoint=...)``).
    When ``start`` raises, the error goes on and a held signal is dropped."""

    @functools.wraps(start)
    def guarded(*args: Args.args, **kwargs: Args.kwargs) -> Started:
        frame = args[0] if args else kwargs.get("frame")
        if threading.current_thread() is not threading.main_thread() or handling_signals():
            _clear(frame, kwargs.get("checkpoint"))
            return start(*args, **kwargs)
        with HeldSignals() as held:
            _clear(frame, kwargs.get("checkpoint"))
            started = start(*args, **kwargs)
        held.deliver()
        return started

    return guarded


SPARK_GUARDS = ("CONCURRENT_STREAM_LOG_UPDATE", "SparkConcurrentModificationException",
                "Multiple streaming queries are concurrently using",
                "another query with same id is already active")


def spark_guard(error: BaseException) -> Optional[str]:
    """Which of Spark's own guards against two queries on one checkpoint
    ``error`` (or an exception it was raised from) is, or None.

    >>> spark_guard(RuntimeError("[STREAM_FAILED] ... Multiple streaming queries are "
    ...                          "concurrently using file:/ck/sources/0"))
    'Multiple streaming queries are concurrently using'
    >>> spark_guard(ValueError("no such column")) is None
    True
    """
    found: Optional[BaseException] = error
    for _ in range(8):  # a few causes deep
        if found is None:
            return None
        text = f"{type(found).__name__}: {found}"
        for guard in SPARK_GUARDS:
            if guard in text:
                return guard
        found = found.__cause__ or found.__context__
    return None


def raced(checkpoint: str, guard: str) -> CheckpointInUseError:
    """The error for a query Spark stopped because another query wrote its
    checkpoint (``guard``: Spark's words), without Spark's trace: a race of
    two starts, never the checkpoint's fault."""
    return CheckpointInUseError(
        f"the query on {checkpoint} stopped: another query started on the same checkpoint "
        f"at the same time, and Spark let only one of them write it (Spark's guard: "
        f"{guard!r}). The checkpoint is not damaged; one query runs on a checkpoint at a "
        f"time: stop the other first, or run this one on another checkpoint")


def as_race(error: BaseException, checkpoint: str) -> Optional[CheckpointInUseError]:
    """``raced``'s error when ``error`` is Spark's guard against two queries
    on ``checkpoint`` (not one sparkwax raised itself), else None."""
    guard = None if isinstance(error, SparkwaxError) else spark_guard(error)
    return None if guard is None else raced(checkpoint, guard)


def _clear(frame: Any, checkpoint: Any) -> None:
    """Clear what a dead first run left in ``checkpoint`` (classic sessions)."""
    spark = getattr(frame, "sparkSession", None)
    if checkpoint and spark is not None and not is_connect(spark):
        clear_dead_first_run(spark, checkpoint)


__all__ = ["HeldSignals", "SPARK_GUARDS", "as_race", "guard_start", "pass_on", "raced",
           "spark_guard"]
