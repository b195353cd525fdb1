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
``state`` commands ``rescale`` and ``clear``); ``--force`` never overrides a
live holder. Over Spark Connect there is no lease (its client has no file
API; the query runs on the server).

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
from typing import Any, Callable, Dict, Optional, Type

from .format.paths import join_path
from ...errors import ConfigError, SparkwaxError
from ..deploy.session_confs import is_connect
from .storage import is_staging_of, storage_for

FILE = "sparkwax-live.json"
BEAT_SECONDS = 2.0
WATCH_SECONDS = 2 * BEAT_SECONDS + 1.0
STALE_SECONDS = 120.0
SETTLE_TRIES = 40  # reads 50 ms apart while a record is being written (read_settled)

_HELD: Dict[str, "Lease"] = {}  # run id -> this process's leases
_HELD_LOCK = threading.Lock()


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
    (``.sparkwax-live.json.<µs>.tmp``) lies beside it. Hadoop's rename over a
    file deletes the old one first on the local and ViewFS file systems, so
    a reader then finds no record although one is held."""
    return any(is_staging_of(entry.name, FILE)
               for entry in store.list(checkpoint, hidden=True))


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
        try:
            root = str(query._jsq.streamingQuery().resolvedCheckpointRoot())
        except Exception:  # not a classic query: no root to compare
            continue
        if root.rstrip("/") == wanted:
            return Holder("query", socket.gethostname(), os.getpid(),
                          str(query.name or query.id), int(wall_clock.time() * 1000))
    return None


def live_holder(spark: Any, checkpoint: str, *, watch_seconds: float = WATCH_SECONDS,
                sleep: Callable[[float], None] = wall_clock.sleep) -> Optional[Holder]:
    """Who is running on ``checkpoint`` now (see the module's rules), or None."""
    if is_connect(spark):
        return None
    here = _running_here(spark, checkpoint)
    if here is not None:
        return here
    store = storage_for(spark)
    holder = read_settled(store, checkpoint, sleep=sleep)
    if holder is None:
        return None
    if holder.pid == os.getpid() and holder.host == socket.gethostname():
        with _HELD_LOCK:
            lease = _HELD.get(holder.run)
        return holder if lease is not None and lease.is_active() else None
    if _process_gone(holder) or _record_age_s(store, checkpoint, holder) > STALE_SECONDS:
        return None
    give_up = wall_clock.monotonic() + watch_seconds
    while wall_clock.monotonic() < give_up:  # a read between two writes may find none:
        sleep(min(0.5, watch_seconds))       # only the whole watch decides
        again = read_holder(store, checkpoint)
        if again is not None and (again.run, again.beat) != (holder.run, holder.beat):
            return again
    return None


def refuse_if_live(spark: Any, checkpoint: str, doing: str,
                   error: Type[SparkwaxError] = ConfigError, **watch: Any) -> None:
    """Raise ``error`` when a query or a rescale is running on ``checkpoint``
    (``doing``: what was asked, e.g. "rescale")."""
    holder = live_holder(spark, checkpoint, **watch)
    if holder is not None:
        raise error(f"cannot {doing} {checkpoint}: it is in use by {holder.describe()}; "
                    f"stop it first and try again (its liveness record {FILE} in the "
                    "checkpoint is renewed every few seconds while it runs; --force does "
                    "not override a running query)")


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

    def acquire(self) -> "Lease":
        with _HELD_LOCK:
            _HELD[self.holder.run] = self
        self._write()
        return self

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


__all__ = ["BEAT_SECONDS", "FILE", "Holder", "Lease", "SETTLE_TRIES", "STALE_SECONDS",
           "WATCH_SECONDS", "live_holder", "read_holder", "read_settled", "refuse_if_live"]
