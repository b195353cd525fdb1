"""The Spark host: the only package that imports pyspark.

>>> import sparkwax as sw                                          # doctest: +SKIP
>>> out = sw.stateful(events, key="user", builder=Session,         # doctest: +SKIP
...                   output_schema="start timestamp, end timestamp, events long",
...                   time=sw.EventTime("ts", watermark="10 minutes"))

The names below load their module on first use: a Python worker imports
``sparkwax.engine.hosts.host`` (or ``packed``) when it unpickles a step, and
nothing of the driver's side (planning, ``start``, progress, the state
tools) comes with it (see docs/performance.md, "Start-up").
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any, List

from ..errors import SchemaError

if TYPE_CHECKING:  # type checkers see the real names; at run time __getattr__ loads them
    from .checkpoints.finish import finish as finish
    from .planning.plan import STATE_SCHEMA as STATE_SCHEMA, stateful as stateful
    from .planning.plan import stateful_batch as stateful_batch
    from .queries.progress import follow as follow
    from .session.local_session import STATE_STORES as STATE_STORES, local_session as local_session
    from .queries.start import start as start
    from .checkpoints.state import read_state as read_state
    from .checkpoints.state.rescale import rescale as rescale

_HOMES = {"STATE_SCHEMA": "planning.plan", "STATE_STORES": "session.local_session",
          "finish": "checkpoints.finish", "follow": "queries.progress",
          "local_session": "session.local_session", "read_state": "checkpoints.state",
          "rescale": "checkpoints.state.rescale", "start": "queries.start",
          "stateful": "planning.plan", "stateful_batch": "planning.plan"}

__all__ = ["STATE_SCHEMA", "STATE_STORES", "SchemaError", "finish", "follow", "local_session",
           "read_state", "rescale", "start", "stateful", "stateful_batch"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted({*globals(), *__all__})
