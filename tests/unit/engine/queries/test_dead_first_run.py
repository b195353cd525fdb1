"""What ``sw.start`` does at start-up without Spark: the leftovers of a first
run that died before Spark logged its first micro-batch (found in an
in-memory store standing for ``storage_for(spark)``), and the signals held
while ``start`` runs (``start_guard.HeldSignals``)."""

import doctest
import signal
import threading
import time

import pytest

from sparkwax.engine.checkpoints import first_run
from sparkwax.engine.checkpoints.first_run import find_leftovers
from sparkwax.engine.checkpoints.storage import FileEntry
from sparkwax.engine.queries import start_guard
from sparkwax.engine.queries.start_guard import HeldSignals
from sparkwax.errors import CheckpointError

CK = "/ck"
FILE_LOG = 'v1\n{"path":"file:///in/1.json","timestamp":1,"batchId":0}\n'
DEAD = {  # what a first run killed while Spark wrote offsets/0 left (a real one's listing)
    "/ck/metadata": '{"id":"4ce44b73"}',
    "/ck/sparkwax-steps.json": "{}",
    "/ck/offsets/.0.a45bc60d.tmp": "",
    "/ck/offsets/..0.a45bc60d.tmp.crc": "",
    "/ck/sources/0/0": FILE_LOG,
    "/ck/sources/0/.0.crc": "",
}


class MemoryStore:
    """Files in a dict, with the calls ``first_run`` makes of ``storage_for(spark)``."""

    def __init__(self, files):
        self.files = dict(files)
        self.deleted = []

    def exists(self, path):
        return any(name == path or name.startswith(path + "/") for name in self.files)

    def list(self, path, hidden=False):
        children = {}
        for name in self.files:
            if name.startswith(path + "/"):
                child = name[len(path) + 1:].split("/")[0]
                children[child] = "/" in name[len(path) + 1:]
        return [FileEntry(child, f"{path}/{child}", 0, folder)
                for child, folder in sorted(children.items())
                if hidden or not child.startswith((".", "_"))]

    def read_text(self, path):
        return self.files.get(path)

    def delete(self, path):
        self.deleted.append(path)
        self.files = {n: t for n, t in self.files.items()
                      if n != path and not n.startswith(path + "/")}


def test_doctests():
    failures, attempted = doctest.testmod(first_run)
    assert failures == 0 and attempted > 0


def test_a_dead_first_runs_leftovers_are_its_offsets_tmp_and_its_file_source_log():
    found = find_leftovers(MemoryStore(DEAD), CK)
    assert sorted(found.folders) == ["/ck/offsets", "/ck/sources/0"]
    assert sorted(e.path for e in found.files) == [
        "/ck/offsets/..0.a45bc60d.tmp.crc", "/ck/offsets/.0.a45bc60d.tmp",
        "/ck/sources/0/.0.crc", "/ck/sources/0/0"]


def test_batch_zero_state_and_a_commit_tmp_are_leftovers_too():
    files = dict(DEAD, **{"/ck/state/0/0/.1.delta.77.tmp": "x", "/ck/state/0/0/1.delta": "x",
                          "/ck/state/0/_metadata/metadata": "x", "/ck/commits/.0.9.tmp": ""})
    found = find_leftovers(MemoryStore(files), CK)
    assert sorted(found.folders) == ["/ck/commits", "/ck/offsets", "/ck/sources/0", "/ck/state"]


@pytest.mark.parametrize("entry", ["/ck/offsets/0", "/ck/commits/0", "/ck/offsets/3"])
def test_a_checkpoint_with_a_logged_batch_is_left_to_spark(entry):
    assert find_leftovers(MemoryStore(dict(DEAD, **{entry: "v1\n{}\n"})), CK) is None


def test_nothing_to_clear_in_a_clean_or_missing_checkpoint():
    clean = {"/ck/metadata": "{}", "/ck/sparkwax-steps.json": "{}"}
    assert find_leftovers(MemoryStore(clean), CK) is None
    assert find_leftovers(MemoryStore({}), CK) is None


def test_another_sources_log_stays():
    kafka = dict(DEAD, **{"/ck/sources/0/0": 'v1\n{"topic":{"0":12}}\n'})
    found = find_leftovers(MemoryStore(kafka), CK)
    assert found.folders == ["/ck/offsets"]


def test_state_no_first_run_writes_is_refused_naming_the_file_and_the_command():
    files = dict(DEAD, **{"/ck/state/0/1/7.delta": "x"})
    with pytest.raises(CheckpointError) as raised:
        find_leftovers(MemoryStore(files), CK)
    message = str(raised.value)
    assert "state/0/1/7.delta" in message and "version 7" in message
    assert f"sparkwax state clear {CK}" in message and "STATE_STORE_CHECKPOINT" in message
    assert raised.value.path == "/ck/state/0/1/7.delta"


def test_clearing_removes_the_folders_and_says_so_in_one_line(monkeypatch):
    store = MemoryStore(DEAD)
    monkeypatch.setattr(first_run, "storage_for", lambda spark: store)
    monkeypatch.setattr(first_run, "live_holder", lambda spark, checkpoint: None)
    lines = []
    removed = first_run.clear_dead_first_run(object(), CK, say=lines.append, settle_seconds=0)
    assert removed == ["offsets/.0.a45bc60d.tmp", "sources/0/0"]
    assert sorted(store.deleted) == ["/ck/offsets", "/ck/sources/0"]
    assert sorted(store.files) == ["/ck/metadata", "/ck/sparkwax-steps.json"]
    assert len(lines) == 1 and "offsets/.0.a45bc60d.tmp, sources/0/0" in lines[0]
    assert lines[0].startswith("sparkwax: /ck: a first run stopped before Spark logged")
    assert first_run.clear_dead_first_run(object(), CK, say=lines.append) == []  # once
    assert len(lines) == 1


# -- signals held while start runs ----------------------------------------------------------

@pytest.fixture
def recorder():
    """A SIGINT/SIGTERM handler recording what reaches it, restored afterwards."""
    got = []
    before = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)}
    for number in before:
        signal.signal(number, lambda n, frame: got.append(n))
    yield got
    for number, handler in before.items():
        signal.signal(number, handler)


def test_a_signal_while_held_is_delivered_once_released(recorder):
    with HeldSignals() as held:
        signal.raise_signal(signal.SIGTERM)
        assert recorder == []
    assert recorder == []
    held.deliver()
    assert recorder == [signal.SIGTERM]
    held.deliver()  # once
    assert recorder == [signal.SIGTERM]


def test_a_second_signal_does_at_once_what_it_did_before(recorder):
    with HeldSignals() as held:
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)
        assert recorder == [signal.SIGINT]
        assert signal.getsignal(signal.SIGINT) != held.handler  # given back


def test_a_handler_installed_meanwhile_keeps_it_and_ours_passes_on(recorder):
    later = []
    with HeldSignals() as held:
        signal.signal(signal.SIGINT, lambda n, frame: later.append(n))  # stop_on_signals'
    assert signal.getsignal(signal.SIGINT) != held.handler
    held.handler(signal.SIGINT, None)  # what that handler's "before" does, once it is done
    assert recorder == [signal.SIGINT] and later == []


def test_the_default_sigint_becomes_keyboard_interrupt_outside_spark():
    with pytest.raises(KeyboardInterrupt):
        start_guard.pass_on(signal.SIG_DFL, signal.SIGINT, None)


def test_a_query_stopped_while_initializing_ends_before_its_first_batch():
    """A signal held during ``start`` comes while the query initializes
    (INITIALIZING): its state is set to TERMINATED at once, and Spark's
    thread then ends without running a batch (before, the stop waited while
    the batches ran)."""
    from test_stopping import FakeQuery, Named  # the fake JVM query of the stop tests

    from sparkwax.engine.queries.stopping import end_after_batch, execution

    query = FakeQuery(["init"] * 3 + ["idle"] * 3 + ["planning", "job"] * 30)
    query.jvm.state().value = Named("INITIALIZING")
    thread = threading.Thread(target=query.run, daemon=True)
    thread.start()
    ended = end_after_batch(query, execution(query), time.monotonic() + 10, poll=0.005)
    assert ended and not query.stopped
    assert query.jvm.state().log == [("init", "TERMINATED")]


def test_nothing_is_removed_while_a_process_holds_the_checkpoint(monkeypatch):
    store = MemoryStore(DEAD)
    monkeypatch.setattr(first_run, "storage_for", lambda spark: store)
    monkeypatch.setattr(first_run, "live_holder", lambda spark, checkpoint: "a query")
    lines = []
    assert first_run.clear_dead_first_run(object(), CK, say=lines.append, settle_seconds=0) == []
    assert store.deleted == [] and lines == []
