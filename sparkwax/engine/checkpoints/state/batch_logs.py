"""The log entries of a rescale batch: the offset and commit logs of the
checkpoint and the file sink's metadata log, as text.

A rescale is recorded as one more micro-batch that reads nothing (Spark's
own ``repartition`` does the same): its offsets are the last committed
batch's source offsets, with the new partition count in the batch's confs
(Spark reads a restarted query's partition count from there), and its commit
is the last commit's (same watermark). A batch the query had planned but not
run moves one id up, with the new count. A file sink never sees the rescale
batch, so its metadata log gets an entry for it (no files), or its reader
fails on the gap (``_spark_metadata/<n> doesn't exist``).

>>> offsets = 'v1\\n{"batchWatermarkMs":0,"conf":{"spark.sql.shuffle.partitions":"2"}}\\n{"logOffset":1}'
>>> print(with_partitions(offsets, 5))
v1
{"batchWatermarkMs":0,"conf":{"spark.sql.shuffle.partitions":"5"}}
{"logOffset":1}
>>> is_compaction_batch(9, 10), is_compaction_batch(10, 10)
(True, False)
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from ..format.metadata_logs import file_log_entries, log_number, parse_offsets
from ....errors import CheckpointError
from ..format.paths import join_path

PARTITIONS_CONF = "spark.sql.shuffle.partitions"
COMPACT_CONF = "spark.sql.streaming.fileSink.log.compactInterval"
_COMPACT_SUFFIX = ".compact"


def with_partitions(offsets: str, partitions: int, watermark_ms: Optional[int] = None) -> str:
    """An offset log entry with ``partitions`` state partitions in its confs
    (and ``watermark_ms`` as its batch watermark when given)."""
    lines = offsets.split("\n")
    if len(lines) < 2 or not lines[1].startswith("{"):
        raise ValueError("not an offset log entry (no metadata line)")
    meta = json.loads(lines[1])
    meta.setdefault("conf", {})[PARTITIONS_CONF] = str(partitions)
    if watermark_ms is not None:
        meta["batchWatermarkMs"] = watermark_ms
    lines[1] = json.dumps(meta, separators=(",", ":"))
    return "\n".join(lines)


def offsets_confs(offsets: str) -> Dict[str, str]:
    """The confs an offset log entry records (the state store, its formats)."""
    return dict(parse_offsets(0, offsets).metadata.get("conf", {}))


def numbered(store: Any, folder: str) -> List[int]:
    """The batch ids of a log folder, ascending (``7`` and ``9.compact`` both count)."""
    found = (log_number(entry.name) for entry in store.list(folder))
    return sorted({number[0] for number in found if number is not None})


def is_compaction_batch(batch: int, interval: int) -> bool:
    """Spark's rule: the file sink compacts its log at every ``interval``-th batch."""
    return (batch + 1) % interval == 0


def sink_entry(store: Any, sink: str, batch: int, interval: int) -> Optional[str]:
    """Write the file sink's log entry for ``batch`` (no files; a compaction
    batch: every live file, as Spark would have compacted them); its path,
    or None when ``sink`` has no metadata log or the entry is there."""
    log = join_path(sink, "_spark_metadata")
    written = numbered(store, log)
    if not written or batch in written:
        return None
    if not is_compaction_batch(batch, interval):
        path = join_path(log, str(batch))
        store.write_text(path, "v1")
        return path
    live = _live_files(store, log, batch, interval)
    path = join_path(log, f"{batch}{_COMPACT_SUFFIX}")
    store.write_text(path, "\n".join(["v1", *live]))
    return path


def _live_files(store: Any, log: str, batch: int, interval: int) -> List[str]:
    """The entries of every file still in the sink before ``batch``: the last
    compaction's, then each later batch's adds and deletes."""
    last_compact = max((b for b in range(batch) if is_compaction_batch(b, interval)),
                       default=None)
    first = 0 if last_compact is None else last_compact
    entries: Dict[str, str] = {}
    for number in range(first, batch):
        name = f"{number}{_COMPACT_SUFFIX}" if number == last_compact else str(number)
        text = store.read_text(join_path(log, name))
        if text is None:
            raise CheckpointError(f"the file sink's log has no entry {name} in {log}",
                                  checkpoint=log, path=join_path(log, name))
        for status in file_log_entries(text, join_path(log, name)):
            if status.get("action") == "delete":
                entries.pop(status["path"], None)
            else:
                entries[status["path"]] = json.dumps(status, separators=(",", ":"))
    return list(entries.values())


__all__ = ["is_compaction_batch", "numbered", "offsets_confs",
           "sink_entry", "with_partitions"]
