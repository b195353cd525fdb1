"""Name the damaged file of a checkpoint that Spark cannot read.

Spark fails a restart on a damaged checkpoint with ``CANNOT_LOAD_STATE_STORE``
or a Jackson/charset error from its commit log, naming neither the file nor
the step. sparkwax reads the files itself, through Spark's file system
(``storage_for(spark)``, so any checkpoint URI works), and raises a
``CheckpointError`` that names the step, the file and the two ways out:

- ``read_steps(store, checkpoint)``: ``<checkpoint>/sparkwax-steps.json``,
  refused (never overwritten) when damaged;
- ``check_logs(store, checkpoint)``: the files of the offset and commit logs
  that a restart reads (the newest two offsets, the newest commit) and the
  query's ``metadata``; ``sw.start`` and the state tools check them first;
- ``state_damage(spark, checkpoint, operator)``: after Spark failed to load
  a state store, every partition's files that Spark would read for the
  version it loads (the newest snapshot or RocksDB zip at or below it and
  the deltas or changelogs after it, then the older ways Spark falls back
  to), each decompressed with Spark's own codec (on a classic session) and
  its records checked;
- ``explained(spark, checkpoint, ...)``: around a Spark call, turns its
  failure into the sparkwax error a task raised (``sparkwax._ops.rebuild``) or
  into a ``CheckpointError`` when the checkpoint is damaged.

>>> with explained(spark, "/data/ck"):                           # doctest: +SKIP
...     query.awaitTermination()
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from .format.files import (STEPS_FILE, key_fields_of_schema_file, load_chains, log_message,
                                log_problem, lz4_framing_problem, metadata_problem,
                                records_problem, state_file_name, state_message,
                                step_of_operator, steps_file_message, steps_problem, zip_problem)
from ...errors import CheckpointError, ConfigError, SparkwaxError
from ..._ops.rebuild import rebuild
from .offsets_files import offsets_problem
from .storage import join_path, storage_for
from ..spark_version import coordinator_bug, coordinator_message, java_spark_context, jvm

_STATE_FAILURE = re.compile(r"CANNOT_LOAD_STATE_STORE|CANNOT_READ_(?:DELTA|SNAPSHOT|STREAMING)"
                            r"|Failed to read (?:delta|snapshot) file|RocksDB")
_DECOMPRESS_LIMIT = 256 * 1024 * 1024  # bigger files: their framing only
_CODEC_CONF = "spark.sql.streaming.stateStore.compression.codec"


def read_steps(store: Any, checkpoint: str) -> Optional[Dict[str, Any]]:
    """The steps file's content, or None when there is none; a
    ``CheckpointError`` (a ``ConfigError``) naming it when it is damaged."""
    path = join_path(checkpoint, STEPS_FILE)
    try:
        data = store.read_bytes(path)
    except SparkwaxError:
        raise
    except Exception as error:  # e.g. Hadoop's ChecksumException
        raise CheckpointError(steps_file_message(checkpoint, path, f"cannot be read ({_java(error)})"),
                              checkpoint=checkpoint, path=path) from error
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = "\x00"  # reported as not JSON below
    problem = steps_problem(text) if text != "\x00" else "is garbled: not UTF-8 text"
    if problem:
        raise CheckpointError(steps_file_message(checkpoint, path, problem),
                              checkpoint=checkpoint, path=path)
    saved: Dict[str, Any] = json.loads(text)
    return saved


def check_logs(store: Any, checkpoint: str, steps: Sequence[str] = ()) -> None:
    """A ``CheckpointError`` naming the first damaged log file a restart
    reads: the newest two files of ``offsets/``, the newest of ``commits/``,
    and ``metadata``; then what in the two offsets files parses but cannot
    be run from (``sparkwax.engine.checkpoints.format.offsets``)."""
    newest_offsets = []
    for log, newest in (("offsets", 2), ("commits", 1)):
        entries = sorted((e for e in store.list(join_path(checkpoint, log)) if e.name.isdigit()),
                         key=lambda e: -int(e.name))[:newest]
        for entry in entries:
            _check_one(store, checkpoint, entry.path, log_problem, steps)
        if log == "offsets":
            newest_offsets = entries
    _check_one(store, checkpoint, join_path(checkpoint, "metadata"), metadata_problem, steps)
    _check_offsets(store, checkpoint, newest_offsets, steps)


def _check_offsets(store: Any, checkpoint: str, entries: Sequence[Any],
                   steps: Sequence[str]) -> None:
    """The newest offsets files (newest first), checked past their JSON."""
    try:
        saved = read_steps(store, checkpoint)
    except SparkwaxError:
        saved = None  # the restart refuses a damaged steps file by itself
    confs = (saved or {}).get("confs")
    found = offsets_problem(store, checkpoint, entries, operators(store, checkpoint),
                            confs if isinstance(confs, dict) else None)
    if found is not None:
        path, problem = found
        raise CheckpointError(log_message(checkpoint, path, problem, steps),
                              checkpoint=checkpoint, path=path,
                              step_id=steps[0] if len(steps) == 1 else None)


def _check_one(store: Any, checkpoint: str, path: str,
               judge: Callable[[Optional[bytes]], Optional[str]], steps: Any) -> None:
    try:
        problem = judge(store.read_bytes(path))
        cause = None
    except SparkwaxError:
        raise
    except Exception as error:
        problem, cause = f"cannot be read ({_java(error)})", error
    if problem:
        raise CheckpointError(log_message(checkpoint, path, problem, steps),
                              checkpoint=checkpoint, path=path,
                              step_id=steps[0] if len(steps) == 1 else None) from cause


def last_commit(store: Any, checkpoint: str) -> Optional[int]:
    numbers = [int(e.name) for e in store.list(join_path(checkpoint, "commits"))
               if e.name.isdigit()]
    return max(numbers) if numbers else None


def operators(store: Any, checkpoint: str) -> List[int]:
    return sorted(int(e.name) for e in store.list(join_path(checkpoint, "state"))
                  if e.name.isdigit())


def state_damage(spark: Any, checkpoint: str, operator: int, version: Optional[int] = None
                 ) -> Tuple[List[str], Dict[str, str]]:
    """The files of ``state/<operator>`` that keep Spark from loading
    ``version`` (default: the one the next micro-batch and the state reader
    load, the last committed batch + 1), with what is wrong with each."""
    store = storage_for(spark)
    if version is None:
        committed = last_commit(store, checkpoint)
        if committed is None:
            return [], {}
        version = committed + 1
    checker = _FileChecker(spark, store, checkpoint)
    folder = join_path(checkpoint, f"state/{operator}")
    damaged: List[str] = []
    for partition in _partitions(store, folder):
        files: Dict[Tuple[int, str], List[str]] = {}
        for entry in store.list(partition):
            parsed = state_file_name(entry.name)
            if parsed is not None and parsed[0] <= version:
                files.setdefault(parsed, []).append(entry.path)
        bad: List[str] = []
        loadable = False
        for chain in load_chains({k: v for k, v in files.items()}, version):
            usable = True
            for part in chain:
                paths = files.get(part)
                if not paths:
                    usable = False
                    break
                problems = [checker(path, partition) for path in paths]
                if all(problems):
                    bad.extend(p for p in paths if p not in bad)
                    usable = False
                    break
            if usable:
                loadable = True
                break
        if not loadable:
            if not bad:
                checker.problems[partition] = (f"has no complete set of files for version "
                                               f"{version} (deltas or a snapshot are missing)")
                bad = [partition]
            damaged.extend(p for p in bad if p not in damaged)
    return damaged, checker.problems


def _partitions(store: Any, folder: str) -> List[str]:
    """The partition folders of an operator: from its ``_metadata`` (which a
    Spark Connect listing cannot see past), else its numbered folders."""
    numbered = [e.path for e in store.list(folder) if e.name.isdigit()]
    if numbered:
        return sorted(numbered, key=lambda p: int(p.rstrip("/").rsplit("/", 1)[-1]))
    try:
        text = (store.read_text(join_path(folder, "_metadata/metadata")) or "").split("\n", 1)
        count = int(json.loads(text[1].strip().splitlines()[0])["stateStoreInfo"][0]
                    ["numPartitions"])
    except Exception:
        return []
    return [join_path(folder, str(number)) for number in range(count)]


class _FileChecker:
    """What is wrong with one state file (cached), or None."""

    def __init__(self, spark: Any, store: Any, checkpoint: str):
        self.spark, self.store, self.checkpoint = spark, store, checkpoint
        self.problems: Dict[str, str] = {}
        self._sound: Set[str] = set()
        self._decompress = _decompressor(spark, _codec(store, checkpoint))
        self._ssts: Dict[str, Dict[str, int]] = {}

    def __call__(self, path: str, partition: str) -> Optional[str]:
        if path in self._sound:
            return None
        if path not in self.problems:
            problem = self._check(path, partition)
            if problem is None:
                self._sound.add(path)
                return None
            self.problems[path] = problem
        return self.problems[path]

    def _check(self, path: str, partition: str) -> Optional[str]:
        kind = (state_file_name(path.rstrip("/").rsplit("/", 1)[-1]) or (0, ""))[1]
        try:
            data = self.store.read_bytes(path)
        except Exception as error:  # Hadoop's ChecksumException, a permission...
            return f"cannot be read ({_java(error)})"
        if data is None:
            return "is missing"
        if not data:
            return "is empty"
        if kind == "zip":
            problem, listed = zip_problem(data)
            return problem or self._missing_sst(partition, listed)
        if data.startswith(b"LZ4Block"):
            problem = lz4_framing_problem(data)
            if problem:
                return problem
        if self._decompress is None or len(data) > _DECOMPRESS_LIMIT:
            return None
        try:
            plain = self._decompress(data)
        except Exception as error:
            return f"cannot be decompressed ({_java(error)})"
        return records_problem(plain, kind)

    def _missing_sst(self, partition: str, listed: List[Tuple[str, int]]) -> Optional[str]:
        if partition not in self._ssts:
            self._ssts[partition] = {e.name: e.size for e in
                                     self.store.list(join_path(partition, "SSTs"))}
        present = self._ssts[partition]
        for name, size in listed:
            if name not in present:
                return f"lists SSTs/{name}, which is missing"
            if size >= 0 and present[name] >= 0 and present[name] != size:
                return (f"lists SSTs/{name} of {size} bytes, which has {present[name]} "
                        "(cut short?)")
        return None


def _codec(store: Any, checkpoint: str) -> str:
    """The state store codec the checkpoint was written with (its offset log)."""
    try:
        entries = sorted((e for e in store.list(join_path(checkpoint, "offsets"))
                          if e.name.isdigit()), key=lambda e: -int(e.name))
        for entry in entries[:1]:
            meta = json.loads((store.read_text(entry.path) or "").split("\n")[1])
            return str(meta.get("conf", {}).get(_CODEC_CONF, "lz4"))
    except Exception:
        pass
    return "lz4"


def _decompressor(spark: Any, codec: str) -> Optional[Callable[[bytes], bytes]]:
    """Spark's own codec through the JVM (a classic session), else None."""
    try:
        java = jvm(spark)
        conf = java_spark_context(spark).conf()
        created = java.org.apache.spark.io.CompressionCodec.createCodec(conf, codec)
    except Exception:  # Spark Connect: no JVM here
        return None

    def decompress(data: bytes) -> bytes:
        stream = created.compressedInputStream(java.java.io.ByteArrayInputStream(bytearray(data)))
        try:
            return bytes(java.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()
    return decompress


def _java(error: BaseException) -> str:
    """The Java exception line of a py4j error (``java.io.IOException: ...``)."""
    text = str(error)
    found = re.search(r"(?m)^(?::\s*)?((?:[\w$]+\.)+[\w$]*(?:Exception|Error)\b[^\n]*)", text)
    line = found.group(1) if found else text.strip().splitlines()[0] if text.strip() else repr(error)
    return line[:300]


def spark_reason(error: BaseException) -> str:
    """The innermost cause Spark gives for ``error`` (a Java exception's
    chain on a classic session), else the first line of its message."""
    origin = getattr(error, "_origin", None) or getattr(error, "java_exception", None)
    deepest = None
    try:
        seen = 0
        while origin is not None and seen < 20:
            deepest, origin, seen = origin, origin.getCause(), seen + 1
        if deepest is not None:
            return str(deepest.toString())[:300]
    except Exception:
        pass
    text = str(error)
    found = re.search(r"\[CANNOT_LOAD_STATE_STORE[^\]]*\][^\n]*?(?= SQLSTATE|\n|$)", text)
    return (found.group(0) if found else text.strip().splitlines()[0] if text.strip()
            else repr(error))[:300]


def explain_failure(spark: Any, checkpoint: str, error: BaseException, *,
                    operator: Optional[int] = None,
                    steps: Optional[Dict[str, Dict[str, Any]]] = None
                    ) -> Optional[CheckpointError]:
    """A ``CheckpointError`` when ``error`` (Spark's) comes from a damaged
    checkpoint, else None. Never raises: a failed diagnosis leaves Spark's error."""
    try:
        store = storage_for(spark)
        if steps is None:
            try:
                steps = (read_steps(store, checkpoint) or {}).get("steps", {})
            except CheckpointError:
                steps = {}
        try:
            check_logs(store, checkpoint, sorted(steps))
        except CheckpointError as found:
            return found
        text = str(error)
        if not _STATE_FAILURE.search(text):
            return None
        numbers = [operator] if operator is not None else operators(store, checkpoint)
        for number in numbers:
            damaged, problems = state_damage(spark, checkpoint, number)
            if damaged:
                return _state_error(store, checkpoint, steps, number, damaged, problems, error)
        if "CANNOT_LOAD_STATE_STORE" in text and numbers:  # the step and the ways out, at least
            return _state_error(store, checkpoint, steps, numbers[0], [], {}, error)
        return None
    except Exception:
        return None


def _state_error(store: Any, checkpoint: str, steps: Any, operator: int, damaged: List[str],
                 problems: Dict[str, str], error: BaseException) -> CheckpointError:
    step = step_of_operator(steps, key_fields_of_schema_file(_schema_bytes(store, checkpoint,
                                                                           operator)))
    return CheckpointError(state_message(checkpoint, step, operator, damaged, problems,
                                         spark_reason(error)),
                           checkpoint=checkpoint, path=damaged[0] if damaged else None,
                           step_id=step, files=damaged)


def _schema_bytes(store: Any, checkpoint: str, operator: int) -> Optional[bytes]:
    try:
        schema: Optional[bytes] = store.read_bytes(
            join_path(checkpoint, f"state/{operator}/0/_metadata/schema"))
        return schema
    except Exception:
        return None


@contextmanager
def explained(spark: Any, checkpoint: str, *, operator: Optional[int] = None,
              steps: Optional[Dict[str, Dict[str, Any]]] = None) -> Iterator[None]:
    """Around a Spark call on ``checkpoint``: a sparkwax error raised in a
    task comes back as itself, a damaged checkpoint as a ``CheckpointError``,
    Spark's exception as their ``__cause__``."""
    try:
        yield
    except SparkwaxError:
        raise
    except Exception as error:
        if coordinator_bug(error):  # a Spark 4.2 bug, not the checkpoint's
            raise ConfigError(coordinator_message(spark, f"reading {checkpoint}")) from error
        rebuilt: Optional[SparkwaxError] = rebuild(error)
        if rebuilt is None:
            rebuilt = explain_failure(spark, checkpoint, error, operator=operator, steps=steps)
        if rebuilt is None:
            raise
        raise rebuilt from error


__all__ = ["check_logs", "explain_failure", "explained", "last_commit", "operators",
           "read_steps", "spark_reason", "state_damage"]
