"""The Spark host: the only package that imports pyspark.

>>> import sparkwax as sw                                          # doctest: +SKIP
>>> out = sw.stateful(events, key="user", builder=Session,         # doctest: +SKIP
...                   output_schema="start timestamp, end timestamp, events long",
...                   time=sw.EventTime("ts", watermark="10 minutes"))

Every Spark entry point, and the module it lives in (``ENTRY_POINTS``; the
offline ones are ``sparkwax.testing``'s, the DataFrame-level operators
``sparkwax.frames``'; docs/semantics.md "Architecture" lists them all):

=====================  =======================================
``stateful``           ``engine/planning/plan.py``
``stateful_batch``     ``engine/planning/plan.py``
``STATE_SCHEMA``       ``engine/planning/plan.py``
``start``              ``engine/queries/start.py``
``follow``             ``engine/queries/progress.py``
``finish``             ``engine/checkpoints/finish.py``
``read_state``         ``engine/checkpoints/state/frame.py``
``rescale``            ``engine/checkpoints/state/rescale.py``
``local_session``      ``engine/session/local_session.py``
``connect``            ``engine/planning/connecting.py``
``seed_frame``         ``engine/planning/seeding.py``
``split_late``         ``engine/planning/schemas.py``
``value_fields``       ``engine/planning/schemas.py``
``value_struct``       ``engine/planning/schemas.py``
``STATE_STORES``       ``engine/deploy/session_confs.py``
=====================  =======================================

Each loads its module on first use: a Python worker imports
``sparkwax.engine.hosts.host`` (or ``packed``) when it unpickles a step, and
nothing of the driver's side (planning, ``start``, progress, the state
tools) comes with it (see docs/performance.md, "Start-up").
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any, Dict, List

if TYPE_CHECKING:  # type checkers see the real names; at run time __getattr__ loads them
    from .planning.plan import STATE_SCHEMA as STATE_SCHEMA, stateful as stateful
    from .planning.plan import stateful_batch as stateful_batch
    from .queries.start import start as start
    from .queries.progress import follow as follow
    from .checkpoints.finish import finish as finish
    from .checkpoints.state.frame import read_state as read_state
    from .checkpoints.state.rescale import rescale as rescale
    from .session.local_session import local_session as local_session
    from .deploy.session_confs import STATE_STORES as STATE_STORES
    from .planning.connecting import connect as connect
    from .planning.seeding import seed_frame as seed_frame
    from .planning.schemas import split_late as split_late, value_fields as value_fields
    from .planning.schemas import value_struct as value_struct

ENTRY_POINTS: Dict[str, str] = {  # name -> its module, under sparkwax.engine (the table above)
    "seed_frame": "planning.seeding",
    "stateful": "planning.plan",
    "stateful_batch": "planning.plan",
    "STATE_SCHEMA": "planning.plan",
    "start": "queries.start",
    "follow": "queries.progress",
    "finish": "checkpoints.finish",
    "read_state": "checkpoints.state.frame",
    "rescale": "checkpoints.state.rescale",
    "local_session": "session.local_session",
    "STATE_STORES": "deploy.session_confs",
    "connect": "planning.connecting",
    "split_late": "planning.schemas",
    "value_fields": "planning.schemas",
    "value_struct": "planning.schemas",
}

__all__ = ["STATE_SCHEMA", "STATE_STORES", "connect", "finish", "follow", "local_session",
           "read_state", "rescale", "split_late", "start", "stateful", "stateful_batch",
           "value_fields", "value_struct"]


def __getattr__(name: str) -> Any:
    home = ENTRY_POINTS.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted({*globals(), *__all__})
