"""Ready-made operators: each is a ``StatefulLogic`` plus a thin function that
returns its builder, so it runs offline (``sparkwax.testing.run``) and on
Spark (``sparkwax.stateful(df, key=..., builder=...)``) through the same
driver. See docs/operators.md.

>>> from sparkwax.testing import run_bounded
>>> run_bounded(count_final(), [("a", 1), ("b", 2), ("a", 3)]).by_key
{'a': [2], 'b': [1]}

Modules: ``basic`` (stateful_map, stateful_flat_map, stateful_filter),
``running`` (fold/reduce after every value), ``final`` (fold/reduce/count/
max/min at EOF), ``collecting``, ``joins`` and ``connected`` (several
inputs), ``windows`` (a subpackage: windowers, the window operators, their
output), ``recipes`` (deduplicate, throttle, session),
``sequence`` (pattern detection), ``many_timers`` (``Timers``: several
timers per key), ``ttl`` and ``limits`` (idle expiry, state size caps),
``rules`` (broadcast state), ``schemas`` (output schemas for Spark).
``import sparkwax.operators`` does not import pyspark; the DataFrame-level
functions (``join``, ``connect``, ``rules_from``, ``split_late``,
``value_fields``, ``value_struct``) import it when called.
"""

from ._base import OperatorBuilder
from .basic import stateful_filter, stateful_flat_map, stateful_map
from .collecting import collect
from .connected import connect
from .final import count_final, fold_final, max_final, min_final, reduce_final
from .joins import join, joiner
from .limits import StateTooLarge, with_state_limit
from .many_timers import Timers
from .recipes import Throttled, deduplicate, session, throttle
from .rules import Rules, rules_from, with_rules
from .running import fold, reduce
from .schemas import value_fields, value_struct
from .sequence import sequence
from .tagged import Tagged, tag
from .ttl import Ttl, with_ttl
from .windows import (LATE_SESSION_ID, SessionWindower, SlidingWindower, TumblingWindower,
                      WindowOut, collect_window, count_window, fold_window, join_window,
                      max_window, mean_window, min_window, reduce_window, split_late,
                      sum_window, window_schema)

__all__ = sorted([
    "LATE_SESSION_ID", "OperatorBuilder", "Rules", "SessionWindower", "SlidingWindower",
    "StateTooLarge", "Tagged", "Throttled", "Timers", "TumblingWindower", "Ttl", "WindowOut",
    "collect", "collect_window", "connect", "count_final", "count_window", "deduplicate",
    "fold", "fold_final", "fold_window", "join", "join_window", "joiner", "max_final",
    "max_window", "mean_window", "min_final", "min_window", "reduce", "reduce_final",
    "reduce_window", "rules_from", "sequence", "session", "split_late", "stateful_filter",
    "stateful_flat_map", "stateful_map", "sum_window", "tag", "throttle", "value_fields",
    "value_struct", "window_schema", "with_rules", "with_state_limit", "with_ttl",
])
