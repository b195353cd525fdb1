"""The liveness record without a JVM (sparkwax/engine/checkpoints/liveness.py):
a reader never takes a record being rewritten for no record, and a lease
keeps beating through a beat that failed. A dict stands for the file system;
tests/spark/checkpoints/test_liveness.py runs the real one, across processes."""

import json
import time
from dataclasses import asdict

from sparkwax.engine.checkpoints import liveness
from sparkwax.engine.checkpoints.liveness import FILE, Holder, Lease, read_settled
from sparkwax.engine.checkpoints.storage import FileEntry

RECORD = json.dumps(asdict(Holder("query", "node-1", 4242, "run-9", 1)))
STAGING = f".{FILE}.1700000000000000.tmp"


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


def test_a_record_being_replaced_is_read_again_until_it_is_there():
    # Hadoop's rename over the record deletes it first: only the staging file is there
    folder = Folder({}, plan=[{STAGING: RECORD}, {STAGING: RECORD}, {FILE: RECORD}])
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


def test_no_record_and_no_write_under_way_is_nobody_after_one_more_look():
    folder = Folder({"offsets": "x"})
    slept = []
    assert read_settled(folder, "/ck", sleep=slept.append) is None
    assert slept == [0.02] and folder.reads == 2


def test_a_staging_file_left_behind_is_read_a_bounded_number_of_times():
    folder = Folder({STAGING: RECORD})
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
