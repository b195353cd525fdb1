"""The Spark host: the only package that imports pyspark.

>>> import sparkwax as sw                                          # doctest: +SKIP
>>> out = sw.stateful(events, key="user", builder=Session,         # doctest: +SKIP
...                   output_schema="start timestamp, end timestamp, events long",
...                   time=sw.EventTime("ts", watermark="10 minutes"))

The names below load their module on first use: a Python worker imports
``sparkwax.engine.host`` (or ``packed``) when it unpickles a step, and
nothing of the driver's side (planning, ``start``, progress, the state
tools) comes with it (see docs/performance.md, "Start-up").
"""

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any, List

from ..errors import SchemaError

if TYPE_CHECKING:  # type checkers see the real names; at run time __getattr__ loads them
    from .finish import finish as finish
    from .plan import STATE_SCHEMA as STATE_SCHEMA, stateful as stateful
    from .plan import stateful_batch as stateful_batch
    from .progress import follow as follow
    from .session import STATE_STORES as STATE_STORES, local_session as local_session
    from .start import start as start
    from .state import read_state as read_state
    from .state.rescale import rescale as rescale

_HOMES = {"STATE_SCHEMA": "plan", "STATE_STORES": "session", "finish": "finish",
          "follow": "progress", "local_session": "session", "read_state": "state",
          "rescale": "state.rescale", "start": "start", "stateful": "plan",
          "stateful_batch": "plan"}

__all__ = ["STATE_SCHEMA", "STATE_STORES", "SchemaError", "finish", "follow", "local_session",
           "read_state", "rescale", "start", "stateful", "stateful_batch"]


class _Engine(ModuleType):
    """This package: ``start`` and ``finish`` stay the functions when their
    modules (``start.py``, ``finish.py``) are imported, as when this package
    imported every name eagerly (the import system sets a submodule as an
    attribute of its package)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and _HOMES.get(name) == name:
            return  # the module stays in sys.modules; the name loads the function
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Engine


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted({*globals(), *__all__})
