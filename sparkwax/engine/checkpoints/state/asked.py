"""What a state tool is asked for, checked against the checkpoint before
Spark reads it: the stateful operator (``operator_id``: one the query has,
and a sparkwax step's, not another Spark operator's) and the micro-batch
(``batch_id``: a whole number within the committed batches). Spark's own
answers were its tracebacks (``STDS_COMMITTED_BATCH_UNAVAILABLE``,
``STDS_INVALID_OPTION_VALUE.IS_NEGATIVE``, ``STDS_FAILED_TO_READ_STATE_SCHEMA``),
or, for another operator's state, an error about time modes.

Every check reads the checkpoint's own files through ``store`` (a
``storage_for(spark)``); each error is a ``ConfigError`` that says what was
wrong and what to give instead.
"""

from __future__ import annotations

import json
import operator as operators_module
from typing import Any, Dict, List, Optional

from ....errors import ConfigError
from ..format.files import FOLLOWING_STATE
from ..storage import join_path

# Spark's operator names (``state/<id>/_metadata/metadata``) in the API that makes them
SPARK_OPERATORS = {
    "stateStoreSave": "a streaming aggregation (groupBy(...).agg / count)",
    "sessionWindowStateStoreSaveExec": "a session window aggregation",
    "dedupe": "dropDuplicates",
    "dedupeWithinWatermark": "dropDuplicatesWithinWatermark",
    "symmetricHashJoin": "a stream-stream join",
    "flatMapGroupsWithState": "mapGroupsWithState / flatMapGroupsWithState",
    "transformWithStateExec": "transformWithState",
    "transformWithStateInPandasExec": "transformWithStateInPandas",
    "transformWithStateInPySparkExec": "transformWithStateInPandas",
}
STEP_OPERATOR = "applyInPandasWithState"  # what a sparkwax step runs as
# ... and a step after another in one query (planning.following), its one
# ValueState named FOLLOWING_STATE (the name of 4.0 and 4.3, and the plan node's
# newer one)
FOLLOWING_OPERATORS = ("transformWithStateInPandasExec", "transformWithStateInPySparkExec")


def require_step_state(store: Any, checkpoint: str, operator_id: Any) -> int:
    """``operator_id`` as an int, or a ``ConfigError``: not a whole number,
    no state at all, an operator the checkpoint has no state for (naming
    those it has), or the state of another Spark operator (naming it: not a
    sparkwax step's). What cannot be told passes, and Spark names the
    problem: an operator whose metadata file is missing or unreadable, the
    operator folders over Spark Connect (its listing shows files only)."""
    number = whole_number(operator_id, "operator_id", "a stateful operator's id")
    present = operator_ids(store, checkpoint)
    if not present and not store.exists(join_path(checkpoint, "state")):
        raise ConfigError(f"{checkpoint} holds no state (no state/ folder): its query has "
                          f"no stateful operator, so no sparkwax step")
    if present and number not in present:
        has = (f"its one stateful operator is {present[0]}" if len(present) == 1 else
               f"its stateful operators are {_listed(present)}")
        raise ConfigError(f"{checkpoint} has no state for operator {number}: {has} (give "
                          f"--operator / operator_id= one of them)")
    name = operator_name(store, checkpoint, number)
    if name is not None and name != STEP_OPERATOR and \
            not is_following_step(store, checkpoint, number):
        raise ConfigError(not_a_step_message(checkpoint, number, name))
    return number


def one_step_operator(store: Any, checkpoint: str, what: str) -> int:
    """The operator of a one-step query's state (0), or a ConfigError when
    the query runs several steps (a step after another, planning.following):
    ``what`` works one step at a time, and says how to pick one."""
    present = operator_ids(store, checkpoint)
    if len(present) > 1:
        raise ConfigError(f"{checkpoint}: its query runs {len(present)} stateful steps "
                          f"(operators {_listed(present)}; Spark numbers the last step 0); "
                          f"{what}")
    return 0


def not_a_step_message(checkpoint: str, number: int, name: str) -> str:
    """The error for another Spark operator's state.

    >>> print(not_a_step_message("/ck", 0, "stateStoreSave"))
    /ck: operator 0 is not a sparkwax step's state: it holds the state of a streaming \
aggregation (groupBy(...).agg / count) (Spark's 'stateStoreSave' operator); sparkwax's state \
tools read the state of sw.stateful / sw.stateful_batch steps (Spark's applyInPandasWithState); \
read this one with spark.read.format("statestore")
    """
    made = SPARK_OPERATORS.get(name)
    what = f"{made} (Spark's {name!r} operator)" if made else f"Spark's {name!r} operator"
    return (f"{checkpoint}: operator {number} is not a sparkwax step's state: it holds the "
            f"state of {what}; sparkwax's state tools read the state of sw.stateful / "
            f"sw.stateful_batch steps (Spark's {STEP_OPERATOR}); read this one with "
            f"spark.read.format(\"statestore\")")


def require_committed_batch(store: Any, checkpoint: str, batch_id: Any) -> Optional[int]:
    """``batch_id`` as an int (None stays None), or a ``ConfigError``: not
    a whole number from 0, no batch committed yet (also when ``batch_id``
    is None: there is no state to read), or past the last committed one
    (naming the range the commit log holds)."""
    number = None if batch_id is None else whole_number(
        batch_id, "batch_id", "a committed micro-batch's id")
    committed = committed_batches(store, checkpoint)
    if not committed:
        raise ConfigError(f"{checkpoint}: no micro-batch of its query has committed yet, so "
                          f"it holds no state to read; run the query until its first "
                          f"micro-batch commits (a file in {checkpoint}/commits/)")
    if number is None:
        return None
    if number > committed[-1]:
        raise ConfigError(f"batch_id={number} is past the last committed micro-batch of "
                          f"{checkpoint} ({committed[-1]}): give one from {committed[0]} to "
                          f"{committed[-1]}, the batches its commit log holds (Spark keeps "
                          f"spark.sql.streaming.minBatchesToRetain of them, 100 by default), "
                          f"or leave batch_id out for the latest state")
    return number


def whole_number(value: Any, name: str, what: str) -> int:
    """``value`` as an int from 0, or a ``ConfigError`` naming ``name``.

    >>> whole_number(3, "batch_id", "x")
    3
    >>> whole_number(-1, "batch_id", "a committed micro-batch's id")
    Traceback (most recent call last):
        ...
    sparkwax.errors.ConfigError: batch_id= takes a committed micro-batch's id, a whole number from 0; got -1
    """
    try:
        number = operators_module.index(value) if not isinstance(value, bool) else -1
    except TypeError:
        number = -1
    if number < 0:
        raise ConfigError(f"{name}= takes {what}, a whole number from 0; got {value!r}")
    return number


def operator_ids(store: Any, checkpoint: str) -> List[int]:
    """The stateful operators that have state in the checkpoint."""
    return sorted(int(e.name) for e in store.list(join_path(checkpoint, "state"))
                  if e.name.isdigit())


def operator_name(store: Any, checkpoint: str, number: int) -> Optional[str]:
    """Spark's name of the operator (``applyInPandasWithState``,
    ``stateStoreSave``...), from its metadata file; None when unknown."""
    try:
        name = (operator_metadata(store, checkpoint, number) or {})["operatorInfo"][
            "operatorName"]
    except Exception:  # unreadable or another layout: Spark's reader says what is wrong
        return None
    return name if isinstance(name, str) else None


def operator_metadata(store: Any, checkpoint: str, number: int) -> Optional[Dict[str, Any]]:
    """The operator's metadata record: ``_metadata/metadata`` (version 1),
    else the newest ``_metadata/v2/<batch>`` (transformWithState's)."""
    folder = join_path(checkpoint, f"state/{number}/_metadata")
    text = store.read_text(join_path(folder, "metadata"))
    if text is None:
        batches = [int(e.name) for e in store.list(join_path(folder, "v2")) if e.name.isdigit()]
        text = store.read_text(join_path(folder, f"v2/{max(batches)}")) if batches else None
    lines = (text or "").splitlines()
    record = json.loads(lines[1]) if len(lines) > 1 else None
    return record if isinstance(record, dict) else None


def is_following_step(store: Any, checkpoint: str, number: int) -> bool:
    """Whether operator ``number`` is a sparkwax step that followed another
    in its query (transformWithStateInPandas holding one ValueState,
    ``FOLLOWING_STATE``, and the timers Spark keeps beside it)."""
    try:
        record = operator_metadata(store, checkpoint, number) or {}
        name = record["operatorInfo"]["operatorName"]
        variables = json.loads(record.get("operatorPropertiesJson") or "{}").get(
            "stateVariables", [])
    except Exception:  # unreadable: not known to be one
        return False
    values = [v.get("stateName") for v in variables if v.get("stateVariableType") != "TimerState"]
    return name in FOLLOWING_OPERATORS and values == [FOLLOWING_STATE]


def committed_batches(store: Any, checkpoint: str) -> List[int]:
    """The batch ids of the commit log, sorted."""
    return sorted(int(e.name) for e in store.list(join_path(checkpoint, "commits"))
                  if e.name.isdigit())


def _listed(numbers: List[int]) -> str:
    return ", ".join(str(n) for n in numbers)


__all__ = ["FOLLOWING_OPERATORS", "SPARK_OPERATORS", "STEP_OPERATOR", "committed_batches",
           "is_following_step", "not_a_step_message", "one_step_operator", "operator_ids", "operator_metadata",
           "operator_name", "require_committed_batch", "require_step_state",
           "whole_number"]
