"""Progress lines: the last (no-data) batch printed before awaitTermination
returns, "stopped" after the last batch's line, an unnamed query labelled by
its steps. Fake queries (no pyspark): they report progress dictionaries the
way Spark's StreamingQuery does."""

import signal
import threading
import time

from sparkwax.engine.queries.progress import (Follower, follow, progress_line, query_name,
                                              stop_on_signals, wait_for_stop)
from sparkwax.engine.queries.query import Query


def _progress(batch, rows):
    return {"batchId": batch, "numInputRows": rows, "processedRowsPerSecond": 10.0,
            "durationMs": {"addBatch": 80, "triggerExecution": 100}, "stateOperators": [],
            "eventTime": {}, "observedMetrics": {}}


class FakeQuery:
    """Runs ``batches`` (input rows per batch; 0 = a no-data batch) on a
    thread, then stops, as availableNow does."""

    def __init__(self, batches, name=None, pause=0.05):
        self.name, self.id = name, "1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed"
        self.recentProgress, self.isActive = [], True
        self.status = {"isTriggerActive": False}
        self._batches, self._pause, self._stopped = batches, pause, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def lastProgress(self):
        return self.recentProgress[-1] if self.recentProgress else None

    def start(self):
        self._thread.start()
        return self

    def _run(self):
        for batch, rows in enumerate(self._batches):
            if self._stopped.is_set():
                break
            self.status = {"isTriggerActive": True}
            time.sleep(self._pause)
            self.recentProgress = self.recentProgress + [_progress(batch, rows)]
            self.status = {"isTriggerActive": False}
            time.sleep(self._pause)
        self.isActive = False

    def awaitTermination(self, timeout=None):
        self._thread.join(timeout)
        return not self.isActive

    def stop(self):
        self._stopped.set()
        self._thread.join()


def test_await_termination_returns_after_the_final_no_data_batch_is_printed():
    lines = []
    spark_query = FakeQuery([5, 3, 0])  # the last: the no-data batch that fires timers
    query = Query(spark_query, spark=None, checkpoint="/ck", steps={"sessions": {}})
    # a slow poll interval: without waiting for the thread, the lines would come late
    query.following = follow(query, say=lines.append, interval=5.0)
    spark_query.start()
    query.awaitTermination()
    assert [line.split()[:3] for line in lines] == [
        ["sessions", "batch", "0"], ["sessions", "batch", "1"], ["sessions", "batch", "2"]]
    assert "no data (timers)" in lines[-1]


def test_stopped_is_printed_after_the_last_batch_line():
    lines = []
    spark_query = FakeQuery([1] * 1000, name="counts", pause=0.02)
    follower = Follower({"counts": spark_query}, lines.append)  # never polled by a thread
    previous = signal.getsignal(signal.SIGINT)
    try:
        assert stop_on_signals(spark_query, say=lines.append, follower=follower)
        spark_query.start()
        while len(spark_query.recentProgress) < 3:
            time.sleep(0.01)
        signal.raise_signal(signal.SIGINT)
        spark_query.awaitTermination(30)
    finally:
        signal.signal(signal.SIGINT, previous)
    stopped = [i for i, line in enumerate(lines) if "stopped query 'counts'" in line]
    assert len(stopped) == 1
    batch_lines = [line for line in lines if line.startswith("counts  batch")]
    assert batch_lines and stopped[0] > lines.index(batch_lines[-1])
    last = int(batch_lines[-1].split()[2])
    assert f"(last batch {last})" in lines[stopped[0]]


def test_an_unnamed_query_is_labelled_by_its_steps_not_its_id():
    spark_query = FakeQuery([])
    assert query_name(spark_query) == "1b9d6bcd"  # Spark's own query: no steps known
    started = Query(spark_query, spark=None, checkpoint="/ck",
                    steps={"sessions": {}, "alerts": {}})
    assert query_name(started) == "alerts,sessions"
    spark_query.name = "mine"
    assert query_name(started) == "mine"


def test_one_signal_stops_every_started_query_at_the_same_time_with_one_line():
    """Two sw.start calls (two stop_on_signals) share one handler: one
    signal stops both, neither waits for the other's batches."""
    lines = []
    first = FakeQuery([1] * 1000, name="first", pause=0.02)
    second = FakeQuery([1] * 1000, name="second", pause=0.02)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        assert stop_on_signals(first, say=lines.append, signals=(signal.SIGTERM,))
        assert stop_on_signals(second, say=lines.append, signals=(signal.SIGTERM,))
        first.start(), second.start()
        while len(second.recentProgress) < 3:
            time.sleep(0.01)
        signal.raise_signal(signal.SIGTERM)
        assert first.awaitTermination(30) and second.awaitTermination(30)
        for query in (first, second):
            wait_for_stop(query, 30)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert lines.count("sparkwax: SIGTERM: stopping after the current micro-batch "
                       "(again to stop at once)") == 1
    for name in ("first", "second"):
        assert len([line for line in lines if f"stopped query {name!r}" in line]) == 1
    assert len(first.recentProgress) < 1000 and len(second.recentProgress) < 1000


def test_pushed_and_polled_progress_print_each_batch_once_in_order():
    lines = []
    spark_query = FakeQuery([], name="q")
    follower = Follower({"q": spark_query}, lines.append)
    follower.push("q", _progress(0, 5))
    spark_query.recentProgress = [_progress(0, 5), _progress(1, 2)]
    follower.poll()
    follower.push("q", _progress(1, 2))  # the listener's event, late
    follower.push("q", _progress(2, 0))
    assert [line.split()[2] for line in lines] == ["0", "1", "2"]


def test_an_idle_report_is_not_a_batch_line():
    """A query waiting for data reports its next batch id with no addBatch
    (Spark's idle report): no line, and the batch's own line still comes."""
    lines = []
    follower = Follower({"q": None}, say=lines.append)
    idle = {**_progress(1, 0), "durationMs": {"latestOffset": 3, "triggerExecution": 3}}
    follower.push("q", idle)
    assert lines == []
    follower.push("q", _progress(1, 0))
    assert len(lines) == 1 and "batch   1" in lines[0]


def test_a_printer_without_a_stream_writes_to_the_stderr_of_each_line(monkeypatch):
    """A query's printer outlives the stream it was made under (a signal
    for an earlier query, a closed test capture): each line goes to the
    ``sys.stderr`` of its own moment."""
    import io

    from sparkwax.engine.queries.progress import printer

    first = io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    say = printer()
    first.close()
    second = io.StringIO()
    monkeypatch.setattr("sys.stderr", second)
    say("sparkwax: SIGINT: stopping")
    assert second.getvalue() == "sparkwax: SIGINT: stopping\n"


def _chained(*stages, step="visits"):
    return {f"sparkwax-stage:{step}/{name}": {"rows_in": rows_in, "emits": emits, "stage": place}
            for place, (name, rows_in, emits) in stages}


def test_a_chained_steps_stages_show_in_chain_order_on_its_line():
    # Spark's map of observed metrics keeps no order: the stage's place does
    observed = {**_chained((1, ("count", 5, 3)), (0, ("dedupe", 1200, 5))),
                "sparkwax:visits": {"rows_in": 1200, "emits": 3}}
    line = progress_line("q", {"batchId": 1, "numInputRows": 1200, "observedMetrics": observed})
    assert line.endswith("  stages dedupe 1,200 in 5 out, count 5 in 3 out"), line


def test_stages_of_several_chained_steps_are_named_by_step():
    observed = {**_chained((0, ("a", 2, 1)), step="one"), **_chained((0, ("b", 1, 1)), step="two")}
    assert progress_line("q", {"batchId": 0, "observedMetrics": observed}).endswith(
        "  stages one/a 2 in 1 out, two/b 1 in 1 out")


def test_a_step_without_stages_adds_nothing_to_its_line():
    line = progress_line("q", {"batchId": 0, "observedMetrics": {"sparkwax:s": {"emits": 2}}})
    assert "stages" not in line and line.endswith(" s")


def _two_steps(first_timers=77, last_timers=5):
    return {"sparkwax:windows": {"rows_in": 7, "emits": 3, "timers_fired": last_timers},
            "sparkwax:sessions": {"rows_in": 12, "emits": 7, "timers_fired": first_timers}}


def test_a_query_of_two_steps_shows_each_step_first_step_first():
    """Each step's rows in, emits out and timers fired, in the query's order
    (not the observed metrics' order, which Spark does not keep), after the
    query's totals."""
    progress = {"batchId": 2, "numInputRows": 12, "observedMetrics": _two_steps()}
    line = progress_line("q", progress, order=["sessions", "windows"])
    assert "  timers 82  " in line, line
    assert line.endswith("  steps sessions 12 in 7 out 77 timers, windows 7 in 3 out 5 timers")
    assert progress_line("q", progress, order=["windows", "sessions"]).endswith(
        "  steps windows 7 in 3 out 5 timers, sessions 12 in 7 out 77 timers")


def test_the_follower_orders_an_sw_start_querys_steps_by_its_descriptions():
    class Started:  # sw.start's Query: its steps' descriptions; the re-keyed one on TWS
        name, id = "q", "1"
        recentProgress = [{"batchId": 0, "durationMs": {"addBatch": 9}, "observedMetrics": _two_steps()}]
        _steps = {"windows": {"state": "per_key/1 tws"}, "sessions": {"state": "per_key/1"}}

    lines = []
    Follower({"q": Started()}, lines.append).poll()
    assert lines[0].endswith("steps sessions 12 in 7 out 77 timers, windows 7 in 3 out 5 timers")


def test_one_step_gets_no_steps_part():
    line = progress_line("q", {"batchId": 0, "observedMetrics": {"sparkwax:s": {"emits": 2}}},
                         order=["s"])
    assert "steps" not in line
