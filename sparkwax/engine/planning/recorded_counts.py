"""A restart runs on the counts its checkpoint recorded, whatever the session says.

Spark fixes a stateful query's state partitions at its first micro-batch and
keeps them at every restart (the offset log's ``spark.sql.shuffle.partitions``
wins over the session's), and the packed host's bucket count is fixed the
same way (its state is keyed by bucket). A session whose shuffle partitions
differ (a cluster's default, a batch-tuning change) therefore must not stop a
stream from restarting: ``sw.start`` takes the checkpoint's counts, says so
in one line, and points at ``sparkwax state rescale`` for a real change.

Partitions need nothing from sparkwax (Spark applies the logged count). The
buckets are part of a packed step's plan (``pmod(xxhash64(key), buckets)``),
so a frame whose buckets came from the session's default is planned again
with the recorded count: ``sw.stateful`` remembers how (``remember``), and
``sw.start`` asks (``replanned``). A frame derived from the step's output
(``.where``, ``.select``), or one whose ``buckets=`` was given, cannot be
planned again: its restart is refused with the count to pass.

>>> partitions_note("ck/", {"confs": {PARTITIONS_CONF: "5"}}, "2")[:62]
"sparkwax: ck/: runs on the checkpoint's 5 state partitions, no"
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..checkpoints.format.files import recorded_buckets

Replan = Callable[[int], Any]  # buckets -> the step's frame planned with them

_REPLANS: "weakref.WeakKeyDictionary[Any, Tuple[str, Replan]]" = weakref.WeakKeyDictionary()
PARTITIONS_CONF = "spark.sql.shuffle.partitions"


def remember(frame: Any, step_id: str, replan: Replan) -> Any:
    """Record that ``frame`` (a packed step's output, its buckets the
    session's default) can be planned again with other buckets."""
    _REPLANS[frame] = (step_id, replan)
    return frame


def replanned(frame: Any, saved: Optional[Dict[str, Any]], steps: List[Dict[str, Any]],
              describe: Callable[[Any], List[Dict[str, Any]]]
              ) -> Tuple[Any, List[Dict[str, Any]], List[str]]:
    """``frame`` with its default buckets replaced by the checkpoint's
    recorded ones (``saved``: the steps file), its step descriptions (read
    from the new frame by ``describe``: any other change still shows), and
    the lines to say; ``frame`` unchanged when nothing differs or it cannot
    be planned again (the restart check then names the change)."""
    if not saved:
        return frame, steps, []
    said = []
    for step in steps:
        old = saved.get("steps", {}).get(step["step_id"], {})
        before, after = recorded_buckets(old.get("state")), recorded_buckets(step.get("state"))
        if before is None or after is None or before == after:
            continue
        entry = _REPLANS.get(frame)
        if entry is None or entry[0] != step["step_id"]:
            continue
        frame = entry[1](before)
        steps = describe(frame)
        said.append(f"step {step['step_id']!r} keeps the checkpoint's {before} buckets (the "
                    f"session's default would be {after})")
    return frame, steps, said


def partitions_note(checkpoint: str, saved: Optional[Dict[str, Any]],
                    session_value: Optional[str]) -> Optional[str]:
    """The line that says a restart keeps the checkpoint's partition count,
    or None when the session agrees (or nothing was recorded)."""
    recorded = ((saved or {}).get("confs") or {}).get(PARTITIONS_CONF)
    if recorded is None or session_value is None or str(recorded) == str(session_value):
        return None
    return (f"sparkwax: {checkpoint}: runs on the checkpoint's {recorded} state partitions, "
            f"not the session's spark.sql.shuffle.partitions={session_value} (Spark keeps a "
            f"checkpoint's count); to change it, stop the query and run `sparkwax state "
            f"rescale {checkpoint} --partitions N`")


__all__ = ["PARTITIONS_CONF", "partitions_note", "remember", "replanned"]
