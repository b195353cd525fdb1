"""sparkwax errors raised in Spark tasks, rebuilt on the driver.

A sparkwax error raised on an executor (a ``CallbackError`` in ``on_item``,
a ``SchemaError`` for an emit) reaches the driver as Spark's
``PythonException`` or ``StreamingQueryException``, whose text holds the
worker's traceback. ``rebuild(error)`` reads that text and returns the same
sparkwax class with the same message and, for a ``LogicError``, its
``step_id``, ``key``, ``callback``, ``value`` and ``reason`` (a key or value
that is a Python literal comes back as the value; any other, as its repr
text). ``task_errors()`` does it around any Spark action; ``sw.start``'s
queries and sparkwax's own actions do it already.

>>> text = ("[PYTHON_EXCEPTION] An exception was thrown from the Python worker: "
...         "Traceback (most recent call last):\\n  File \\"host.py\\", line 55\\n"
...         "sparkwax.errors.SchemaError: step 'counts', key ('u', 7), output field 'n': "
...         "does not fit bigint (got 'x')\\n SQLSTATE: 38000")
>>> error = rebuild(RuntimeError(text))
>>> type(error).__name__, error.step_id, error.key, error.callback, error.value, error.field
('SchemaError', 'counts', ('u', 7), "output field 'n'", 'x', 'n')
>>> error.reason
'does not fit bigint'
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Optional, Tuple, Type

from ..errors import NO_VALUE, CheckpointError, LogicError, SchemaError, SparkwaxError, _rebuild

_RAISED = re.compile(r"(?m)^(sparkwax(?:\.\w+)*)\.(\w+): ")
_ENDS = ("\n SQLSTATE: ", "\nSQLSTATE: ", "\n=== Streaming Query ===", "\n\tat ",
         "\nJVM stacktrace:", "\n\nThe above exception was", "\n\nDuring handling of the above")
_NOT_LAST = ("\n\nThe above exception was", "\n\nDuring handling of the above")
_STEP = re.compile(r"step ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"), key ")


def rebuild(error: BaseException) -> Optional[SparkwaxError]:
    """The sparkwax error that ``error`` (Spark's) reports from a task, or
    None when its text holds none (or it is a sparkwax error already)."""
    if isinstance(error, SparkwaxError):
        return None
    try:
        text = str(error)
    except Exception:  # a py4j error whose JVM side is gone
        return None
    found = _last_raised(text)
    if found is None:
        return None
    cls, message = found
    if issubclass(cls, LogicError):
        fields = _logic_fields(message)
        if fields is not None:
            if issubclass(cls, SchemaError):
                fields["field"] = _schema_field(fields["callback"])
            return _rebuild(cls, fields, message)
    rebuilt = cls.__new__(cls)
    if issubclass(cls, CheckpointError):
        rebuilt.__dict__.update(checkpoint=None, path=None, step_id=None, files=[])
    if issubclass(cls, LogicError):  # a message this parser does not know
        rebuilt.__dict__.update(step_id=None, key=None, callback=None, value=None,
                                reason=message)
        if issubclass(cls, SchemaError):
            rebuilt.__dict__.update(field=None)
    Exception.__init__(rebuilt, message)
    return rebuilt


@contextmanager
def task_errors() -> Iterator[None]:
    """Raise sparkwax errors from Spark tasks as themselves, Spark's
    exception as their ``__cause__``:

    >>> with task_errors():                                     # doctest: +SKIP
    ...     rows = sw.finish(checkpoint, builder=Session, output_schema=...).collect()
    """
    try:
        yield
    except Exception as error:
        rebuilt = rebuild(error)
        if rebuilt is None:
            raise
        raise rebuilt from error


def _last_raised(text: str) -> Optional[Tuple[Type[SparkwaxError], str]]:
    """The class and message of the last sparkwax exception in a traceback text."""
    for found in reversed(list(_RAISED.finditer(text))):
        cls = _class(found.group(1), found.group(2))
        if cls is None:
            continue
        rest = text[found.end():]
        end = min((rest.find(marker) for marker in _ENDS if marker in rest), default=len(rest))
        if any(rest[end:].startswith(marker) for marker in _NOT_LAST):
            return None  # another exception was raised after it: not what failed the task
        return cls, rest[:end].rstrip()
    return None


def _class(module: str, name: str) -> Optional[Type[SparkwaxError]]:
    """A sparkwax exception class by its module and name (sparkwax's own
    modules only; importing one runs no user code)."""
    try:
        owner = sys.modules.get(module) or importlib.import_module(module)
    except Exception:
        return None
    cls = getattr(owner, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, SparkwaxError) else None


def _schema_field(callback: str) -> Optional[str]:
    """A ``SchemaError``'s field path from its callback (``output field 'items[1].price'``;
    ``output``: the whole emit, None)."""
    quoted = callback[len("output field "):] if callback.startswith("output field ") else ""
    try:
        field = ast.literal_eval(quoted) if quoted else None
    except (ValueError, SyntaxError):
        return None
    return field if isinstance(field, str) else None


def _logic_fields(message: str) -> Optional[Dict[str, Any]]:
    """``LogicError``'s fields from its message: ``step 'id', key <repr>,
    <callback>: <reason>[ (got <repr>)]``."""
    step = _STEP.match(message)
    if step is None:
        return None
    rest = message[step.end():]
    parsed = _key_and_callback(rest)
    if parsed is None:
        return None
    key, callback, tail = parsed
    reason, value = tail, NO_VALUE
    if tail.endswith(")"):
        reason, value = _value(tail)
    return {"step_id": ast.literal_eval(step.group(1)), "key": key, "callback": callback,
            "value": None if value is NO_VALUE else value, "reason": reason}


def _key_and_callback(rest: str) -> Optional[Tuple[Any, str, str]]:
    """Split ``<key repr>, <callback>: <tail>``; the key is the shortest
    prefix that reads as a Python literal, else the text up to the first
    ``, <callback>: ``."""
    cuts = [m.start() for m in re.finditer(", ", rest)]
    for cut in cuts:
        after = rest[cut + 2:]
        if ": " not in after:
            continue
        try:
            key = ast.literal_eval(rest[:cut])
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        callback, tail = after.split(": ", 1)
        return key, callback, tail
    for cut in cuts:
        after = rest[cut + 2:]
        if ": " in after:
            callback, tail = after.split(": ", 1)
            return rest[:cut], callback, tail
    return None


def _value(tail: str) -> Tuple[str, Any]:
    """``(reason, value)`` of ``<reason> (got <repr>)``."""
    starts = [m.start() for m in re.finditer(r" \(got ", tail)]
    for start in reversed(starts):
        try:
            return tail[:start], ast.literal_eval(tail[start + len(" (got "):-1])
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    if starts:  # a value whose repr is no literal (a datetime, an object): its text
        return tail[:starts[-1]], tail[starts[-1] + len(" (got "):-1]
    return tail, NO_VALUE


__all__ = ["rebuild", "task_errors"]
