"""What a first run that died before its first micro-batch was logged leaves behind.

Spark starts a query whose offset log has no entry as a new query and, since
Spark 4 (``spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart``, on by
default), first checks that the checkpoint's ``offsets/``, ``commits/`` and
``state/`` folders are missing or empty, hidden files included
(``MicroBatchExecution.verifyNewCheckpointDirectory``); anything there fails
the query with ``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``. Spark writes
``offsets/0`` to a hidden ``offsets/.0.<uuid>.tmp`` and renames it when
complete, so a first run killed (``kill -9``, a lost container, the end of
an interrupted driver) in those milliseconds leaves the temporary file, and
every later start on that checkpoint failed.

``clear_dead_first_run`` clears such a checkpoint before ``sw.start`` starts
the query: when neither the offset log nor the commit log has an entry (no
micro-batch was ever planned, none committed, so nothing in the checkpoint
is needed by a committed batch), it removes what is in ``offsets/``,
``commits/`` and ``state/``, and a file source's log of the files it offered
that first batch (``sources/<n>/0``; without it Spark's restarted file source
would hand those files *and* the next ones to batch 0). Other sources' files
(Kafka's initial offsets...), ``metadata`` (the query's id) and
``sparkwax-steps.json`` stay. It says so in one line on stderr. Nothing is
removed while a process holds the checkpoint's liveness record
(``sparkwax.engine.checkpoints.liveness``: ``sw.start`` then refuses). A checkpoint
whose offset log has an entry is left to Spark, which runs an uncommitted
batch again at every start.

Files go through ``storage_for(spark)`` (any checkpoint URI); a classic
session only: over Spark Connect no hidden file can be listed or deleted.

>>> leftover_names(["offsets/.0.a1.tmp", "offsets/..0.a1.tmp.crc", "sources/0/0"])
'offsets/.0.a1.tmp, sources/0/0'
>>> state_version("..1.delta.9f3c-77.tmp.crc"), state_version("2_4c1d.zip"), state_version("schema")
(1, 2, None)
"""

from __future__ import annotations

import sys
import time as wall_clock
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence

from .format.files import short_path, state_file_name
from .format.metadata_logs import file_log_entries, log_number
from ...errors import CheckpointError, ConfigError
from .liveness import live_holder
from .storage import FileEntry, join_path, storage_for
from ..deploy.session_confs import is_connect

SPARK_CHECKED = ("offsets", "commits", "state")  # what Spark wants empty on batch 0
FIRST_STATE_VERSION = 1  # the state version a query's batch 0 writes


@dataclass
class Leftovers:
    """What a dead first run left: the folders to remove and their files."""

    folders: List[str] = field(default_factory=list)
    files: List[FileEntry] = field(default_factory=list)

    def newest_ms(self) -> int:
        return max((entry.modified_ms for entry in self.files), default=0)


def clear_dead_first_run(spark: Any, checkpoint: str, *, say: Optional[Callable[[str], None]] = None,
                         settle_seconds: float = 2.0) -> List[str]:
    """Remove what a first run that died before Spark logged its first
    micro-batch left in ``checkpoint``; the removed files (relative to the
    checkpoint, Hadoop's ``.crc`` files left out), none when there is
    nothing to clear. Raises a ``CheckpointError`` when ``state/`` holds
    state no first run writes (its offset and commit logs were removed)."""
    if is_connect(spark):
        return []
    store = storage_for(spark)
    found = find_leftovers(store, checkpoint)
    if found is None:
        return []
    wait = settle_seconds - (wall_clock.time() * 1000 - found.newest_ms()) / 1000
    if wait > 0:  # another process may be starting a query on it right now
        wall_clock.sleep(min(wait, settle_seconds))
        found = find_leftovers(store, checkpoint)
        if found is None:
            return []
    if live_holder(spark, checkpoint) is not None:  # sw.start's own check names it
        return []
    for folder in found.folders:
        store.delete(folder)
    removed = [short_path(checkpoint, entry.path) for entry in found.files]
    (say or _stderr)(
        f"sparkwax: {checkpoint}: a first run stopped before Spark logged its first "
        f"micro-batch (no offsets/ entry, nothing committed); removed what it left, so "
        f"this start plans micro-batch 0 afresh: {leftover_names(removed)}")
    return [name for name in removed if not name.endswith(".crc")]


def find_leftovers(store: Any, checkpoint: str) -> Optional[Leftovers]:
    """The leftovers of a dead first run in ``checkpoint``, None when there
    are none or a batch was logged (Spark then recovers by itself)."""
    if not store.exists(checkpoint) or _has_batches(store, checkpoint):
        return None
    found = Leftovers()
    for name in SPARK_CHECKED:
        files = _add_folder(store, join_path(checkpoint, name), found)
        if name == "state":
            _check_state(checkpoint, files)
    for source in store.list(join_path(checkpoint, "sources")):
        if source.is_dir and _is_file_source_log(store, source.path):
            _add_folder(store, source.path, found)
    return found if found.files else None


def _has_batches(store: Any, checkpoint: str) -> bool:
    """Whether the offset or the commit log has an entry."""
    return any(log_number(entry.name) is not None
               for name in ("offsets", "commits")
               for entry in store.list(join_path(checkpoint, name)))


def _add_folder(store: Any, folder: str, found: Leftovers) -> List[FileEntry]:
    """Add ``folder`` and every file under it (hidden ones too), if any; the files."""
    files = _walk(store, folder)
    if files:
        found.folders.append(folder)
        found.files.extend(files)
    return files


def _walk(store: Any, folder: str) -> List[FileEntry]:
    """Every file under ``folder``, hidden ones included."""
    files: List[FileEntry] = []
    for entry in store.list(folder, hidden=True):
        files.extend(_walk(store, entry.path) if entry.is_dir else [entry])
    return files


def _is_file_source_log(store: Any, folder: str) -> bool:
    """Whether ``folder`` (``sources/<n>``) is a file source's log: its
    entries list files (Kafka's or the rate source's hold offsets)."""
    entries = [e for e in store.list(folder) if log_number(e.name) is not None]
    if not entries:
        return False
    for entry in entries:
        try:
            file_log_entries(store.read_text(entry.path), entry.path)
        except ConfigError:
            return False
    return True


def _check_state(checkpoint: str, files: Sequence[FileEntry]) -> None:
    """Refuse state of a version no first run writes: a checkpoint whose
    offset and commit logs were removed, not one a dead first run left."""
    for entry in files:
        version = state_version(entry.name)
        if version is not None and version > FIRST_STATE_VERSION:
            where = short_path(checkpoint, entry.path)
            raise CheckpointError(
                f"checkpoint {checkpoint} has no micro-batch in its offset or commit log, but "
                f"its state file {where} is of version {version} (a first run writes version "
                f"{FIRST_STATE_VERSION} only): the logs were removed or lost, and Spark "
                f"refuses to start on it (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY). Restore "
                f"offsets/ and commits/ from a copy of the folder, or start over with "
                f"`sparkwax state clear {checkpoint}` (Spark cannot use this state without "
                f"its commit log).", checkpoint=checkpoint, path=entry.path)


def state_version(name: str) -> Optional[int]:
    """The version of a state store file's name, its hidden temporary and
    checksum forms too (``..1.delta.<uuid>.tmp.crc``), else None."""
    parsed = state_file_name(".".join(name.lstrip(".").split(".")[:2]))
    return parsed[0] if parsed else None


def leftover_names(names: Sequence[str], shown: int = 6) -> str:
    """The removed files for the one line: Hadoop's ``.crc`` files left out."""
    kept = [name for name in names if not name.endswith(".crc")]
    more = f" and {len(kept) - shown} more" if len(kept) > shown else ""
    return ", ".join(kept[:shown]) + more


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


__all__ = ["Leftovers", "clear_dead_first_run", "find_leftovers", "leftover_names",
           "state_version"]
