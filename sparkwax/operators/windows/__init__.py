"""Event-time windows: tumbling, sliding and session windows per key.

Everything public here is exported by ``sparkwax.operators`` (import it from
there; see docs/operators.md, "Windows"). The modules:

- ``windowers``: which windows a value's time falls in (``TumblingWindower``,
  ``SlidingWindower``, ``SessionWindower``);
- ``core``: the window logic (one per key, holding its open windows) and the
  window operators (``fold_window``, ``collect_window``, ``count_window``,
  ``reduce_window``, ``sum_window``, ``mean_window``, ``max_window``,
  ``min_window``, ``join_window``);
- ``out``: what they emit (``WindowOut``), its Spark schema
  (``window_schema``; ``sparkwax.split_late`` splits results from late values);
- ``_aggs``: what a window holds (internal).
"""

from .core import (LATE_SESSION_ID, collect_window, count_window, fold_window, join_window,
                   max_window, mean_window, min_window, reduce_window, sum_window)
from .out import WindowOut, window_schema
from .windowers import SessionWindower, SlidingWindower, TumblingWindower

__all__ = [  # a literal list (sorted), so that type checkers read it
    "LATE_SESSION_ID", "SessionWindower", "SlidingWindower", "TumblingWindower",
    "WindowOut", "collect_window", "count_window", "fold_window", "join_window",
    "max_window", "mean_window", "min_window", "reduce_window", "sum_window",
    "window_schema",
]
