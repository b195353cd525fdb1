"""A failed app's last words: one short block instead of Spark's trace.

When a query fails in a task, the driver gets Spark's ``StreamingQueryException``
(several KB: the worker's traceback, the plan) with the sparkwax error
somewhere inside. ``failure_block(error)`` reads it (``rebuild``) and says,
in a few lines: the sparkwax error (class, step, key, callback, message),
where it ran (a task on an executor, with the micro-batch when known, the
Python worker Spark starts on the driver for a re-keyed or seeded step, or
the driver) and what to do.

>>> from sparkwax.errors import CallbackError
>>> error = CallbackError("bursts", "c1", "on_item", {"amount": 0}, "raised ZeroDivisionError")
>>> print(failure_block(error))
sparkwax: the app failed: CallbackError
  step 'bursts', key 'c1', callback on_item
  message: raised ZeroDivisionError (got {'amount': 0})
  where: the driver
  to do: fix on_item of the logic; reproduce it offline with sparkwax.testing.run on this key's items
  (Spark's full trace: rerun with --verbose or SPARKWAX_VERBOSE=1)

``install_hook()`` (called by ``sw.local_session``, and on ``import
sparkwax`` under ``sparkwax submit``) makes the block what an uncaught
failure prints, to stderr, instead of the traceback; under ``sparkwax
submit`` (``$SPARKWAX_FAILURE_FILE``) it is written to that file and the
wrapper prints it after spark-submit ends, so it is the last thing on the
screen. ``SPARKWAX_VERBOSE=1`` prints the full traceback first. Other
exceptions (a bug in the driver's own code) keep Python's traceback.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from types import TracebackType
from typing import Any, Optional, Tuple, Type

from ..errors import (BuilderError, CallbackError, CheckpointError, ConfigError, InputError,
                     LogicError, NotifyAtError, ReturnValueError, SchemaError, SnapshotError,
                     SparkwaxError)
from .rebuild import rebuild

FILE_ENV = "SPARKWAX_FAILURE_FILE"
VERBOSE_ENV = "SPARKWAX_VERBOSE"
_TASK_MARKERS = ("PythonException", "PYTHON_EXCEPTION", "StreamingQueryException",
                 "STREAM_FAILED", "Task ", "SparkException")
# the Python process Spark starts on the driver for a transformWithStateInPandas step
# (re-keyed or seeded), before its first micro-batch: its failure, as the JVM reports it
_PRE_INIT_MARKERS = ("transform_with_state_driver_worker", "PythonPreInitRunner")
PRE_INIT_WORKER = ("the driver, in Spark's pre-init Python worker of a re-keyed or seeded step "
                   "(transformWithStateInPandas)")
_BATCH = re.compile(r"\[batchId = (\d+)\]")
_PY_ERROR = re.compile(r"(?m)^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): (.*)$")
_TODO = (
    (SchemaError, "make the emitted value fit the step's output_schema (or change the schema)"),
    (SnapshotError, "keep the state small and plain (tuples, dicts, numbers); see the message"),
    (CallbackError, "fix {callback} of the logic; reproduce it offline with "
                    "sparkwax.testing.run on this key's items"),
    (ReturnValueError, "return (emits, sw.RETAIN or sw.DISCARD) from {callback}"),
    (NotifyAtError, "return None or a timezone-aware datetime from notify_at"),
    (BuilderError, "fix the builder: it must return a logic object"),
    (InputError, "fix the input rows (see the message) or filter them before the step"),
    (LogicError, "fix {callback} of the logic for this key"),
    (CheckpointError, "follow the ways out named in the message"),
    (ConfigError, "change the setting the message names"),
    (SparkwaxError, "see the message"),
)
_MORE_LINES = 8  # of a multi-line message (a checkpoint's changes and ways out)
_hooked = False


def failure_block(error: BaseException, *, where: Optional[str] = None,
                  batch: Optional[int] = None) -> Optional[str]:
    """The short block for ``error`` (a sparkwax error, or Spark's exception
    holding one or a task's Python error), or None for any other error."""
    found = _sparkwax_error(error)
    spark_error = _spark_cause(error)
    if found is None and spark_error is None:
        return None
    if batch is None:
        batch = getattr(found, "batch_id", None)
    if batch is None and spark_error is not None:
        batch = _batch_of(_text(spark_error))
    pre_init = spark_error is not None and any(marker in _text(spark_error)
                                               for marker in _PRE_INIT_MARKERS)
    if where is None:
        where = (PRE_INIT_WORKER if pre_init else
                 "a task on an executor" if spark_error is not None else "the driver")
    shown_where = where if batch is None else f"{where}, micro-batch {batch}"
    if found is None:  # a task failed with a Python error that is not sparkwax's
        kind, message = _python_error(_text(spark_error)) or (type(spark_error).__name__,
                                                              _first_line(spark_error))
        todo = "see the message"
        if kind == "ModuleNotFoundError":
            todo = ("ship the module with the app (sparkwax submit does; see docs/deploy.md), "
                    + ("or install it in the driver's Python: sparkwax puts the job's "
                       "--py-files and addPyFile files on this worker's path" if pre_init else
                       "or install it in the executors' Python"))
        lines = [f"sparkwax: the app failed: {kind}", f"  message: {message}"]
    else:
        lines = [f"sparkwax: the app failed: {type(found).__name__}"]
        if isinstance(found, LogicError) and found.step_id is not None:
            lines.append(f"  step {found.step_id!r}, key {found.key!r}, "
                         f"callback {found.callback}")
        elif getattr(found, "step_id", None):
            lines.append(f"  step {getattr(found, 'step_id')!r}")
        first, _, more = str(found).partition("\n")
        message = " ".join(first.split())
        callback = getattr(found, "callback", None)
        if isinstance(found, LogicError) and callback and f", {callback}: " in message:
            message = message.split(f", {callback}: ", 1)[1]  # step and key are above
        lines.append(f"  message: {message}")
        extra = [line.rstrip() for line in more.splitlines() if line.strip()]
        lines += [f"    {line.strip()}" for line in extra[:_MORE_LINES]]  # e.g. the ways out
        if len(extra) > _MORE_LINES:
            lines.append(f"    ... ({len(extra) - _MORE_LINES} more lines: --verbose)")
        todo = next(text for cls, text in _TODO if isinstance(found, cls))
        todo = todo.format(callback=getattr(found, "callback", None) or "the callback")
    lines += [f"  where: {shown_where}", f"  to do: {todo}",
              f"  (Spark's full trace: rerun with --verbose or {VERBOSE_ENV}=1)"]
    return "\n".join(lines)


def install_hook() -> None:
    """Print ``failure_block`` for an uncaught sparkwax or Spark task failure
    (once per process; other exceptions go to the previous hook)."""
    global _hooked
    if _hooked:
        return
    _hooked = True
    previous = sys.excepthook

    def hook(kind: Type[BaseException], value: BaseException,
             trace: Optional[TracebackType]) -> None:
        try:
            where = None if _spark_cause(value) is not None else _app_frame(trace)
            block = (interrupted_line(trace) if _interrupted(value) else None) \
                or failure_block(value, where=where)
        except Exception:  # never hide the real error behind our own
            block = None
        if block is None:
            previous(kind, value, trace)
            return
        if os.environ.get(VERBOSE_ENV, "").strip() not in ("", "0"):
            traceback.print_exception(kind, value, trace, file=sys.stderr)
        path = os.environ.get(FILE_ENV)
        if path:
            try:
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(block + "\n")
                return
            except OSError:
                pass
        print(block, file=sys.stderr, flush=True)

    sys.excepthook = hook


_NOT_THE_APP = (f"{os.sep}sparkwax{os.sep}", "pyspark", "py4j", "<frozen")


def unwinding_interrupt(error: Optional[BaseException]) -> bool:
    """Whether ``error`` is a ``KeyboardInterrupt`` or was raised while one
    unwound (its ``__context__`` chain, five links deep)."""
    for _ in range(6):
        if error is None:
            return False
        if isinstance(error, KeyboardInterrupt):
            return True
        error = error.__context__
    return False


def _interrupted(error: BaseException) -> bool:
    """A ``KeyboardInterrupt``, or py4j's error raised while one unwound (its
    clean-up call after an interrupted call fails on the broken connection);
    any other error keeps its own report."""
    return isinstance(error, KeyboardInterrupt) or (
        type(error).__module__.startswith("py4j") and unwinding_interrupt(error.__context__))


def interrupted_line(trace: Optional[TracebackType]) -> Optional[str]:
    """The one line for a Ctrl-C that stopped the driver inside a Spark call
    (py4j or pyspark frames in ``trace``), or None (Python's own traceback
    for any other ``KeyboardInterrupt``)."""
    paths = [frame.f_code.co_filename for frame, _ in traceback.walk_tb(trace)]
    if not any("py4j" in path or "pyspark" in path for path in paths):
        return None
    stdlib = os.path.dirname(os.__file__)
    app = [f"{frame.f_code.co_filename}:{line}" for frame, line in traceback.walk_tb(trace)
           if not frame.f_code.co_filename.startswith(stdlib)
           and not any(part in frame.f_code.co_filename for part in _NOT_THE_APP)]
    where = f" at {app[-1]}" if app else ""
    return (f"sparkwax: interrupted (Ctrl-C){where}, inside a Spark call; "
            f"{VERBOSE_ENV}=1 shows the trace")


def _app_frame(trace: Optional[TracebackType]) -> Optional[str]:
    """``the driver, at FILE:LINE``: the last frame of the app's own code
    (not sparkwax's, pyspark's nor py4j's), or None."""
    found = None
    for frame, line in traceback.walk_tb(trace):
        path = frame.f_code.co_filename
        if not any(part in path for part in _NOT_THE_APP):
            found = f"the driver, at {path}:{line}"
    return found


def _sparkwax_error(error: BaseException) -> Optional[SparkwaxError]:
    if isinstance(error, SparkwaxError):
        return error
    return rebuild(error)


def _spark_cause(error: BaseException) -> Optional[BaseException]:
    """Spark's exception for a failed task: ``error`` itself or its cause."""
    seen = 0
    current: Optional[BaseException] = error
    while current is not None and seen < 5:
        if type(current).__module__.startswith(("pyspark", "py4j")) and \
                any(marker in _text(current) for marker in _TASK_MARKERS):
            return current
        current, seen = current.__cause__, seen + 1
    return None


def _text(error: Any) -> str:
    try:
        return str(error)
    except Exception:
        return type(error).__name__


def _first_line(error: Any) -> str:
    return _text(error).strip().split("\n", 1)[0][:300]


def _batch_of(text: str) -> Optional[int]:
    found = _BATCH.search(text)
    return int(found.group(1)) if found else None


def _python_error(text: str) -> Optional[Tuple[str, str]]:
    """The last ``SomeError: message`` line of a worker's traceback."""
    found = list(_PY_ERROR.finditer(text.split("\nJVM stacktrace:", 1)[0]))
    for match in reversed(found):
        name = match.group(1).rsplit(".", 1)[-1]
        if not match.group(1).startswith(("org.", "java.", "pyspark.errors")):
            message = re.split(r"\s+SQLSTATE: ", match.group(2))[0].strip()
            return name, message
    return None


__all__ = ["FILE_ENV", "VERBOSE_ENV", "failure_block", "install_hook"]
