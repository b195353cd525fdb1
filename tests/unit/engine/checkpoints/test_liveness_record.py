"""The liveness record without a JVM (sparkwax/engine/checkpoints/liveness.py):
a reader never takes a record being rewritten for no record, a lease keeps
beating through a beat that failed, and of two takers at the same moment one
holds the checkpoint and the other is refused. A dict stands for the file system;
tests/spark/checkpoints/test_liveness.py runs the real one, across processes."""

import json
import time
from dataclasses import asdict

import pytest

from sparkwax.engine.checkpoints import liveness
from sparkwax.engine.checkpoints.liveness import FILE, Holder, Lease, read_settled
from sparkwax.errors import CheckpointInUseError
from sparkwax.engine.checkpoints.storage import Created, FileEntry

RECORD = json.dumps(asdict(Holder("query", "node-1", 4242, "run-9", 1)))
def staging(seconds_ago: float = 0.0) -> str:
    """The staging file's name of a write begun ``seconds_ago`` (its writer's clock)."""
    return f".{FILE}.{int((time.time() - seconds_ago) * 1e6)}.tmp"


class Folder:
    """A checkpoint folder of named texts; ``plan`` changes it at each read."""

    def __init__(self, files, plan=()):
        self.files, self.plan, self.reads = dict(files), list(plan), 0

    def read_text(self, path):
        self.reads += 1
        if self.plan:
            self.files = self.plan.pop(0)
        return self.files.get(path.rsplit("/", 1)[-1])

    def list(self, path, hidden=False):
        return [FileEntry(name, f"{path}/{name}", 0, False, len(text))
                for name, text in sorted(self.files.items())]

    def replace_text(self, path, text):
        self.files[path.rsplit("/", 1)[-1]] = text

    def delete(self, path):
        self.files.pop(path.rsplit("/", 1)[-1], None)

    def exists(self, path):
        return path.rsplit("/", 1)[-1] in self.files

    def create_new(self, path, text):
        name = path.rsplit("/", 1)[-1]
        if name in self.files:
            return Created(False, self.exclusive)
        self.files[name] = text
        return Created(True, self.exclusive)

    exclusive = True  # a local disk's or HDFS's create


def test_a_record_being_replaced_is_read_again_until_it_is_there():
    # Hadoop's rename over the record deletes it first: only the staging file is there
    folder = Folder({}, plan=[{staging(): RECORD}, {staging(): RECORD}, {FILE: RECORD}])
    slept = []
    holder = read_settled(folder, "/ck", sleep=slept.append)
    assert holder is not None and holder.run == "run-9"
    assert slept == [0.05, 0.05]  # read, staging seen; read, staging seen; read: the record


def test_a_renewal_paused_between_its_renames_is_found_a_moment_later():
    # no record and no staging file listed (its checksum's rename is still to come)
    folder = Folder({}, plan=[{}, {FILE: RECORD}])
    slept = []
    assert read_settled(folder, "/ck", sleep=slept.append).run == "run-9"
    assert slept == [0.02]


def test_a_write_cut_short_long_ago_is_no_write_under_way():
    """A staging file a kill -9 left behind (begun a minute ago) made every
    later start read the folder 40 times, 2 s, before "nobody"."""
    folder = Folder({staging(seconds_ago=60): RECORD})
    slept = []
    assert read_settled(folder, "/ck", sleep=slept.append) is None
    assert slept == [0.02]


def test_no_record_and_no_write_under_way_is_nobody_after_one_more_look():
    folder = Folder({"offsets": "x"})
    slept = []
    assert read_settled(folder, "/ck", sleep=slept.append) is None
    assert slept == [0.02] and folder.reads == 2


def test_a_staging_file_left_behind_is_read_a_bounded_number_of_times():
    folder = Folder({staging(): RECORD})
    assert read_settled(folder, "/ck", sleep=lambda s: None, tries=5) is None
    assert folder.reads == 1 + 5


def test_a_lease_beats_on_after_a_beat_that_failed(monkeypatch):
    folder = Folder({})
    monkeypatch.setattr(liveness, "storage_for", lambda spark: folder)
    monkeypatch.setattr(liveness, "BEAT_SECONDS", 0.01)
    answers = iter([True, RuntimeError("py4j: no answer"), True])

    def active():
        answer = next(answers, True)
        if isinstance(answer, Exception):
            raise answer
        return answer

    lease = Lease(object(), "/ck", "query").acquire()
    try:
        lease.keep_while(active)
        give_up = time.monotonic() + 10
        while json.loads(folder.files[FILE])["beat"] < 5:
            assert time.monotonic() < give_up, "the lease stopped beating"
            time.sleep(0.01)
        assert lease._thread is not None and lease._thread.is_alive()
    finally:
        lease.release()
    assert FILE not in folder.files
    lease._thread.join(timeout=5)
    assert not lease._thread.is_alive()


def _lease(monkeypatch, folder, slept=None):
    monkeypatch.setattr(liveness, "storage_for", lambda spark: folder)
    monkeypatch.setattr(liveness.wall_clock, "sleep", (slept if slept is not None else []).append)
    return Lease(object(), "/ck", "query")


def _record(run, beat=1):
    return json.dumps(asdict(Holder("query", "node-2", 77, run, 1, beat)))


def test_of_two_takers_that_found_no_record_the_second_to_create_it_is_refused(monkeypatch):
    folder = Folder({})
    first = _lease(monkeypatch, folder).acquire(seen=None)
    with pytest.raises(CheckpointInUseError, match=rf"cannot start a query on /ck: it was "
                                                   rf"taken a moment ago by a query \(run "
                                                   rf"{first.holder.run}, .*at the same time"):
        _lease(monkeypatch, folder).acquire(seen=None)
    assert json.loads(folder.files[FILE])["run"] == first.holder.run  # left as it was
    first.release()
    assert FILE not in folder.files


def test_a_record_written_since_the_check_is_never_taken_for_the_dead_one(monkeypatch):
    """The check found no record (or a dead one): a record there now is
    another taker's, not deleted (the old code's replace overwrote it)."""
    for seen in (None, Holder("query", "node-2", 77, "dead-run", 1)):
        folder = Folder({FILE: _record("just-taken")})
        with pytest.raises(CheckpointInUseError, match="run just-taken"):
            _lease(monkeypatch, folder).acquire(seen=seen)
        assert json.loads(folder.files[FILE])["run"] == "just-taken"


def test_a_dead_record_is_taken_over_and_read_back_after_the_settle_delay(monkeypatch):
    folder, slept = Folder({FILE: _record("dead-run")}), []
    lease = _lease(monkeypatch, folder, slept).acquire(
        seen=Holder("query", "node-2", 77, "dead-run", 1))
    assert json.loads(folder.files[FILE])["run"] == lease.holder.run
    assert liveness.SETTLE_SECONDS in slept
    lease.release()


def test_a_taker_whose_record_another_replaced_meanwhile_is_refused(monkeypatch):
    """Two takers of one dead record: the second deleted the first's new
    record and wrote its own; the first reads back after the settle delay."""
    folder = Folder({FILE: _record("dead-run")})
    lease = _lease(monkeypatch, folder)
    settled = []

    def other_taker(seconds):
        settled.append(seconds)
        folder.files[FILE] = _record("other-run")

    monkeypatch.setattr(liveness.wall_clock, "sleep", other_taker)
    with pytest.raises(CheckpointInUseError, match="taken a moment ago by a query "
                                                   r"\(run other-run"):
        lease.acquire(seen=Holder("query", "node-2", 77, "dead-run", 1))
    assert settled[0] == liveness.SETTLE_SECONDS
    assert json.loads(folder.files[FILE])["run"] == "other-run"
    assert lease.holder.run not in liveness._HELD and not lease.is_active()


def test_a_create_that_is_not_exclusive_is_read_back(monkeypatch):
    """An object store: Hadoop checks, then creates; the record is read back."""
    folder, slept = Folder({}), []
    folder.exclusive = False
    lease = _lease(monkeypatch, folder, slept).acquire(seen=None)
    assert slept[0] == liveness.SETTLE_SECONDS
    lease.release()
    folder.exclusive = True
    lease = _lease(monkeypatch, folder, slept := []).acquire(seen=None)
    assert slept == []  # exclusive, and no record was there: held at once
    lease.release()


def test_a_refusal_names_the_way_its_caller_has(monkeypatch):
    """sw.start has no --force (a CLI flag of the state commands): its
    refusal says it has no way to start beside a live query."""
    live = Holder("query", "node-2", 77, "run-1", 1)
    monkeypatch.setattr(liveness, "_look", lambda *args, **kwargs: (live, live))
    monkeypatch.setattr(liveness, "is_connect", lambda spark: False)
    with pytest.raises(CheckpointInUseError) as caught:
        liveness.hold(object(), "/ck", "query", "start a query on",
                      override=liveness.NO_OVERRIDE)
    assert "--force" not in str(caught.value)
    assert "sw.start has no option to start beside it" in str(caught.value)
    with pytest.raises(liveness.ConfigError, match="--force does not override"):
        liveness.refuse_if_live(object(), "/ck", "clear")
