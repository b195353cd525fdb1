"""Wake a restarted query's processing-time timers without waiting for input.

Spark runs a micro-batch without new input only when the micro-batch before
it, *in the same run*, asked for one (``shouldRunAnotherBatch``): a query
restarted while its source is quiet runs nothing until data comes, so a
``ProcessingTimeTimeout`` step's overdue timers (``ProcessingTime`` steps,
and steps with processing-time deadlines) would wait for the next input,
possibly for hours, and ``docs/semantics.md`` promises a micro-batch at
every trigger, data or not.

Before such a query starts, ``wake_timers`` writes one more batch to the
offset log, after the last committed one: the same source offsets (it reads
nothing), the commit's watermark (the one Spark would give the next batch)
and the current time as its processing time. Spark runs a batch that is in
the offset log but not in the commit log as its first micro-batch at every
start (the batch a crash left planned), so the restart fires every timer due
by then, and from that batch on Spark asks for a batch at every trigger as
in a run that never stopped. Nothing is written when the last logged batch
is not committed (Spark runs that one first anyway), on a first run, or over
Spark Connect (no file API there: the query then waits for input, as Spark's
own does).

>>> from sparkwax.engine.checkpoints.format.metadata_logs import parse_offsets
>>> last = parse_offsets(4, 'v1\\n{"batchWatermarkMs":5,"batchTimestampMs":9}\\n{"logOffset":3}\\n-')
>>> print(idle_batch(last, next_watermark_ms=7, now_ms=100))
v1
{"batchWatermarkMs":7,"batchTimestampMs":100}
{"logOffset":3}
-
"""

from __future__ import annotations

import json
import sys
import time as wall_clock
from typing import Any, Callable, Optional

from .format.metadata_logs import OffsetEntry, parse_commit, parse_offsets
from .format.paths import join_path
from .batch_history import log_files
from ..deploy.session_confs import is_connect
from .storage import storage_for


def idle_batch(last: OffsetEntry, next_watermark_ms: int, now_ms: int) -> str:
    """The ``offsets/N+1`` text of a batch after ``last`` that reads nothing:
    ``last``'s metadata (its pinned confs) with the next watermark and
    ``now_ms`` as its time, and ``last``'s end offsets as its own."""
    metadata = dict(last.metadata)
    metadata["batchWatermarkMs"] = next_watermark_ms
    metadata["batchTimestampMs"] = now_ms
    sources = ["-" if offset is None else offset for offset in last.offsets]
    return "\n".join([last.version, json.dumps(metadata, separators=(",", ":")), *sources])


def wake_timers(spark: Any, checkpoint: str, *, say: Optional[Callable[[str], None]] = None,
                now_ms: Optional[int] = None) -> Optional[int]:
    """Log a batch that reads nothing after the last committed one of
    ``checkpoint``, so the restarted query runs it at once (see the module's
    text). Returns the id of the batch the restart runs first from the
    offset log, without looking for input: the one logged here, or the one
    a stop or kill left planned and not committed (then nothing is
    written). None: a first run, or Spark Connect."""
    if is_connect(spark):
        return None
    store = storage_for(spark)
    offsets = log_files(store, join_path(checkpoint, "offsets"))
    if not offsets:
        return None  # a first run: no state, no timers
    (last_id, _), path = max(offsets.items())
    commits = log_files(store, join_path(checkpoint, "commits"))
    commit_path = commits.get((last_id, False))
    if commit_path is None:
        return last_id  # planned, not committed: Spark runs it first at the start
    last = parse_offsets(last_id, store.read_text(path), path)
    watermark_ms = parse_commit(store.read_text(commit_path), commit_path)
    moment = int(wall_clock.time() * 1000) if now_ms is None else now_ms
    store.write_text(join_path(checkpoint, f"offsets/{last_id + 1}"),
                     idle_batch(last, watermark_ms, moment))
    (say or _stderr)(f"sparkwax: {checkpoint}: logged micro-batch {last_id + 1} (reads no "
                     "input) so that processing-time timers due while the query was stopped "
                     "fire at this start, with or without new input")
    return last_id + 1


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


__all__ = ["idle_batch", "wake_timers"]
