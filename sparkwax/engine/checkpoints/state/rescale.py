"""``rescale``: a stopped query's state in another number of state
partitions (and a packed step's keys in another number of buckets), so that
a checkpoint started on a laptop runs on a cluster's cores.

>>> rescale("/data/ck", partitions=48)                              # doctest: +SKIP
RescaleResult(checkpoint='/data/ck', batch=7, partitions=(2, 48), buckets=(8, 192))

How (docs/deploy.md, "Growing"): ``reshard`` writes the state of the last
committed batch N again, with a one-batch streaming query, in the new
layout; its files are renamed into the checkpoint as state version N+2
(``N+2.snapshot`` for the HDFS-backed store, ``N+2.zip`` with its SST files
for RocksDB), beside the old partitions' files, which stay for time travel
(a rescale to fewer partitions also gives each partition it leaves an empty
state at N+2: Spark 4.0 and 4.1's statestore reader reads every partition
folder it finds, not the batch's partition count);
then batch N+1 is written to the offset and commit logs as a batch that
reads nothing, with the new partition count in its confs, which Spark
applies at the restart (``batch_logs``). A batch the query had planned but
not run moves to N+2. The file sink's log gets an entry for N+1; a
``foreach_batch`` sink never sees N+1. sparkwax's restart checks
(``sparkwax-steps.json``) take the new counts.

Every stage is recorded in a journal (``<checkpoint>/sparkwax-rescale/``,
one new file per stage, never rewritten) before it runs, so a rescale cut
short (a kill -9) is finished or undone by the next sparkwax call on the
checkpoint (``sw.start``, another rescale, ``state rescale --finish``):
``building`` (nothing in the checkpoint changed yet) and ``placing`` (state
files moved in, not yet logged: moved back) leave the checkpoint as it was;
``logging`` (the state is in place) writes the logs again: rescaled.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time as wall_clock
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..format.metadata_logs import parse_commit
from ..format.files import (STEPS_FILE, recorded_buckets, state_file_name,
                                        with_buckets)
from ....errors import CheckpointError, RescaleError
from ..format.paths import join_path
from ..snapshots import active_session, newest_log_ms, require_checkpoint
from ..diagnose import last_commit, operators, read_steps
from ..liveness import Lease, refuse_if_live
from ...deploy.session_confs import is_connect
from ..storage import storage_for
from . import batch_logs
from .asked import operator_ids, require_step_state
from .derive import state_rows_of, stored_bucket_count, stored_key_ddl
from .reshard import StateLayout, state_rows, write_state

FOLDER = "sparkwax-rescale"
KILL_AT_ENV = "SPARKWAX_RESCALE_KILL_AT"
_ROCKSDB = "RocksDBStateStoreProvider"
_CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


@dataclass(frozen=True)
class RescaleResult:
    """What ``rescale`` did: the rescale ``batch`` id (it reads nothing),
    ``partitions`` and ``buckets`` as ``(before, after)`` (buckets None for a
    per-key step)."""

    checkpoint: str
    batch: int
    partitions: Tuple[int, int]
    buckets: Optional[Tuple[int, int]]
    derived: Optional[str] = None  # a packed step's counts found in its state, not recorded

    def __str__(self) -> str:
        text = (f"rescaled {self.checkpoint}: state partitions {self.partitions[0]} -> "
                f"{self.partitions[1]}")
        if self.buckets:
            text += f", buckets {self.buckets[0]} -> {self.buckets[1]}"
        text += (f" (batch {self.batch} holds the rescaled state; a restart runs on "
                 f"{self.partitions[1]} state partitions, the checkpoint's, whatever "
                 "spark.sql.shuffle.partitions says)")
        return f"{text}\n{self.derived}" if self.derived else text


def rescale(checkpoint: str, partitions: int, *, buckets: Optional[int] = None,
            sink: Optional[str] = None, spark: Any = None, idle_seconds: float = 10.0
            ) -> RescaleResult:
    """Rescale the stopped query on ``checkpoint`` to ``partitions`` state
    partitions; a packed step's keys to ``buckets`` buckets (default: 4 x
    ``partitions`` when the step used the default, else its own count).
    ``sink``: the file sink's folder (default: the one ``sw.start``
    recorded). Refuses while a query runs on it (a query of this session, or
    one holding the checkpoint's liveness record: ``sw.start``'s, in any
    process) or seems to (a log written again while it waits until the newest
    log is ``idle_seconds`` old; 0 turns that wait off). Holds the liveness
    record itself while it works. ``spark`` defaults to the active session."""
    spark = active_session(spark, "rescale")
    if is_connect(spark):
        raise RescaleError("rescale needs a classic SparkSession (it moves Spark's state "
                           "files through the JVM); run `sparkwax state rescale` where a "
                           "classic session can reach the checkpoint")
    if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
        raise RescaleError(f"partitions must be a positive int, got {partitions!r}")
    store = storage_for(spark)
    require_checkpoint(store, checkpoint)
    _refuse_running(spark, checkpoint, idle_seconds)
    lease = Lease(spark, checkpoint, "rescale").acquire().keep_while(lambda: True)
    try:
        finish_interrupted(spark, checkpoint, checked=True)
        return _rescale(spark, store, checkpoint, partitions, buckets, sink)
    finally:
        lease.release()


def _rescale(spark: Any, store: Any, checkpoint: str, partitions: int, buckets: Optional[int],
             sink: Optional[str]) -> RescaleResult:
    """``rescale``'s work, under its lease."""
    if store.exists(join_path(checkpoint, "state")):  # not a plain Spark operator's state
        require_step_state(store, checkpoint, 0)
        several = operator_ids(store, checkpoint)
        if len(several) > 1:
            raise RescaleError(
                f"{checkpoint}: its query runs {len(several)} stateful steps (operators "
                f"{', '.join(map(str, several))}); rescale moves the state of a one-step query "
                f"only. This checkpoint keeps its state partitions, and runs on a cluster "
                f"of any size with them")
    plan = _plan(spark, store, checkpoint, partitions, buckets, sink)
    layout = StateLayout.parse(store.read_bytes(_schema_file(checkpoint)) or b"")
    if layout.packed and (plan["buckets"][1] is None or not plan["key_ddl"]):
        raise RescaleError(f"{checkpoint}: a packed step's buckets and key columns are not "
                           f"recorded ({STEPS_FILE}, written by sw.start): cannot move its keys")
    _record(store, checkpoint, 1, {**plan, "phase": "building"})
    try:
        _build_and_place(spark, store, checkpoint, plan, layout)
    except BaseException:  # a failure (not a kill): undone at once, then raised
        finish_interrupted(spark, checkpoint, checked=True)
        raise
    _record(store, checkpoint, 3, {**plan, "phase": "logging"})
    _write_logs(spark, store, checkpoint, plan)
    store.delete(join_path(checkpoint, FOLDER))
    return _result(checkpoint, plan)


def _build_and_place(spark: Any, store: Any, checkpoint: str, plan: Dict[str, Any],
                     layout: StateLayout) -> None:
    """The new state written beside the checkpoint, then moved into it."""
    work = join_path(join_path(checkpoint, FOLDER), "work")
    rows = state_rows(spark, checkpoint, layout, plan["committed"], plan["buckets"][1],
                      plan["key_ddl"])
    confs = dict(plan["confs"])
    if _ROCKSDB in confs.get("spark.sql.streaming.stateStore.providerClass", ""):
        confs[_CHANGELOG_CONF] = "false"  # a snapshot (zip) per partition, not a changelog
    built = write_state(spark, rows, layout, work, partitions=plan["partitions"][1],
                        confs=confs)
    before, after = plan["partitions"]
    retired = None
    if after < before:  # the partitions left behind hold no state from N+2 on (Spark 4.0
        # and 4.1's statestore reader reads every state/0/<n> folder it finds)
        retired = write_state(spark, rows.limit(0), layout, join_path(work, "retired"),
                              partitions=before, confs=confs)
    _crash_point("building")
    moves = _moves(store, built, checkpoint, plan["committed"] + 2)
    if retired is not None:
        moves += _moves(store, retired, checkpoint, plan["committed"] + 2,
                        only=range(after, before))
    _record(store, checkpoint, 2, {**plan, "phase": "placing", "moves": moves})
    for source, target in moves:
        if store.exists(target):  # left by batch N+1 run but never committed: not state
            store.delete(target)
        store.rename(source, target)
        _crash_point("placing")


def finish_interrupted(spark: Any, checkpoint: str, *, checked: bool = False) -> Optional[str]:
    """Finish or undo a rescale of ``checkpoint`` that was cut short; what
    was done (``"rescaled: ..."`` or ``"as it was: ..."``), or None when none
    was in progress. A rescale still running (its liveness record renewed)
    is a ``RescaleError``, not cut short; ``checked``: the caller holds the
    checkpoint already (``sw.start``, ``rescale``)."""
    store = storage_for(spark)
    folder = join_path(checkpoint, FOLDER)
    if not store.exists(folder):
        return None
    if not checked:
        refuse_if_live(spark, checkpoint, "finish the interrupted rescale of", RescaleError)
    journal = _newest_record(store, folder)
    if journal is None:
        store.delete(folder)  # stopped before its first record: nothing was changed
        return None
    if journal["phase"] == "logging":
        _write_logs(spark, store, checkpoint, journal)
        store.delete(folder)
        return f"rescaled: {_result(checkpoint, journal)} (an interrupted rescale, finished)"
    for source, target in journal.get("moves", []):
        if store.exists(target) and not store.exists(source):
            store.rename(target, source)  # back where the unfinished rescale found it
    store.delete(folder)
    return (f"as it was: an interrupted rescale of {checkpoint} to "
            f"{journal['partitions'][1]} partitions was undone (stage {journal['phase']!r}); "
            "run it again")


def _plan(spark: Any, store: Any, checkpoint: str, partitions: int, buckets: Optional[int],
          sink: Optional[str]) -> Dict[str, Any]:
    """What the rescale will write, checked before anything is."""
    committed = last_commit(store, checkpoint)
    if committed is None:
        raise RescaleError(f"{checkpoint} has no committed batch: there is no state to "
                           "rescale (start the query with the partitions you want)")
    offsets = batch_logs.numbered(store, join_path(checkpoint, "offsets"))
    if offsets and offsets[-1] > committed + 1:
        raise CheckpointError(f"{checkpoint}: offsets run to batch {offsets[-1]} but the last "
                              f"commit is {committed}", checkpoint=checkpoint)
    found = operators(store, checkpoint)
    if found != [0]:
        raise RescaleError(f"{checkpoint} has stateful operators {found}: rescale handles a "
                           "query with one stateful step (split the query, one checkpoint "
                           "per step)")
    last = _text(store, checkpoint, "offsets", committed)
    planned = store.read_text(join_path(join_path(checkpoint, "offsets"), str(committed + 1)))
    confs = batch_logs.offsets_confs(last)
    before = int(confs.get(batch_logs.PARTITIONS_CONF, "0") or 0)
    steps = (read_steps(store, checkpoint) or {})
    step = next(iter(steps.get("steps", {}).values()), None) or {}
    bucket_pair, key_ddl, derived = _bucket_plan(spark, store, checkpoint, step, committed,
                                                 (before, partitions), buckets)
    if partitions == before and (bucket_pair is None or bucket_pair[0] == bucket_pair[1]):
        raise RescaleError(f"{checkpoint} already has {partitions} state partitions"
                           + (f" and {bucket_pair[0]} buckets" if bucket_pair else ""))
    recorded_sink = (steps.get("sink") or {}).get("path")
    return {"committed": committed, "partitions": [before, partitions],
            "buckets": list(bucket_pair) if bucket_pair else [None, None],
            "key_ddl": key_ddl, "derived": derived,
            "confs": {k: v for k, v in confs.items()
                                                  if k != batch_logs.PARTITIONS_CONF},
            "offsets": last, "planned": planned,
            "commit": _text(store, checkpoint, "commits", committed),
            "sink": sink or recorded_sink}


def _bucket_plan(spark: Any, store: Any, checkpoint: str, step: Dict[str, Any],
                 committed: int, partitions: Tuple[int, int], buckets: Optional[int]
                 ) -> Tuple[Optional[Tuple[int, int]], Optional[str], Optional[str]]:
    """A packed step's ``(old, new)`` bucket counts (None for a per-key
    step), its key columns' DDL and, when they were not recorded (a query
    started without ``sw.start``), the line saying they were derived from
    the state (``derive``). New buckets: ``buckets``, else 4 x the new
    partitions when the step used the default (4 x the old), else the old."""
    recorded = recorded_buckets(step.get("state"))
    derived = None
    if recorded is not None:
        old, key_ddl = recorded, step.get("key")
    elif StateLayout.parse(store.read_bytes(_schema_file(checkpoint)) or b"").packed:
        old, key_ddl, derived = _derived_counts(spark, checkpoint, committed, partitions[0])
    elif buckets is not None:
        raise RescaleError(f"{checkpoint} holds a per-key step: it has no buckets to change")
    else:
        return None, step.get("key"), None
    new = buckets if buckets is not None else (
        4 * partitions[1] if old == 4 * partitions[0] else old)
    return (old, new), key_ddl, derived


def _derived_counts(spark: Any, checkpoint: str, committed: int, before: int
                    ) -> Tuple[int, str, str]:
    """A packed step's bucket count (from its state rows; 4 x partitions,
    the default, when it stores none) and key columns (from its stored
    keys, checked against their buckets), and the line that says so."""
    rows = state_rows_of(spark, checkpoint, committed)
    stored = stored_bucket_count(checkpoint, rows)
    old = stored if stored is not None else 4 * before
    key_ddl = stored_key_ddl(spark, checkpoint, rows, old)
    source = "its state rows" if stored is not None else "the default (no key is stored)"
    return old, key_ddl, (f"{checkpoint} has no {STEPS_FILE} record of the packed step (it was "
                          f"not started with sw.start): {old} buckets derived from {source}, "
                          f"key columns {key_ddl!r} from the stored keys")


def _moves(store: Any, built: str, checkpoint: str, version: int,
           only: Optional[range] = None) -> List[Tuple[str, str]]:
    """(new file, its place in the checkpoint) for every file of the built
    state (of the partitions ``only``, default all): version 1 becomes
    ``version`` (a delta becomes a snapshot)."""
    moves = []
    source_root = join_path(built, "state/0")
    for partition in store.list(source_root):
        if not partition.is_dir or not partition.name.isdigit():
            continue
        if only is not None and int(partition.name) not in only:
            continue
        target = join_path(join_path(checkpoint, "state/0"), partition.name)
        for entry in _files(store, partition.path):
            relative = entry.path[len(partition.path.rstrip("/")) + 1:]
            parsed = state_file_name(entry.name)
            if parsed is not None and "/" not in relative:
                kind = "snapshot" if parsed[1] == "delta" else parsed[1]
                relative = f"{version}.{kind}"
            moves.append((entry.path, join_path(target, relative)))
    return moves


def _files(store: Any, folder: str) -> Iterator[Any]:
    """The files under ``folder`` (SST subfolders included), not ``_metadata``."""
    for entry in store.list(folder):
        if entry.is_dir:
            yield from _files(store, entry.path)
        else:
            yield entry


def _write_logs(spark: Any, store: Any, checkpoint: str, plan: Dict[str, Any]) -> None:
    """The rescale batch in the logs (idempotent: a finished rescale writes
    the same again)."""
    batch, partitions = plan["committed"] + 1, plan["partitions"][1]
    offsets, commits = join_path(checkpoint, "offsets"), join_path(checkpoint, "commits")
    watermark = parse_commit(plan["commit"])
    if plan["planned"] is not None:  # the batch the query had planned runs after the rescale
        store.write_text(join_path(offsets, str(batch + 1)),
                         batch_logs.with_partitions(plan["planned"], partitions))
    store.write_text(join_path(offsets, str(batch)),
                     batch_logs.with_partitions(plan["offsets"], partitions, watermark))
    _crash_point("logging")
    _operator_metadata(store, checkpoint, partitions)
    _steps_file(store, checkpoint, partitions, plan["buckets"][1])
    if plan.get("sink"):
        interval = int(spark.conf.get(batch_logs.COMPACT_CONF, "10") or 10)
        batch_logs.sink_entry(store, plan["sink"], batch, interval)
    store.write_text(join_path(commits, str(batch)), plan["commit"])


def _operator_metadata(store: Any, checkpoint: str, partitions: int) -> None:
    path = join_path(checkpoint, "state/0/_metadata/metadata")
    text = store.read_text(path)
    if text is None:
        return
    updated = re.sub(r'"numPartitions":\d+', f'"numPartitions":{partitions}', text)
    if updated != text:
        store.write_text(path, updated)


def _steps_file(store: Any, checkpoint: str, partitions: int, buckets: Optional[int]) -> None:
    steps = read_steps(store, checkpoint)
    if steps is None:
        return
    steps.setdefault("confs", {})[batch_logs.PARTITIONS_CONF] = str(partitions)
    for step in steps.get("steps", {}).values():
        if buckets is not None and "state" in step:
            step["state"] = with_buckets(step["state"], buckets)
    store.write_text(join_path(checkpoint, STEPS_FILE), json.dumps(steps, indent=2,
                                                                   sort_keys=True))


def _crash_point(stage: str) -> None:
    """``$SPARKWAX_RESCALE_KILL_AT=<stage>``: this process kills itself with
    SIGKILL there (tests/spark/checkpoints/test_rescale.py proves each stage recovers)."""
    if os.environ.get(KILL_AT_ENV) == stage:
        os.kill(os.getpid(), signal.SIGKILL)


def _refuse_running(spark: Any, checkpoint: str, idle_seconds: float) -> None:
    """A query of this session or one holding the checkpoint's liveness
    record (``sw.start``'s, idle or busy, in any process) is refused always;
    a query started without ``sw.start`` is seen only by its logs changing
    while the newest is less than ``idle_seconds`` old (0: not looked for,
    ``--force``)."""
    refuse_if_live(spark, checkpoint, "rescale", RescaleError)
    if idle_seconds <= 0:
        return
    store = storage_for(spark)
    newest = newest_log_ms(store, checkpoint)
    wait = idle_seconds - (wall_clock.time() - newest / 1000)
    if newest and wait > 0:  # just stopped, or running: a running query writes again
        wall_clock.sleep(wait)
        if newest_log_ms(store, checkpoint) != newest:
            raise RescaleError(f"{checkpoint} is in use: a query wrote its logs in the last "
                               f"{idle_seconds:.0f} s; stop it first (Spark rescales only a "
                               "stopped query's state)")


def _record(store: Any, checkpoint: str, number: int, record: Dict[str, Any]) -> None:
    store.write_text(join_path(join_path(checkpoint, FOLDER), f"journal-{number}.json"),
                     json.dumps(record))


def _newest_record(store: Any, folder: str) -> Optional[Dict[str, Any]]:
    for entry in sorted(store.list(folder), key=lambda e: e.name, reverse=True):
        if entry.name.startswith("journal-") and entry.name.endswith(".json"):
            try:
                record: Dict[str, Any] = json.loads(store.read_text(entry.path) or "")
                return record
            except ValueError:
                continue  # cut short while written: the stage before it holds
    return None


def _text(store: Any, checkpoint: str, log: str, batch: int) -> str:
    path = join_path(join_path(checkpoint, log), str(batch))
    text: Optional[str] = store.read_text(path)
    if text is None:
        raise CheckpointError(f"{checkpoint}: {log}/{batch} is missing", checkpoint=checkpoint,
                              path=path)
    return text


def _schema_file(checkpoint: str) -> str:
    return join_path(checkpoint, "state/0/0/_metadata/schema")


def _result(checkpoint: str, plan: Dict[str, Any]) -> RescaleResult:
    buckets = plan["buckets"]
    return RescaleResult(checkpoint, plan["committed"] + 1, tuple(plan["partitions"]),
                         tuple(buckets) if buckets[0] is not None else None,
                         plan.get("derived"))


__all__ = ["FOLDER", "KILL_AT_ENV", "RescaleResult", "finish_interrupted", "rescale"]
