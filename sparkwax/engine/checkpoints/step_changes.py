"""What a restart on a checkpoint cannot take: the changes between the steps
a checkpoint recorded (``<checkpoint>/sparkwax-steps.json``) and the steps
of a new run (``describe_changes``), and the refusal that names them
(``refusal``). ``sw.start`` refuses such a restart; ``state check`` reports
it before one.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..deploy.session_confs import STATE_STORES

STORE_CONF = "spark.sql.streaming.stateStore.providerClass"
FROZEN_CONFS = ("spark.sql.shuffle.partitions", STORE_CONF)


def refusal(checkpoint: str, changes: List[str]) -> str:
    """Why a restart on ``checkpoint`` is refused (``describe_changes``'s
    lines), and the ways out: ``sw.start``'s error, ``state check``'s report.

    >>> print(refusal("/ck", ["step 's': timers changed from True to False"])[:96])
    checkpoint /ck was written by a different query:
      - step 's': timers changed from True to False
    """
    return (f"checkpoint {checkpoint} was written by a different query:\n  - "
            + "\n  - ".join(changes)
            + "\nRestore the old settings, or start over with a new checkpoint "
              "(`sparkwax state clear` removes this one).")


def describe_changes(saved: Dict[str, Any], current: Dict[str, Any]) -> List[str]:
    """The changes between two step records that a restart cannot take (see
    docs/guide.md, "Restarting with changes"): a step added or removed, its
    key, output, time mode, event-time column, timers or state layout, the
    shuffle partitions or the state store. A changed watermark delay is
    allowed (Spark allows it; the new delay applies from the restart).

    >>> old = {"steps": {"s": {"step_id": "s", "event_time": "ts - 60000 ms"}}}
    >>> describe_changes(old, {"steps": {"s": {"step_id": "s", "event_time": "ts - 5000 ms"}}})
    []
    >>> describe_changes(old, {"steps": {"s": {"step_id": "s", "event_time": "at - 60000 ms"}}})
    ["step 's': event-time column changed from 'ts' to 'at'"]
    >>> describe_changes({"confs": {STORE_CONF: None}}, {"confs": {STORE_CONF: STATE_STORES["hdfs"]}})
    []
    """
    changes = []
    old_steps, new_steps = saved.get("steps", {}), current.get("steps", {})
    for name in sorted(set(old_steps) | set(new_steps)):
        old, new = old_steps.get(name), new_steps.get(name)
        if old is None or new is None:
            changes.append(f"step {name!r} {'was added' if old is None else 'was removed'}")
            continue
        for field in sorted(set(old) | set(new)):
            if field == "event_time":
                before, after = event_column(old.get(field)), event_column(new.get(field))
                if before != after:
                    changes.append(f"step {name!r}: event-time column changed from {before!r} "
                                   f"to {after!r}")
            elif old.get(field) != new.get(field):
                changes.append(f"step {name!r}: {field} changed from {old.get(field)!r} "
                               f"to {new.get(field)!r}")
    old_confs, new_confs = saved.get("confs", {}), current.get("confs", {})
    for name in FROZEN_CONFS:
        before, after = _conf_value(name, old_confs), _conf_value(name, new_confs)
        if before != after:
            how = (f"; to run on {after} partitions, stop the query and run `sparkwax state "
                   f"rescale CHECKPOINT --partitions {after}`"
                   if name == "spark.sql.shuffle.partitions" else "")
            changes.append(f"{name} changed from {before!r} to {after!r} (Spark would keep "
                           f"the checkpoint's value, not the new one{how})")
    return changes


def event_column(recorded: Optional[str]) -> Optional[str]:
    """The event-time column of a recorded ``"<column> - <delay> ms"``
    (the delay may change between runs).

    >>> event_column("ts - 120000 ms"), event_column(None)
    ('ts', None)
    """
    if recorded is None:
        return None
    column, sep, delay = str(recorded).rpartition(" - ")
    return column if sep and delay.endswith(" ms") else str(recorded)


def _conf_value(name: str, confs: Dict[str, Any]) -> Any:
    """A frozen conf as Spark applies it: no state store set is Spark's
    default, the HDFS-backed one (``state_store="hdfs"`` spelled out)."""
    value = confs.get(name)
    if name == STORE_CONF and value is None:
        return STATE_STORES["hdfs"]
    return value


__all__ = ["FROZEN_CONFS", "STORE_CONF", "describe_changes", "event_column", "refusal"]
