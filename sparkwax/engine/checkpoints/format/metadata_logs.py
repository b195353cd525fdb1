"""Spark's streaming checkpoint logs as data: what each micro-batch read and wrote.

Pure parsing, no I/O (the engine reads the files through Spark's file
system, ``sparkwax.engine.checkpoints.batch_history``; unit tests feed hand-written text). The
formats, as Spark 4 writes them (``OffsetSeqLog``, ``CommitLog``,
``FileStreamSourceLog``, ``FileStreamSinkLog``, all ``HDFSMetadataLog``\\ s:
one file per batch, named by its number, a version line first):

- ``offsets/N``: the plan of micro-batch N, written *before* it runs:
  ``v1``, the batch metadata (JSON: ``batchWatermarkMs``,
  ``batchTimestampMs``, ``conf``), then one line per source: the end offset
  it reads to, as JSON (``-`` for a source without one yet). A file
  source's offset is ``{"logOffset": L}``: an entry of its own log.
- ``commits/N``: written *after* batch N ran: ``v1``,
  ``{"nextBatchWatermarkMs": W}``.
- ``sources/I/L``: file source I's log entry L: the files it added, one JSON
  line each (``path`` URL-encoded, ``timestamp``, ``batchId`` = L). Every
  ``spark.sql.streaming.fileSource.log.compactInterval``-th entry (10) is
  ``L.compact`` and repeats every entry so far, each with its ``batchId``.
- ``<sink>/_spark_metadata/N``: the files the file sink committed for batch
  N (``path``, ``size``, ``action`` ...). Compacted too (``N.compact``, every
  ``spark.sql.streaming.fileSink.log.compactInterval``-th, 10), but without
  batch ids, and Spark deletes the plain files a compaction covers after
  ``...fileSink.log.cleanupDelay`` (10 minutes): their batches can then only
  be told apart as a group.

Micro-batch N of a file source reads the log entries after the previous
batch's offset up to its own: ``(offset(N-1), offset(N)]``. A batch whose
offsets equal the previous batch's is a no-data batch (timers, watermark).

>>> entry = parse_offsets(3, 'v1\\n{"batchWatermarkMs":60000,"batchTimestampMs":5,"conf":{}}\\n'
...                          '{"logOffset":4}')
>>> entry.watermark_ms, entry.timestamp_ms, file_offset(entry.offsets[0])
(60000, 5, 4)
>>> log_number("19.compact"), log_number("7"), log_number(".7.crc")
((19, True), (7, False), None)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple
from urllib.parse import unquote

from ....errors import ConfigError, short_repr

RETAIN_CONF = "spark.sql.streaming.minBatchesToRetain"


@dataclass(frozen=True)
class OffsetEntry:
    """One ``offsets/N`` file."""

    batch_id: int
    watermark_ms: int
    timestamp_ms: int
    offsets: Tuple[Optional[str], ...]  # per source: its end offset's JSON, None for "-"
    version: str = "v1"
    metadata: Mapping[str, Any] = field(default_factory=dict)  # the whole metadata line


@dataclass(frozen=True)
class PlannedBatch:
    """One micro-batch as the checkpoint's logs say Spark ran (or planned) it."""

    batch_id: int
    watermark_ms: int               # Spark's watermark for the batch (batchWatermarkMs)
    timestamp_ms: int               # its processing time (batchTimestampMs)
    log_range: Tuple[int, int]      # the file source's log entries (after, up to]
    files: Tuple[str, ...]          # the input files, in log order
    committed: bool                 # commits/N exists

    @property
    def has_data(self) -> bool:
        return self.log_range[1] > self.log_range[0]

    @property
    def log_entries(self) -> Tuple[int, ...]:
        return tuple(range(self.log_range[0] + 1, self.log_range[1] + 1))


def log_number(name: str) -> Optional[Tuple[int, bool]]:
    """``(N, compact)`` for a log file's name (``"12"``, ``"19.compact"``),
    None for anything else (``.12.crc``, temporary files, folders)."""
    base, dot, suffix = name.partition(".")
    if not base.isdigit() or (dot and suffix != "compact"):
        return None
    return int(base), bool(dot)


def _lines(text: Optional[str], path: str) -> Tuple[str, List[str]]:
    """The version line and the remaining lines of a log file."""
    lines = (text or "").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or not lines[0].startswith("v"):
        raise ConfigError(f"{path or 'a log file'} is not one of Spark's log files "
                          f"(expected a version line such as 'v1', got "
                          f"{short_repr((text or '')[:60])})")
    return lines[0], lines[1:]


def _json(line: str, path: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        raise ConfigError(f"{path or 'a log file'}: cannot read {short_repr(line[:80])} as "
                          "JSON (a damaged or truncated file?)") from None


def parse_offsets(batch_id: int, text: Optional[str], path: str = "") -> OffsetEntry:
    """An ``offsets/N`` file."""
    version, lines = _lines(text, path)
    if not lines:
        raise ConfigError(f"{path or f'offsets/{batch_id}'} has no metadata line")
    metadata = _json(lines[0], path) if lines[0].strip() else {}
    if not isinstance(metadata, dict):
        raise ConfigError(f"{path or f'offsets/{batch_id}'}: the metadata line is not a "
                          f"JSON object: {short_repr(lines[0][:80])}")
    offsets = tuple(None if line.strip() in ("", "-") else line.strip() for line in lines[1:])
    return OffsetEntry(batch_id, int(metadata.get("batchWatermarkMs", 0)),
                       int(metadata.get("batchTimestampMs", 0)), offsets, version, metadata)


def parse_commit(text: Optional[str], path: str = "") -> int:
    """A ``commits/N`` file: the watermark the next batch uses."""
    _, lines = _lines(text, path)
    for line in lines:
        if line.strip().startswith("{"):
            return int(_json(line, path).get("nextBatchWatermarkMs", 0))
    return 0


def file_log_entries(text: Optional[str], path: str = "") -> List[Dict[str, Any]]:
    """The JSON entries of a file source's or file sink's log file."""
    _, lines = _lines(text, path)
    entries = [_json(line, path) for line in lines if line.strip()]
    for entry in entries:
        if not isinstance(entry, dict) or "path" not in entry:
            raise ConfigError(f"{path or 'a file log'}: {short_repr(entry)} is not a file "
                              "entry (no 'path')")
    return entries


def file_offset(raw: Optional[str]) -> Optional[int]:
    """A file source's offset (its log entry) from an ``offsets/N`` line, or
    None when the line is no file source's offset."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if isinstance(value, dict) and set(value) == {"logOffset"} and type(
            value["logOffset"]) is int:  # not a bool
        return int(value["logOffset"])
    return None


def describe_source(raw: Optional[str]) -> str:
    """What kind of source wrote an offset (a guess from its shape, for errors)."""
    if raw is None:
        return "a source with no offset yet"
    try:
        value = json.loads(raw)
    except ValueError:
        return f"a source with offset {short_repr(raw[:60])}"
    if file_offset(raw) is not None:
        return f"a file source (log offset {value['logOffset']})"
    if isinstance(value, int):
        return f"a source with a counter offset ({value}: a rate or socket source?)"
    if isinstance(value, dict) and value and all(
            isinstance(v, dict) and all(str(p).lstrip("-").isdigit() for p in v)
            for v in value.values()):
        return f"a Kafka source (topics {', '.join(sorted(value))})"
    return f"a source with offset {short_repr(raw[:60])}"


def normal_path(path: str) -> str:
    """A file's path in one spelling, whichever log or reader it came from
    (URL-encoded or not, ``file:/x`` or ``file:///x``)."""
    text = unquote(path)
    if text.startswith("file:"):
        text = "file:/" + text[len("file:"):].lstrip("/")
    elif text.startswith("/"):
        text = "file:" + text
    return text


def source_files(logs: Mapping[Tuple[int, bool], Optional[str]], where: str = "sources/0"
                 ) -> Dict[int, List[Tuple[str, int]]]:
    """A file source's log entries, ``{L: [(path, timestamp), ...]}``, from its
    files ``{(L, compact): text}`` (a compact file's entries go to the entries
    their ``batchId`` names)."""
    found: Dict[int, List[Tuple[str, int]]] = {}
    for (number, compact), text in sorted(logs.items()):
        name = f"{where}/{number}{'.compact' if compact else ''}"
        for entry in file_log_entries(text, name):
            owner = int(entry.get("batchId", number)) if compact else number
            files = found.setdefault(owner, [])
            pair = (str(entry["path"]), int(entry.get("timestamp", 0)))
            if pair not in files:
                files.append(pair)
    return found


def plan_batches(offsets: Mapping[int, OffsetEntry], commits: Iterable[int],
                 files: Mapping[int, Sequence[Tuple[str, int]]], *, checkpoint: str = ""
                 ) -> List[PlannedBatch]:
    """The micro-batches of a checkpoint whose one source is a file source:
    ``offsets`` (``parse_offsets`` per batch), the committed batch ids and the
    source's log entries (``source_files``)."""
    where = checkpoint or "the checkpoint"
    if not offsets:
        raise ConfigError(f"{where} has no micro-batch yet (offsets/ is empty)")
    numbers = sorted(offsets)
    if numbers[0] != 0:
        raise ConfigError(
            f"{where}: the offset log starts at batch {numbers[0]}: Spark deleted the older "
            f"batches' logs (it keeps the last {RETAIN_CONF} batches, 100 by default). A "
            f"replay needs every batch from 0; set {RETAIN_CONF} higher on the query to keep "
            f"them")
    missing = sorted(set(range(numbers[-1] + 1)) - set(numbers))
    if missing:
        raise ConfigError(f"{where}: offsets/{missing[0]} is missing (batches "
                          f"{numbers[0]}..{numbers[-1]} expected)")
    require_file_source(offsets, checkpoint=checkpoint)
    committed = set(commits)
    batches: List[PlannedBatch] = []
    previous = -1
    for number in numbers:
        entry = offsets[number]
        current = file_offset(entry.offsets[0])
        assert current is not None  # require_file_source
        if current < previous:
            raise ConfigError(f"{where}: offsets/{number} goes back from log offset "
                              f"{previous} to {current}")
        names: List[str] = []
        for log_id in range(previous + 1, current + 1):
            if log_id not in files:
                raise ConfigError(
                    f"{where}: batch {number} read the file source's log entry {log_id}, "
                    f"which sources/0 no longer holds")
            names.extend(path for path, _ in files[log_id])
        batches.append(PlannedBatch(number, entry.watermark_ms, entry.timestamp_ms,
                                    (previous, current), tuple(names), number in committed))
        previous = current
    return batches


def require_file_source(offsets: Mapping[int, OffsetEntry], *, checkpoint: str = "") -> None:
    """ConfigError unless every batch reads exactly one source, a file source."""
    where = checkpoint or "the checkpoint"
    for number in sorted(offsets):
        entry = offsets[number]
        if len(entry.offsets) != 1:
            raise ConfigError(
                f"{where}: batch {number} reads {len(entry.offsets)} sources; replay "
                f"supports a query with one source, a file source")
        if file_offset(entry.offsets[0]) is None:
            raise ConfigError(
                f"{where}: source 0 is {describe_source(entry.offsets[0])} (offsets/{number}); "
                f"replay rebuilds micro-batches from Spark's file source only (json, csv, "
                f"parquet, orc, text folders): other sources (rate, socket, Kafka...) keep no "
                f"record in the checkpoint of the rows each batch read")


def sink_units(logs: Mapping[Tuple[int, bool], Optional[str]], where: str = "_spark_metadata"
               ) -> List[Tuple[Tuple[int, ...], List[str]]]:
    """The file sink's committed files per batch, ``[((batch ids), [paths])]``,
    from its log files ``{(N, compact): text}``. A batch with its own log file
    is a unit of its own; the files of batches whose logs Spark has folded
    into ``N.compact`` and deleted (Spark keeps the last compaction's
    ``compactInterval`` plain files) cannot be told apart from batch N's own,
    so those batches form one unit with N."""
    units: List[Tuple[Tuple[int, ...], List[str]]] = []
    known: Set[str] = set()
    attributed: Set[int] = set()
    by_number: Dict[int, Dict[bool, Optional[str]]] = {}
    for (number, compact), text in logs.items():
        by_number.setdefault(number, {})[compact] = text
    for number in sorted(by_number):
        texts = by_number[number]
        compact = False not in texts
        name = f"{where}/{number}{'.compact' if compact else ''}"
        entries = file_log_entries(texts[compact], name)
        paths = [str(e["path"]) for e in entries if e.get("action", "add") == "add"]
        if compact:
            fresh = [p for p in paths if normal_path(p) not in known]
            ids = tuple(i for i in range(number + 1) if i not in attributed)
        else:
            fresh, ids = paths, (number,)
        known.update(normal_path(p) for p in fresh)
        attributed.update(ids)
        units.append((ids, fresh))
    return sorted(units)


def batch_label(ids: Sequence[int]) -> str:
    """``(0, 1, 2, 9)`` as ``"0-2, 9"``.

    >>> batch_label((4,)), batch_label((0, 1, 2, 3, 19))
    ('4', '0-3, 19')
    """
    parts: List[str] = []
    run: List[int] = []
    for number in sorted(ids):
        if run and number != run[-1] + 1:
            parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
            run = []
        run.append(number)
    if run:
        parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ", ".join(parts)


def orphaned_entries(offsets: Mapping[int, OffsetEntry], commits: Iterable[int],
                     source_log: Iterable[int]) -> Optional[Tuple[int, int, int]]:
    """``(batch id, first, last)`` when file source 0 logged entries
    ``first..last`` for the next micro-batch but the query stopped before
    writing ``offsets/<batch id>`` (the file source writes its log while
    Spark plans a batch, just before the offset log). Spark's restart would
    then hand those entries *and* the next ones to one micro-batch. None when
    the logs agree (or the query has more than one source)."""
    entries = sorted(set(source_log))
    if not entries:
        return None
    if not offsets:
        return (0, entries[0], entries[-1]) if entries[0] == 0 else None
    last = max(offsets)
    entry = offsets[last]
    if len(entry.offsets) != 1 or last not in set(commits):
        return None  # an uncommitted batch reruns as planned
    current = file_offset(entry.offsets[0])
    if current is None or entries[-1] <= current:
        return None
    return last + 1, current + 1, entries[-1]


def planned_offsets(previous: OffsetEntry, next_watermark_ms: int, log_offset: int,
                    now_ms: int) -> str:
    """The ``offsets/N`` text Spark would have written for the batch after
    ``previous``: its metadata with the watermark from ``commits/N-1`` and the
    batch's time, the file source's offset at ``log_offset``."""
    metadata = dict(previous.metadata)
    metadata["batchWatermarkMs"] = next_watermark_ms
    metadata["batchTimestampMs"] = now_ms
    return "\n".join([previous.version, json.dumps(metadata, separators=(",", ":")),
                      json.dumps({"logOffset": log_offset}, separators=(",", ":"))])


__all__ = ["OffsetEntry", "PlannedBatch", "RETAIN_CONF", "batch_label", "describe_source", "file_log_entries",
           "file_offset", "log_number", "normal_path", "orphaned_entries", "parse_commit",
           "parse_offsets", "plan_batches", "planned_offsets", "require_file_source", "sink_units", "source_files"]
