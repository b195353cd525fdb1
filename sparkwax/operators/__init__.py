"""Ready-made operators: each is a ``StatefulLogic`` plus a thin function that
returns its builder, so it runs offline (``sparkwax.testing.run``) and on
Spark (``sparkwax.stateful(df, key=..., builder=...)``) through the same
driver. See docs/operators.md.

>>> from sparkwax.testing import run_bounded
>>> run_bounded(count_final(), [("a", 1), ("b", 2), ("a", 3)]).by_key
{'a': [2], 'b': [1]}

Modules: ``basic`` (stateful_map, stateful_flat_map, stateful_filter),
``running`` (fold/reduce after every value), ``final`` (fold/reduce/count/
max/min at EOF), ``collecting``, ``joins`` (several inputs: ``joiner``;
the DataFrame-level ``sparkwax.join`` and ``sparkwax.connect``), ``windows`` (a
subpackage: windowers, the window operators, their output), ``recipes``
(deduplicate, throttle, session),
``sequence`` (pattern detection), ``many_timers`` (``Timers``: several
timers per key), ``rules`` (broadcast state). ``with_ttl``/``Ttl``,
``with_state_limit``/``StateTooLarge`` and ``Tagged``/``tag`` are the core's
(``sparkwax.expiry``, ``sparkwax.limits``, ``sparkwax.sides``: a step's
``ttl=``, ``max_state_bytes=`` and sides are step semantics), named here too. Operators never import the engine or pyspark: the
DataFrame-level functions are ``sparkwax.connect``, ``sparkwax.join``,
``sparkwax.split_late``, ``sparkwax.value_fields`` and ``sparkwax.value_struct``.
"""

from ..expiry import Ttl, with_ttl
from ..limits import StateTooLarge, with_state_limit
from ..sides import Tagged, tag
from ..builders import OperatorBuilder
from .basic import stateful_filter, stateful_flat_map, stateful_map
from .collecting import collect
from .final import count_final, fold_final, max_final, min_final, reduce_final
from .joins import joiner
from .many_timers import Timers
from .max_wait import with_max_wait
from .recipes import Throttled, deduplicate, session, throttle
from .rules import Rules, rules_from, with_rules
from .running import fold, reduce
from .sequence import sequence
from .windows import (LATE_SESSION_ID, SessionWindower, SlidingWindower, TumblingWindower,
                      WindowOut, collect_window, count_window, fold_window, join_window,
                      max_window, mean_window, min_window, reduce_window,
                      sum_window, window_schema)

__all__ = [  # a literal list (sorted), so that type checkers read it
    "LATE_SESSION_ID", "OperatorBuilder", "Rules", "SessionWindower", "SlidingWindower",
    "StateTooLarge", "Tagged", "Throttled", "Timers", "Ttl", "TumblingWindower",
    "WindowOut", "collect", "collect_window", "count_final", "count_window", "deduplicate",
    "fold", "fold_final", "fold_window", "join_window", "joiner", "max_final", "max_window",
    "mean_window", "min_final", "min_window", "reduce", "reduce_final", "reduce_window",
    "rules_from", "sequence", "session", "stateful_filter", "stateful_flat_map",
    "stateful_map", "sum_window", "tag", "throttle", "window_schema", "with_max_wait",
    "with_rules", "with_state_limit", "with_ttl",
]
