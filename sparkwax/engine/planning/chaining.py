"""A stateful step on a stream that already runs one: found in the input's
plan and refused by name, before Spark's analyzer sees the query.

Spark runs one ``applyInPandasWithState`` per streaming query (its
``UnsupportedOperationChecker``: "Multiple applyInPandasWithStates are not
supported", raised at ``start`` with the whole plan, sparkwax's internal
columns included). Every Spark entry point's plan (``plan_step``) asks
``refuse_second_step`` first, so ``sw.stateful``, ``connect``, ``join`` and
``stateful_batch`` on such a stream fail where the user wrote the second step,
with the names of both steps and the forms that work.

>>> stateful_operators_in("~CollectMetrics sparkwax:dedupe, [...]\\n"
...                       "+- ~FlatMapGroupsInPandasWithState run_streaming_group(...)")
['dedupe']
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator, List, Optional

from ...errors import ConfigError
from ...metrics import INPUT_SUFFIX, PREFIX
from ..deploy.session_confs import is_connect

# an applyInPandasWithState node of a classic session's logical plan (the same
# name on 3.5 to 4.3), and the observed metrics sparkwax puts on top of each
_APPLY = "FlatMapGroupsInPandasWithState"
_METRICS = re.compile(r"CollectMetrics " + re.escape(PREFIX) + r"(.+?), \[")
OTHER = "an applyInPandasWithState that is not a sparkwax step"
# the Spark Connect client's plan nodes of the same two
_CONNECT_APPLY = "ApplyInPandasWithState"
_CONNECT_METRICS = "CollectMetrics"


def stateful_operators_in(plan: str) -> List[str]:
    """The applyInPandasWithState operators of a logical plan's text, top
    first: a sparkwax step's id (its observed metrics sit above it), else
    ``OTHER``."""
    def marks() -> Iterator[Optional[str]]:
        for line in plan.splitlines():
            metrics = _METRICS.search(line)
            if metrics is not None:
                yield PREFIX + metrics.group(1)
            elif _APPLY in line:
                yield None
    return _operators(marks())


def stateful_operators(df: Any) -> List[str]:
    """The applyInPandasWithState operators ``df``'s plan holds (see
    ``stateful_operators_in``), on a classic or a Spark Connect session;
    ``[]`` when the plan cannot be read (private APIs: the JVM's
    ``queryExecution().logical()``, Connect's client plan, both on every
    supported line; a change there skips the check, and Spark's own error
    stands)."""
    try:
        if is_connect(df.sparkSession):
            return _operators(_connect_marks(df._plan))
        return stateful_operators_in(str(df._jdf.queryExecution().logical().toString()))
    except Exception:  # pragma: no cover (a PySpark that moved the plan's API)
        return []


def _operators(marks: Iterable[Optional[str]]) -> List[str]:
    """The operators from a plan's marks, top first: an observed metrics
    name (a sparkwax step's sits above its operator; its input count's
    below, ignored), or None for an applyInPandasWithState."""
    names: List[str] = []
    above: Optional[str] = None  # the step whose metrics are the latest seen
    for mark in marks:
        if mark is None:
            names.append(above or OTHER)
            above = None
        elif mark.startswith(PREFIX) and not mark.endswith(INPUT_SUFFIX):
            above = mark[len(PREFIX):]
    return names


def _connect_marks(plan: Any) -> Iterator[Optional[str]]:
    """``_operators``' marks of a Connect client plan, walked node by node."""
    for node in _nodes(plan):
        kind = type(node).__name__
        if kind == _CONNECT_METRICS:
            observation = getattr(node, "_observation", None)
            yield observation if isinstance(observation, str) else \
                str(getattr(observation, "_name", ""))
        elif kind == _CONNECT_APPLY:
            yield None


def _nodes(plan: Any) -> Iterator[Any]:
    """Every plan node under ``plan``, top first (children in any attribute:
    ``_child``, a join's ``left``/``right``, a union's ``other``...)."""
    from pyspark.sql.connect.plan import LogicalPlan

    seen = set()
    stack = [plan]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        children = [value for value in vars(node).values() if isinstance(value, LogicalPlan)]
        stack.extend(reversed(children))


def refuse_second_step(df: Any, step_id: str) -> None:
    """A ConfigError when the streaming ``df`` already runs a stateful step
    (one applyInPandasWithState per query), naming both and the ways out."""
    if not df.isStreaming:
        return
    earlier = stateful_operators(df)
    if not earlier:
        return
    first = earlier[0]
    named = f"step {first!r}" if first != OTHER else OTHER
    raise ConfigError(
        f"step {step_id!r}: its input stream already runs stateful {named}, and Spark runs "
        f"one applyInPandasWithState per streaming query (it would refuse the query at "
        f"start: \"Multiple applyInPandasWithStates are not supported\"). To run both: "
        f"(1) over the same key, chain them into one step: builder=sw.chain(first, "
        f"second), the first's emits the second's items; (2) over another key, "
        f"run two queries: sw.start the first with path= (a table or files), read that "
        f"with spark.readStream and put step {step_id!r} on it (docs/guide.md, "
        f"\"Several stateful steps\")")


__all__ = ["OTHER", "refuse_second_step", "stateful_operators", "stateful_operators_in"]
