"""sparkwax: Bytewax-style per-key stateful logic, tested offline, run on Spark.

>>> import sparkwax as sw
>>> sw.RETAIN, sw.DISCARD
(False, True)

The Spark entry points (``stateful``, ``stateful_batch``, ``local_session``,
``start``, ``finish``) import pyspark on first use, so ``import sparkwax`` works
without it; type checkers and IDEs see them through ``TYPE_CHECKING`` imports.
"""

from .errors import (BuilderError, CallbackError, ConfigError, InputError, LogicError,
                     LostStateWarning, NotifyAtError, ReturnValueError, SchemaError,
                     SnapshotError, SparkwaxError)
from .clock import Clock, current_clock, now
from .logic import DISCARD, RETAIN, Builder, StatefulBatchLogic, StatefulLogic
from .progress import follow
from .timers import EventTime, ProcessingTime

__version__ = "0.1.0"

_ENGINE_NAMES = ("finish", "local_session", "start", "stateful", "stateful_batch")

from importlib.util import find_spec as _find_spec
from typing import TYPE_CHECKING as _TYPE_CHECKING

if _TYPE_CHECKING:  # IDEs and type checkers see the real functions; at run time,
    # __getattr__ below imports them (and pyspark) on first use.
    from .engine import (finish as finish, local_session as local_session, start as start,
                         stateful as stateful, stateful_batch as stateful_batch)

# Star-imports list the Spark entry points only where pyspark is installed.
_EXPORTED_ENGINE = _ENGINE_NAMES if _find_spec("pyspark") is not None else ()

__all__ = [  # a list display (sorted below) so that type checkers read it
    "Builder", "BuilderError", "CallbackError", "Clock", "ConfigError", "DISCARD", "EventTime",
    "InputError", "LogicError", "LostStateWarning", "NotifyAtError", "ProcessingTime", "RETAIN",
    "ReturnValueError", "SchemaError", "SnapshotError", "SparkwaxError", "StatefulBatchLogic",
    "StatefulLogic", "current_clock", "follow", "now", *_EXPORTED_ENGINE,
]
__all__.sort()


def __getattr__(name):
    if name in _ENGINE_NAMES:
        from . import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'sparkwax' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_EXPORTED_ENGINE})
