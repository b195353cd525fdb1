"""Who is using a checkpoint: a liveness record that a running query (and a
running rescale) keeps fresh, so that no tool writes a checkpoint under it.

Spark's own guard (``CONCURRENT_STREAM_LOG_UPDATE``) fires only when the
second writer reaches the offset log, and a log's age cannot tell an idle
query from a stopped one. So ``sw.start`` and ``rescale`` hold a *lease*:
``<checkpoint>/sparkwax-live.json`` (written through Spark's file system,
like the checkpoint) names the holder (what, host, process id, a run id,
since when) and a beat counter that a daemon thread renews every
``BEAT_SECONDS`` while the query is active, idle or busy. A clean stop
removes it; a killed process leaves it behind, and ``live_holder`` tells a
live record from a dead one:

- no record: nobody, once no write of one is under way (``read_settled``:
  Hadoop's rename over a file deletes it first on local disks and ViewFS);
- a query of this process's sessions on the checkpoint, or a lease of this
  process: live;
- a record of this host whose process is gone: dead, at once;
- a record written more than ``STALE_SECONDS`` ago (by its own clock and by
  the file's time): dead;
- else the record is watched for ``WATCH_SECONDS``: renewed, live; not, dead.

``refuse_if_live`` raises the error a writing tool gives (``sw.start``, the
``state`` commands ``rescale`` and ``clear``); nothing overrides a live
holder (``--force`` neither; the refusal names the caller's own way).

Taking a checkpoint (``Lease.acquire``; ``hold`` checks and takes as one
step among this process's threads) is one taker's alone even when two start
at the same instant: the record is created only where none is, through a
hard link on local disks and Hadoop's create on HDFS, both exclusive (a
second taker finds it there and is refused); a dead holder's record is
deleted first, and where the create is not exclusive (object stores, or a
dead record taken over) the record is read back ``SETTLE_SECONDS`` later:
the taker whose record is not there is refused. Spark's own guard stays the
last line (``queries.start_guard.spark_guard``). Over Spark Connect there is
no lease (its client has no file API; the query runs on the server).

>>> Holder("query", "node-1", 4242, "run-9", 1_700_000_000_000).describe()
'a query (run run-9, pid 4242 on node-1, since 2023-11-14 22:13:20 UTC)'
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import threading
import time as wall_clock
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Optional, Tuple, Type

from .format.paths import join_path
from ...errors import CheckpointInUseError, ConfigError, SparkwaxError
from ..deploy.session_confs import is_connect
from ..spark_version import java_query
from .storage import staging_micros, storage_for

FILE = "sparkwax-live.json"
BEAT_SECONDS = 2.0
WATCH_SECONDS = 2 * BEAT_SECONDS + 1.0
STALE_SECONDS = 120.0
SETTLE_TRIES = 40  # reads 50 ms apart while a record is being written (read_settled)

SETTLE_SECONDS = 1.0  # a taker's record read back this long after a write not exclusive
WRITING_SECONDS = 10.0  # a staging file begun longer ago is a write a kill cut short

_HELD: Dict[str, "Lease"] = {}  # run id -> this process's leases
_HELD_LOCK = threading.Lock()
_TAKING = threading.Lock()  # one check-and-take at a time in this process (``hold``)
_DOING = {"query": "start a query on", "rescale": "rescale"}
UNKNOWN = object()  # Lease.acquire(seen=): the caller did not say what record it found


@dataclass(frozen=True)
class Holder:
    """Who holds a checkpoint: ``what`` ("query", "rescale"), where, since when."""

    what: str
    host: str
    pid: int
    run: str
    since_ms: int
    beat: int = 0
    written_ms: int = 0
    pid_space: int = 0  # the pid namespace (containers on one host name differ)

    def describe(self) -> str:
        since = datetime.fromtimestamp(self.since_ms / 1000, timezone.utc)
        return (f"a {self.what} (run {self.run}, pid {self.pid} on {self.host}, since "
                f"{since:%Y-%m-%d %H:%M:%S} UTC)")


def read_holder(store: Any, checkpoint: str) -> Optional[Holder]:
    """The checkpoint's liveness record, or None (none, or unreadable: a
    record cut short while written holds no promise)."""
    try:
        text = store.read_text(join_path(checkpoint, FILE))
        fields = json.loads(text) if text else None
        return Holder(**fields) if isinstance(fields, dict) else None
    except Exception:  # not JSON, other fields, or gone between listing and reading
        return None


def _being_written(store: Any, checkpoint: str) -> bool:
    """Whether a lease is writing its record now: the storage's staging file
    (``.sparkwax-live.json.<µs>.tmp``) lies beside it, begun less than
    ``WRITING_SECONDS`` ago (an older one is a write that a kill cut short,
    which made every later start wait out ``SETTLE_TRIES``). Hadoop's rename
    over a file deletes the old one first on the local and ViewFS file
    systems, so a reader then finds no record although one is held."""
    now_us = wall_clock.time() * 1e6
    for entry in store.list(checkpoint, hidden=True):
        begun = staging_micros(entry.name, FILE)
        if begun is not None and now_us - begun < WRITING_SECONDS * 1e6:
            return True
    return False


def read_settled(store: Any, checkpoint: str, *, sleep: Callable[[float], None] = wall_clock.sleep,
                 tries: int = SETTLE_TRIES) -> Optional[Holder]:
    """``read_holder``, read again (every 50 ms, ``tries`` times at most)
    while it finds no record and a write of one is under way, and once more
    20 ms later when none is: no record then is not "nobody holds it"."""
    holder = read_holder(store, checkpoint)
    for _ in range(tries):
        if holder is not None:
            break
        if not _being_written(store, checkpoint):
            # one more look a moment later: a renewal paused by the scheduler between its
            # renames (the data's, then its checksum's, which no listing shows) looks so too
            sleep(0.02)
            return read_holder(store, checkpoint)
        sleep(0.05)
        holder = read_holder(store, checkpoint)
    return holder


def _pid_space() -> int:
    """This process's pid namespace (0 where /proc has none)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _record_age_s(store: Any, checkpoint: str, holder: Holder) -> float:
    """Seconds since the record was written: the younger of its own clock's
    and the file system's time (either may be another machine's clock)."""
    now_ms = wall_clock.time() * 1000
    modified = [e.modified_ms for e in store.list(checkpoint) if e.name == FILE]
    return min(now_ms - holder.written_ms, now_ms - max(modified, default=0)) / 1000


def _process_gone(holder: Holder) -> bool:
    """Whether the holder ran on this host (and pid namespace: a container
    may share the host name) and its process has ended."""
    if holder.host != socket.gethostname() or holder.pid_space != _pid_space():
        return False
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's live process
        return False
    return False


def _running_here(spark: Any, checkpoint: str) -> Optional[Holder]:
    """An active query of this process's session on ``checkpoint``."""
    active = spark.streams.active
    if not active:
        return None
    wanted = storage_for(spark).qualified(checkpoint).rstrip("/")
    for query in active:
        handle = java_query(query)
        if handle is None:  # not a classic query: no root to compare
            continue
        try:
            root = str(handle.streamingQuery().resolvedCheckpointRoot())
        except Exception:  # not the JVM object this module knows
            continue
        if root.rstrip("/") == wanted:
            return Holder("query", socket.gethostname(), os.getpid(),
                          str(query.name or query.id), int(wall_clock.time() * 1000))
    return None


def live_holder(spark: Any, checkpoint: str, *, watch_seconds: float = WATCH_SECONDS,
                sleep: Callable[[float], None] = wall_clock.sleep) -> Optional[Holder]:
    """Who is running on ``checkpoint`` now (see the module's rules), or None."""
    return _look(spark, checkpoint, watch_seconds, sleep)[0]


def _look(spark: Any, checkpoint: str, watch_seconds: float = WATCH_SECONDS,
          sleep: Callable[[float], None] = wall_clock.sleep
          ) -> Tuple[Optional[Holder], Optional[Holder]]:
    """``(live holder or None, the record read)``: a record read and no
    live holder is a dead holder's."""
    if is_connect(spark):
        return None, None
    here = _running_here(spark, checkpoint)
    if here is not None:
        return here, None
    store = storage_for(spark)
    holder = read_settled(store, checkpoint, sleep=sleep)
    if holder is None:
        return None, None
    if holder.pid == os.getpid() and holder.host == socket.gethostname():
        with _HELD_LOCK:
            lease = _HELD.get(holder.run)
        return (holder if lease is not None and lease.is_active() else None), holder
    if _process_gone(holder) or _record_age_s(store, checkpoint, holder) > STALE_SECONDS:
        return None, holder
    give_up = wall_clock.monotonic() + watch_seconds
    while wall_clock.monotonic() < give_up:  # a read between two writes may find none:
        sleep(min(0.5, watch_seconds))       # only the whole watch decides
        again = read_holder(store, checkpoint)
        if again is not None and (again.run, again.beat) != (holder.run, holder.beat):
            return again, holder
    return None, holder


FORCE_FLAG = "--force does not override a running query"  # the state commands' CLI
NO_OVERRIDE = "sw.start has no option to start beside it: one query runs on a checkpoint"


def refuse_if_live(spark: Any, checkpoint: str, doing: str,
                   error: Type[SparkwaxError] = ConfigError, *, override: str = FORCE_FLAG,
                   **watch: Any) -> None:
    """Raise ``error`` when a query or a rescale is running on ``checkpoint``
    (``doing``: what was asked, e.g. "rescale"; ``override``: what the
    caller's way to force it does not do, said last)."""
    holder = live_holder(spark, checkpoint, **watch)
    if holder is not None:
        raise _refusal(holder, checkpoint, doing, error, override)


def _refusal(holder: Holder, checkpoint: str, doing: str, error: Type[SparkwaxError],
             override: str) -> SparkwaxError:
    return error(f"cannot {doing} {checkpoint}: it is in use by {holder.describe()}; "
                 f"stop it first and try again (its liveness record {FILE} in the "
                 f"checkpoint is renewed every few seconds while it runs; {override})")


def hold(spark: Any, checkpoint: str, what: str, doing: str,
         error: Type[SparkwaxError] = CheckpointInUseError, *, override: str = FORCE_FLAG
         ) -> Optional["Lease"]:
    """``refuse_if_live``, then this process's lease on ``checkpoint``
    (``Lease.acquire``: of two takers at the same moment, one wins and the
    other gets ``error``), as one step among this process's threads. None
    over Spark Connect (no lease there)."""
    with _TAKING:
        live, seen = _look(spark, checkpoint)
        if live is not None:
            raise _refusal(live, checkpoint, doing, error, override)
        if is_connect(spark):
            return None
        return Lease(spark, checkpoint, what).acquire(error, doing, seen=seen)


class Lease:
    """This process's hold on a checkpoint: ``acquire`` writes the record,
    ``keep_while(active)`` renews it from a daemon thread while ``active()``
    holds, ``release`` stops and removes it (also at interpreter exit)."""

    def __init__(self, spark: Any, checkpoint: str, what: str):
        self.checkpoint = checkpoint
        self._store = storage_for(spark)
        now = int(wall_clock.time() * 1000)
        self.holder = Holder(what, socket.gethostname(), os.getpid(), uuid.uuid4().hex[:12], now,
                             pid_space=_pid_space())
        self._stop = threading.Event()
        self._writing = threading.Lock()  # a beat never lands after release's delete
        self._active: Optional[Callable[[], bool]] = None
        self._thread: Optional[threading.Thread] = None

    def is_active(self) -> bool:
        """Whether the holder still runs (a query stopped a moment ago, before
        the next beat noticed, is not)."""
        try:
            return not self._stop.is_set() and (self._active is None or self._active())
        except Exception:  # the JVM is gone
            return False

    def acquire(self, error: Type[SparkwaxError] = CheckpointInUseError,
                doing: Optional[str] = None, *, seen: Any = UNKNOWN) -> "Lease":
        """Write the record as the checkpoint's only holder (``_claim``); of
        two takers at the same moment, the one whose record is not there
        gets ``error`` (``doing``: what was asked, for its message).
        ``seen``: the record the caller's check found dead (None: it found
        none; by default, whatever is there now is taken for dead)."""
        with _HELD_LOCK:
            _HELD[self.holder.run] = self
        try:
            self._claim(error, doing or _DOING.get(self.holder.what, f"{self.holder.what} on"),
                        seen)
        except BaseException:
            with self._writing:
                self._stop.set()
            with _HELD_LOCK:
                _HELD.pop(self.holder.run, None)
            raise
        return self

    def _claim(self, error: Type[SparkwaxError], doing: str, seen: Any) -> None:
        """The record created where none is (exclusively where the file
        system can: then it is this lease's at once); a dead holder's (the
        one ``seen``) deleted first; and, unless created exclusively where
        none was, read back ``SETTLE_SECONDS`` later to be this lease's
        (another taker may have written it too, or deleted this one)."""
        record = join_path(self.checkpoint, FILE)
        self.holder = Holder(**{**asdict(self.holder), "beat": 1,
                                "written_ms": int(wall_clock.time() * 1000)})
        now = read_holder(self._store, self.checkpoint)
        if now is not None and seen is not UNKNOWN and (seen is None or now.run != seen.run):
            raise self._taken(error, doing, now)  # another taker's, written since the check
        dead = now is not None or self._store.exists(record)  # (unreadable: a dead write's)
        if dead:
            self._store.delete(record)
        created = self._store.create_new(record, json.dumps(asdict(self.holder)))
        if not created.created:
            raise self._taken(error, doing, read_settled(self._store, self.checkpoint))
        if created.exclusive and not dead:
            return
        wall_clock.sleep(SETTLE_SECONDS)
        back = read_settled(self._store, self.checkpoint)
        if back is None or back.run != self.holder.run:
            raise self._taken(error, doing, back)

    def _taken(self, error: Type[SparkwaxError], doing: str, other: Optional[Holder]
               ) -> SparkwaxError:
        """``error``: another taker holds the checkpoint (``other``, when read)."""
        who = other.describe() if other is not None else "another taker (its record unread)"
        return error(f"cannot {doing} {self.checkpoint}: it was taken a moment ago by {who}, "
                     f"which started at the same time; one query runs on a checkpoint at a "
                     f"time: stop that one first, or run this one on another checkpoint")

    def _write(self) -> None:
        with self._writing:
            if self._stop.is_set():
                return
            self.holder = Holder(**{**asdict(self.holder), "beat": self.holder.beat + 1,
                                    "written_ms": int(wall_clock.time() * 1000)})
            self._store.replace_text(join_path(self.checkpoint, FILE),
                                     json.dumps(asdict(self.holder)))

    def keep_while(self, active: Callable[[], bool]) -> "Lease":
        """Renew every ``BEAT_SECONDS`` while ``active()``; release after.
        Called again, it only changes what ``active`` is (``sw.start``:
        always while it starts, then while its query is active)."""
        self._active = active
        if self._thread is not None:
            return self

        def beat() -> None:
            while not self._stop.wait(BEAT_SECONDS):
                try:
                    if not active():
                        break
                    self._write()
                except Exception:  # no answer this time (the JVM busy, a write refused, or
                    continue       # gone at exit, where release stops the loop): try again
            self.release()
        self._thread = threading.Thread(target=beat, name="sparkwax-liveness", daemon=True)
        self._thread.start()
        return self

    def release(self) -> None:
        """Stop renewing and remove the record if it is still this lease's."""
        with self._writing:
            self._stop.set()
        with _HELD_LOCK:
            if _HELD.pop(self.holder.run, None) is None:
                return
        try:
            found = read_holder(self._store, self.checkpoint)
            if found is not None and found.run == self.holder.run:
                self._store.delete(join_path(self.checkpoint, FILE))
        except Exception:  # the JVM is gone: the record stays, and reads as dead
            pass


@atexit.register
def _release_all() -> None:
    with _HELD_LOCK:
        leases = list(_HELD.values())
    for lease in leases:
        lease.release()


__all__ = ["BEAT_SECONDS", "FILE", "FORCE_FLAG", "Holder", "Lease", "NO_OVERRIDE",
           "SETTLE_SECONDS", "SETTLE_TRIES", "STALE_SECONDS", "WATCH_SECONDS", "hold",
           "live_holder", "read_holder", "read_settled", "refuse_if_live"]
