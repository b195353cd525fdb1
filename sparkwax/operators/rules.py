"""A rules table every key can read (broadcast state).

``with_rules(rules, factory)`` builds each key's logic as
``factory(table, resume)``, where ``table`` is the current content of a
:class:`Rules` (any picklable data: a dict, a list of rows...).

- ``Rules(data)``: a fixed table. On Spark it travels with the step's function
  to every Python worker (cloudpickle), like a broadcast variable: keep it
  small (kilobytes to a few MB).
- ``rules_from(df, key=...)``: collect a small static DataFrame on the driver
  when the query is planned.
- ``Rules(loader=fn, refresh="5 minutes")``: ``fn()`` runs on each worker
  process, again when the copy there is older than ``refresh`` (wall clock),
  so a table in a file or a database is picked up without a restart.

Refreshing a fixed table means restarting the query: stop it, read the table
again, plan the step again with the new ``Rules`` and start it on the same
checkpoint. Key state lives in the checkpoint and does not depend on the
rules, so nothing is lost. A ``loader`` table can change between micro-batches
(and a batch replayed after a failure may see newer rules than its first
attempt), so the outputs are deterministic only while the table holds still.

>>> from sparkwax.testing import Batch, run
>>> from sparkwax.operators import stateful_map
>>> def over_limit(table, resume):
...     return stateful_map(lambda n, v: ((n or 0) + v, (n or 0) + v > table["limit"]))(resume)
>>> out = run(with_rules(Rules({"limit": 3}), over_limit), [Batch([("k", 2), ("k", 2)])])
>>> out.by_key
{'k': [False, True]}
"""

from __future__ import annotations

import threading
import time as wall_clock
import uuid
from typing import Any, Callable, Dict, Optional, Tuple

from ..errors import ConfigError
from ..builders import Duration, as_timedelta
from ..builders import KeySpec, key_list

_CACHE: Dict[str, Tuple[float, Any]] = {}   # per worker process: token -> (loaded at, data)
_LOCK = threading.Lock()


class Rules:
    """A table of rules: fixed ``data``, or ``loader()`` re-run every ``refresh``."""

    def __init__(self, data: Any = None, *, loader: Optional[Callable[[], Any]] = None,
                 refresh: Optional[Duration] = None):
        if loader is not None and data is not None:
            raise ConfigError("Rules takes data or loader=, not both")
        if loader is None and refresh is not None:
            raise ConfigError("Rules(refresh=) needs loader=")
        if loader is not None and not callable(loader):
            raise ConfigError(f"Rules loader must be callable, got {loader!r}")
        self.data = data
        self.loader = loader
        self.refresh_s = (as_timedelta(refresh, "refresh").total_seconds()
                          if refresh is not None else None)
        self.token = uuid.uuid4().hex

    def get(self) -> Any:
        """The current table (loads or reloads it on this process if needed)."""
        if self.loader is None:
            return self.data
        now = wall_clock.monotonic()
        cached = _CACHE.get(self.token)
        if cached is not None and (self.refresh_s is None or now - cached[0] < self.refresh_s):
            return cached[1]
        with _LOCK:
            cached = _CACHE.get(self.token)
            if cached is None or (self.refresh_s is not None and
                                  now - cached[0] >= self.refresh_s):
                cached = (now, self.loader())
                _CACHE[self.token] = cached
        return cached[1]

    def __repr__(self) -> str:
        if self.loader is None:
            return f"Rules({self.data!r})"
        return f"Rules(loader={self.loader!r}, refresh={self.refresh_s}s)"


def rules_from(df: Any, *, key: Optional[KeySpec] = None) -> Rules:
    """A fixed table from a small DataFrame, collected now (on the driver):
    a list of row dicts, or with ``key`` a dict ``key -> row dict`` (a tuple
    key for several columns)."""
    rows = [row.asDict(recursive=True) for row in df.collect()]
    if key is None:
        return Rules(rows)
    names = key_list(key)
    if len(names) == 1:
        return Rules({row[names[0]]: row for row in rows})
    return Rules({tuple(row[n] for n in names): row for row in rows})


class RulesBuilder:
    """``builder(resume) = factory(rules.get(), resume)``."""

    def __init__(self, rules: Rules, factory: Callable[[Any, Any], Any]):
        self.rules = rules
        self.factory = factory
        self.__qualname__ = f"with_rules({getattr(factory, '__qualname__', 'factory')})"

    def __call__(self, resume: Any = None) -> Any:
        return self.factory(self.rules.get(), resume)


def with_rules(rules: Rules, factory: Callable[[Any, Any], Any]) -> RulesBuilder:
    """A builder whose logic reads the rules table: ``factory(table, resume)``
    returns the key's logic (built at every activation, so a refreshed table
    is seen from the next activation on)."""
    if not isinstance(rules, Rules):
        rules = Rules(rules)
    if not callable(factory):
        raise ConfigError(f"with_rules needs factory(table, resume) -> logic, got {factory!r}")
    return RulesBuilder(rules, factory)
