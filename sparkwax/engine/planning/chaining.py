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
from ..spark_version import (connect_plan, has_transform_with_state, line, logical_plan_text,
                             session_version)

# an applyInPandasWithState node of a classic session's logical plan (the same
# name on 3.5 to 4.3), and the observed metrics sparkwax puts on top of each
_APPLY = ("FlatMapGroupsInPandasWithState", "TransformWithStateInPandas",
          "TransformWithStateInPySpark")  # (the last: its 4.1+ name)
_METRICS = re.compile(r"CollectMetrics " + re.escape(PREFIX) + r"(.+?), \[")
OTHER = "an applyInPandasWithState that is not a sparkwax step"
# the Spark Connect client's plan nodes of the same two
_CONNECT_APPLY = "ApplyInPandasWithState"
_CONNECT_METRICS = "CollectMetrics"


_TWS_NODE = re.compile(r"~TransformWithStateIn(?:Pandas|PySpark) ")
# the other stateful streaming nodes of a logical plan's text ("~": streaming;
# a stream-static join counts too: then the check stays on)
_OTHER_STATEFUL = re.compile(r"~(Aggregate|Deduplicate|DeduplicateWithinWatermark|Join|"
                             r"FlatMapGroupsWithState) ")


def stateful_operators_in(plan: str) -> List[str]:
    """The applyInPandasWithState operators of a logical plan's text, top
    first: a sparkwax step's id (its observed metrics sit above it), else
    ``OTHER``."""
    def marks() -> Iterator[Optional[str]]:
        for line in plan.splitlines():
            metrics = _METRICS.search(line)
            if metrics is not None:
                yield PREFIX + metrics.group(1)
            elif any(name in line for name in _APPLY):
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
            return _operators(_connect_marks(connect_plan(df)))
    except Exception:  # pragma: no cover (a PySpark that moved the plan's API)
        return []
    text = plan_text(df)
    return [] if text is None else stateful_operators_in(text)


def plan_text(df: Any) -> Optional[str]:
    """A classic session's logical plan of ``df`` as text (the JVM's
    ``queryExecution().logical()``); None where it cannot be read (Spark
    Connect, a PySpark that moved that API)."""
    try:
        return logical_plan_text(df)
    except Exception:
        return None


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


def holds_following_step(plan: str) -> bool:
    """Whether a logical plan's text holds a step on transformWithStateInPandas."""
    return _TWS_NODE.search(plan) is not None


def only_sparkwax_stateful(plan: str) -> bool:
    """Whether every stateful streaming node of the plan is a sparkwax step's.

    >>> only_sparkwax_stateful("~CollectMetrics sparkwax:a, [...]\\n"
    ...                        "+- ~FlatMapGroupsInPandasWithState run_streaming_group(...)")
    True
    """
    return OTHER not in stateful_operators_in(plan) and _OTHER_STATEFUL.search(plan) is None


def after_steps(df: Any, step_id: str, *, two_clocks: bool = False) -> List[str]:
    """The sparkwax steps the streaming ``df`` already runs, top first, when
    step ``step_id`` can follow them in the same query (then it is hosted on
    transformWithStateInPandas, ``hosts.tws``); ``[]`` for a first step. A
    ConfigError naming both steps and the ways out where it cannot: after an
    applyInPandasWithState that is not a sparkwax step, on a Spark line
    without transformWithStateInPandas (3.5), over Spark Connect, or for a
    step with both timer kinds (its host needs applyInPandasWithState)."""
    if not df.isStreaming:
        return []
    earlier = stateful_operators(df)
    if not earlier:
        return []
    first = earlier[0]
    if OTHER in earlier:
        why = (f"its input stream already runs {OTHER}, and Spark runs one "
               f"applyInPandasWithState per streaming query (it would refuse the query at "
               f"start: \"Multiple applyInPandasWithStates are not supported\")")
    elif is_connect(df.sparkSession):
        why = (f"its input stream already runs stateful step {first!r}; over Spark Connect "
               f"sparkwax runs one stateful step per streaming query")
    elif not has_transform_with_state(df.sparkSession):
        why = (f"its input stream already runs stateful step {first!r}, and on Spark "
               f"{line(session_version(df.sparkSession))} a streaming query runs one "
               f"applyInPandasWithState and nothing stateful after it (from Spark 4.0, "
               f"sparkwax runs the later step on transformWithStateInPandas in the same "
               f"query)")
    elif two_clocks:
        why = (f"its input stream already runs stateful step {first!r}, and a step with both "
               f"timer kinds (notify_at and processing_notify_at) runs on "
               f"applyInPandasWithState, of which Spark runs one per streaming query")
    else:
        return [name for name in earlier if name != OTHER]
    raise ConfigError(
        f"step {step_id!r}: {why}. To run both: "
        f"(1) over the same key, chain them into one step: builder=sw.chain(first, "
        f"second), the first's emits the second's items; (2) run two queries: sw.start the "
        f"first with path= (a table or files), read that with spark.readStream and put "
        f"step {step_id!r} on it (docs/guide.md, \"Several stateful steps\")")


__all__ = ["OTHER", "after_steps", "holds_following_step", "only_sparkwax_stateful",
           "plan_text", "stateful_operators", "stateful_operators_in"]
