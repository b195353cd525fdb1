"""What a damaged checkpoint looks like: pure checks of the files that Spark
and sparkwax keep in a streaming checkpoint, and the messages that name them.

Spark reports a damaged checkpoint without naming the file
(``CANNOT_LOAD_STATE_STORE``, a Jackson or charset error from the commit
log); sparkwax reads the files itself, through Spark's file system (see
``sparkwax.engine.checkpoints.diagnose``), and these functions say what is wrong with
their bytes. Nothing here does I/O.

>>> log_problem(b'v1\\n{"nextBatchWatermarkMs":0}')
>>> log_problem(b'v1\\n{"nextBatchWat')
'is cut short or garbled: line 2 is not valid JSON (Unterminated string starting at: line 1 column 2 (char 1))'
>>> state_file_name("12.delta"), state_file_name("7_0c1f.changelog"), state_file_name("_metadata")
((12, 'delta'), (7, 'changelog'), None)
>>> print(ways_out("/data/ck"))
Two ways out:
  - restore the folder /data/ck from a copy (a backup or a file system snapshot taken while the query was stopped), then start the query again;
  - or start over: `sparkwax state clear /data/ck` removes the checkpoint (offsets, commits and all state), and the query reads its source from the beginning.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

STEPS_FILE = "sparkwax-steps.json"
FOLLOWING_STATE = "sparkwax"  # the ValueState of a step after another (transformWithState)
LOGS = ("offsets", "commits")
SNAPSHOT_KINDS = ("snapshot", "zip")   # a whole version (HDFS-backed, RocksDB)
CHANGE_KINDS = ("delta", "changelog")  # the changes of one version
_BUCKETS = re.compile(r"\bbuckets=(\d+)")  # in a step's recorded state layout
_STATE_NAME = re.compile(r"^(\d+)(?:_[0-9A-Za-z-]+)?\.(delta|snapshot|changelog|zip)$")
_LZ4_MAGIC = b"LZ4Block"
_LZ4_HEADER = len(_LZ4_MAGIC) + 1 + 4 + 4 + 4


def recorded_buckets(state: Any) -> Optional[int]:
    """The bucket count in a step's recorded state layout (``"state"`` in
    the steps file), None for a per-key step.

    >>> recorded_buckets("packed/1 buckets=20 ttl"), recorded_buckets("per_key/1")
    (20, None)
    """
    found = _BUCKETS.search(str(state or ""))
    return int(found.group(1)) if found else None


def with_buckets(state: str, buckets: int) -> str:
    """A recorded state layout with another bucket count.

    >>> with_buckets("packed/1 buckets=8 two-clock", 20)
    'packed/1 buckets=20 two-clock'
    """
    return _BUCKETS.sub(f"buckets={buckets}", state)


def ways_out(checkpoint: str) -> str:
    """The two ways out of a damaged checkpoint, as a message ends."""
    return ("Two ways out:\n"
            f"  - restore the folder {checkpoint} from a copy (a backup or a file system "
            "snapshot taken while the query was stopped), then start the query again;\n"
            f"  - or start over: `sparkwax state clear {checkpoint}` removes the checkpoint "
            "(offsets, commits and all state), and the query reads its source from the "
            "beginning.")


def short_path(checkpoint: str, path: str) -> str:
    """``path`` relative to the checkpoint when it is inside it.

    >>> short_path("/data/ck", "file:/data/ck/state/0/1/4.delta")
    'state/0/1/4.delta'
    """
    plain = checkpoint.rstrip("/").split(":", 1)[-1].lstrip("/")
    inner = path.split(":", 1)[-1].lstrip("/")
    if plain and inner.startswith(plain + "/"):
        return inner[len(plain) + 1:]
    return path


# -- sparkwax-steps.json ---------------------------------------------------------------------

def steps_problem(text: Optional[str]) -> Optional[str]:
    """What is wrong with the text of a steps file, or None if it is sound.

    >>> steps_problem('{"steps": {}, "confs": {}}') is None
    True
    >>> steps_problem("")
    'is empty'
    >>> steps_problem('{"steps": [1]}')
    "has the wrong shape: 'steps' is not an object of step descriptions"
    """
    if text is None:
        return "is missing"
    if not text.strip():
        return "is empty"
    try:
        saved = json.loads(text)
    except ValueError as error:
        return f"is not JSON ({error}): cut short or garbled"
    if not isinstance(saved, dict):
        return f"has the wrong shape: a JSON {type(saved).__name__}, not an object"
    steps = saved.get("steps")
    if not isinstance(steps, dict) or not all(
            isinstance(desc, dict) and desc.get("step_id") == name for name, desc in steps.items()):
        return "has the wrong shape: 'steps' is not an object of step descriptions"
    if not isinstance(saved.get("confs", {}), dict):
        return "has the wrong shape: 'confs' is not an object"
    return None


def steps_file_message(checkpoint: str, path: str, problem: str) -> str:
    """The message of a damaged steps file: what it is for and what to do."""
    return (f"{path} {problem}. sw.start keeps there the settings this checkpoint was first "
            "started with, to refuse a restart that changes them, so it does not overwrite "
            "it. Restore the file (or the whole folder) from a copy; or, if you are sure the "
            "query's key, output schema, time mode and state store are unchanged, delete the "
            "file and sw.start records the current settings again; or start over with "
            f"`sparkwax state clear {checkpoint}`.")


# -- offsets/N, commits/N, metadata ------------------------------------------------------------

def log_problem(data: Optional[bytes]) -> Optional[str]:
    """What is wrong with one file of Spark's offset or commit log (``v1``
    then JSON lines; a source's offset may also be a bare number), or None."""
    if data is None:
        return "is missing"
    text, problem = _text_of(data)
    if problem:
        return problem
    lines = text.split("\n")
    if not re.fullmatch(r"v\d+", lines[0].strip()):
        return f"is garbled: its first line is {lines[0][:20]!r}, not a version such as 'v1'"
    entries = [(number, line) for number, line in enumerate(lines[1:], 2) if line.strip()]
    if not entries:
        return "is cut short: nothing after its version line"
    return _json_lines_problem(entries)


def metadata_problem(data: Optional[bytes]) -> Optional[str]:
    """What is wrong with the checkpoint's ``metadata`` file (the query id), or None."""
    if data is None:
        return None  # a checkpoint without metadata is Spark's business
    text, problem = _text_of(data)
    if problem:
        return problem
    return _json_lines_problem([(number, line) for number, line in enumerate(text.split("\n"), 1)
                                if line.strip()])


def _text_of(data: bytes) -> Tuple[str, Optional[str]]:
    """A log file's text, or what makes it unreadable ("is empty", "is garbled")."""
    if not data.strip():
        return "", "is empty"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as error:
        return "", f"is garbled: not UTF-8 text (byte {error.start})"


def _json_lines_problem(entries: Iterable[Tuple[int, str]]) -> Optional[str]:
    for number, line in entries:
        stripped = line.strip()
        if stripped in ("-",) or re.fullmatch(r"-?\d+", stripped):
            continue  # a source without an offset, a bare numeric offset
        try:
            json.loads(stripped)
        except ValueError as error:
            return f"is cut short or garbled: line {number} is not valid JSON ({error})"
    return None


def log_message(checkpoint: str, path: str, problem: str, steps: Sequence[str]) -> str:
    which = {"offsets": "offset log", "commits": "commit log"}.get(
        short_path(checkpoint, path).split("/", 1)[0], "metadata")
    return (f"{_steps_phrase(steps)}checkpoint {checkpoint} is damaged: its {which} file "
            f"{short_path(checkpoint, path)} {problem}, so Spark cannot tell which "
            f"micro-batches ran.\n{ways_out(checkpoint)}")


# -- state/<operator>/<partition>/<version>.<kind> -----------------------------------------------

def state_file_name(name: str) -> Optional[Tuple[int, str]]:
    """``(version, kind)`` of a state store file name, else None."""
    found = _STATE_NAME.match(name)
    return (int(found.group(1)), found.group(2)) if found else None


def load_chains(files: Dict[Tuple[int, str], Any], version: int) -> List[List[Tuple[int, str]]]:
    """The ways Spark can load ``version`` of one partition from its files
    (``{(version, kind): ...}``), best first: the newest whole version at or
    below it (a snapshot or a RocksDB zip) and the changes after it, then
    older ones, then every change from the start. A chain may name files that
    do not exist (then it cannot be used)."""
    rocksdb = any(kind in ("zip", "changelog") for _, kind in files)
    whole, changes = ("zip", "changelog") if rocksdb else ("snapshot", "delta")
    chains = []
    for base in sorted((v for v, kind in files if kind == whole and v <= version), reverse=True):
        chains.append([(base, whole)] + [(v, changes) for v in range(base + 1, version + 1)])
    chains.append([(v, changes) for v in range(1, version + 1)])
    return chains


def lz4_framing_problem(data: bytes) -> Optional[str]:
    """Spark's LZ4 stream (lz4-java's block format) checked by its framing
    only: block headers, lengths and the end mark (a cut file fails here; a
    flipped byte inside a block needs the codec, see ``records_problem``)."""
    position = 0
    while True:
        if position == len(data):
            return "is cut short: its compressed stream has no end mark"
        if len(data) - position < _LZ4_HEADER:
            return f"is cut short inside a block header at byte {position}"
        if data[position:position + len(_LZ4_MAGIC)] != _LZ4_MAGIC:
            return f"is garbled: no LZ4 block starts at byte {position}"
        token = data[position + 8]
        compressed = int.from_bytes(data[position + 9:position + 13], "little")
        original = int.from_bytes(data[position + 13:position + 17], "little")
        position += _LZ4_HEADER
        if token & 0xF0 not in (0x10, 0x20) or (token & 0xF0 == 0x10 and compressed != original):
            return f"is garbled: a bad LZ4 block header before byte {position}"
        if compressed == 0 and original == 0:
            return None if position == len(data) else "has bytes after its end mark"
        if len(data) - position < compressed:
            return f"is cut short inside a block at byte {position}"
        position += compressed


def records_problem(data: bytes, kind: str) -> Optional[str]:
    """What is wrong with the decompressed records of a state file, or None:
    ``[int key size][key][int value size or -1][value]``... then ``-1``
    (HDFS-backed deltas and snapshots, RocksDB's changelog v1)."""
    position, size = 0, len(data)

    def next_int() -> Optional[int]:
        nonlocal position
        if size - position < 4:
            return None
        value = int.from_bytes(data[position:position + 4], "big", signed=True)
        position += 4
        return value

    while True:
        key = next_int()
        if key is None:
            return "is cut short: its records end without the end marker"
        if key == -1:
            break
        if key < 0 or key > size - position:
            return _unknown_layout(data, kind, f"a record claims a {key}-byte key at byte "
                                               f"{position - 4}")
        position += key
        value = next_int()
        if value is None:
            return "is cut short: its last record has no value"
        if value == -1:
            continue  # a removed key
        if value < 0 or value > size - position:
            return _unknown_layout(data, kind, f"a record claims a {value}-byte value at byte "
                                               f"{position - 4}")
        position += value
    if position != size:
        return _unknown_layout(data, kind, "bytes follow its end marker")
    return None


def _unknown_layout(data: bytes, kind: str, what: str) -> Optional[str]:
    # RocksDB changelogs of newer formats lay records out differently; their
    # end marker is the same, so only its absence says they are damaged.
    if kind == "changelog" and data.endswith(b"\xff\xff\xff\xff"):
        return None
    return f"is garbled: {what}"


def zip_problem(data: bytes) -> Tuple[Optional[str], List[Tuple[str, int]]]:
    """A RocksDB snapshot zip: (what is wrong, or None; the SST files its
    ``metadata`` lists, as (file name in SSTs/, size in bytes))."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        broken = archive.testzip()
    except (zipfile.BadZipFile, EOFError, ValueError, OSError) as error:
        return f"is not a readable zip ({error})", []
    except Exception as error:  # zlib.error and the like from a garbled member
        return f"is not a readable zip ({type(error).__name__}: {error})", []
    if broken is not None:
        return f"is garbled: its member {broken!r} fails its CRC check", []
    if "metadata" not in archive.namelist():
        return "has no 'metadata' member", []
    problem = log_problem(archive.read("metadata"))
    if problem:
        return f"has a 'metadata' member that {problem}", []
    text = archive.read("metadata").decode("utf-8").split("\n", 1)[1]
    listed = json.loads(text.strip().splitlines()[0]).get("sstFiles", [])
    return None, [(entry["dfsSstFileName"], int(entry.get("sizeBytes", -1)))
                  for entry in listed if isinstance(entry, dict) and "dfsSstFileName" in entry]


def state_message(checkpoint: str, step: Optional[str], operator: int, damaged: Sequence[str],
                  problems: Dict[str, str], spark_reason: str) -> str:
    """The message of a state store Spark could not load."""
    whose = f"step {step!r}" if step else f"stateful operator {operator}"
    if damaged:
        first = damaged[0]
        what = (f"{short_path(checkpoint, first)} {problems[first]}")
        more = [f"{short_path(checkpoint, path)} {problems[path]}" for path in damaged[1:]]
        named = what + "".join(f"; also {line}" for line in more)
        return (f"{whose}: Spark cannot load its state from checkpoint {checkpoint}: "
                f"{named} (Spark's last error: {spark_reason}).\n{ways_out(checkpoint)}")
    return (f"{whose}: Spark cannot load its state from checkpoint {checkpoint} (Spark's last "
            f"error: {spark_reason}). sparkwax found no damaged file among those Spark reads "
            f"under state/{operator}/, so the cause may be elsewhere: another query running on "
            "the same checkpoint, memory, permissions. If the checkpoint is damaged after all: "
            f"{ways_out(checkpoint)[0].lower()}{ways_out(checkpoint)[1:]}")


def _steps_phrase(steps: Sequence[str]) -> str:
    if not steps:
        return ""
    return (f"step {steps[0]!r}: " if len(steps) == 1
            else "steps " + ", ".join(repr(s) for s in steps) + ": ")


def key_fields_of_schema_file(data: Optional[bytes]) -> Optional[List[str]]:
    """The key column names recorded in a state partition's ``_metadata/schema``
    (Spark writes the key schema's JSON first), or None."""
    if not data:
        return None
    text = data.decode("utf-8", errors="replace")
    start = text.find('{"type":"struct"')
    if start < 0:
        return None
    try:
        schema, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return None
    return [field.get("name") for field in schema.get("fields", [])]


def step_of_operator(steps: Dict[str, Dict[str, Any]], key_fields: Optional[List[str]]
                     ) -> Optional[str]:
    """The sparkwax step an operator's state belongs to: the only step, or the
    only one whose key columns match the state's key schema (packed steps
    key their state by a bucket column)."""
    if len(steps) == 1:
        return next(iter(steps))
    if key_fields is None:
        return None
    matches = [name for name, desc in steps.items() if _state_key_of(desc) == key_fields]
    return matches[0] if len(matches) == 1 else None


def _state_key_of(desc: Dict[str, Any]) -> List[str]:
    """The key columns of a step's state rows: its key's names (``"a string,
    b struct<x:int,y:int>"``), or the bucket column of a packed step."""
    if str(desc.get("state", "")).startswith("packed"):
        return ["__sw_bucket"]
    names, depth, start, text = [], 0, 0, str(desc.get("key", "")) + ","
    for position, char in enumerate(text):
        depth += {"<": 1, "(": 1, ">": -1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            names.append(text[start:position].strip().split(" ")[0])
            start = position + 1
    return [name for name in names if name]


__all__ = ["CHANGE_KINDS", "FOLLOWING_STATE", "LOGS", "SNAPSHOT_KINDS", "STEPS_FILE", "key_fields_of_schema_file",
           "load_chains", "log_message", "log_problem", "lz4_framing_problem",
           "metadata_problem", "records_problem", "recorded_buckets", "short_path",
           "state_file_name", "state_message", "step_of_operator", "steps_file_message",
           "steps_problem", "ways_out", "with_buckets", "zip_problem"]
