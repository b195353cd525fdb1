"""``end_after_batch`` sets a classic query's state to TERMINATED only where
Spark ends it after the batch in flight: between triggers, or while one of
the batch's jobs runs (past Spark's check after planning, which would
interrupt the batch). Fake JVM objects (no pyspark), in the shapes py4j
hands back."""

import threading
import time

from sparkwax.engine.queries.stopping import end_after_batch, execution


class State:
    """An ``AtomicReference`` holding Spark's ACTIVE/TERMINATED objects."""

    def __init__(self):
        self.value, self.log = Named("ACTIVE"), []

    def get(self):
        return self.value

    def compareAndSet(self, expected, new):
        self.log.append((self.phase(), new.toString()))
        if self.value is expected:
            self.value = new
            return True
        return False


class Named:
    def __init__(self, name):
        self.name = name

    def toString(self):
        return self.name

    def getClass(self):
        return Kind(f"org.apache.spark.sql.execution.streaming.runtime.{self.name}$")


class Kind:
    def __init__(self, name):
        self.name = name

    def getName(self):
        return self.name

    def forName(self, name):
        assert name == "org.apache.spark.sql.execution.streaming.runtime.TERMINATED$"
        return self

    def getField(self, name):
        return self

    def get(self, instance):
        return Named("TERMINATED")


class Thread:
    def __init__(self, ended):
        self.ended = ended

    def isAlive(self):
        return not self.ended.is_set()

    def join(self, millis):
        self.ended.wait(millis / 1000)


class Job:
    def __init__(self, batch):
        self.batch = batch

    def properties(self):
        return self

    def getProperty(self, name):
        return {"spark.jobGroup.id": "run-1", "streaming.sql.batchId": self.batch}[name]


class Jobs:
    """The scheduler's active jobs, as a Scala list."""

    def __init__(self, query):
        self.jobs = [Job("7")] if query.phase == "job" else []
        if query.phase == "planning":  # a job of the batch before, just ending
            self.jobs = [Job("6")]

    def toList(self):
        return self

    def size(self):
        return len(self.jobs)

    def apply(self, index):
        return self.jobs[index]


class Execution:
    def __init__(self, query):
        self.query, self._state = query, State()
        self._state.phase = lambda: query.phase
        self._thread = Thread(query.ended)

    def state(self):
        return self._state

    def queryExecutionThread(self):
        return self._thread

    def sparkSession(self):
        return self

    def sparkContext(self):
        return self

    def dagScheduler(self):
        return self

    def activeJobs(self):
        return Jobs(self.query)

    def getLatestExecutionContext(self):
        return self

    def batchId(self):
        return 7


class FakeQuery:
    """Goes through ``phases`` (one per 30 ms); "planning" and "tail" are
    in a trigger without a job running, "job" runs one, "idle" is between
    triggers, where Spark checks the state ("wait": in a long wait for the
    next trigger time, where it does not). The thread ends at the first
    "idle" after the state was set."""

    runId = "run-1"

    def __init__(self, phases):
        self.phases, self.phase, self.ended = list(phases), "idle", threading.Event()
        self._jsq = self
        self.jvm = Execution(self)
        self.stopped = False

    def streamingQuery(self):
        return self.jvm

    @property
    def status(self):
        active = self.phase not in ("idle", "wait")
        message = "Processing new data" if active else "Waiting for next trigger"
        return {"isTriggerActive": active, "message": message}

    def run(self):
        for phase in self.phases:
            self.phase = phase
            time.sleep(0.03)
            if phase == "idle" and self.jvm.state().get().toString() == "TERMINATED":
                break
        self.ended.set()

    def stop(self):
        self.stopped = True
        self.ended.set()


def _stop(phases):
    query = FakeQuery(phases)
    thread = threading.Thread(target=query.run, daemon=True)
    thread.start()
    time.sleep(0.01)  # the signal comes in the first phase
    ended = end_after_batch(query, execution(query), time.monotonic() + 10, poll=0.005)
    return query, ended


def test_the_state_is_set_while_a_job_runs_never_while_a_batch_is_planned():
    query, ended = _stop(["planning"] * 3 + ["job"] * 3 + ["tail", "idle"] + ["planning"] * 50)
    assert ended and not query.stopped
    assert query.jvm.state().log == [("job", "TERMINATED")]


def test_between_triggers_the_state_is_set_at_once():
    query, ended = _stop(["idle"] * 3 + ["planning", "job", "idle"] * 20)
    assert ended and query.jvm.state().log == [("idle", "TERMINATED")]


def test_a_query_waiting_for_a_long_trigger_interval_is_stopped_by_spark():
    query, ended = _stop(["wait"] * 1000)  # a 30 s wait: Spark's stop() ends it
    assert ended and query.stopped


def test_a_query_object_without_a_jvm_has_no_execution():
    class Connect:
        pass
    assert execution(Connect()) is None


def test_one_reading_between_triggers_of_a_query_falling_behind_is_not_enough():
    class FallingBehind(FakeQuery):
        """Its next trigger starts as one ends: the first reading of each
        planning phase still shows the gap between them (already stale)."""

        seen = None

        @property
        def status(self):
            if self.phase == "planning" and self.seen != id(self.phases) + len(self.phase):
                self.seen = id(self.phases) + len(self.phase)
                return {"isTriggerActive": False, "message": "Waiting for next trigger"}
            if self.phase != "planning":
                self.seen = None
            return FakeQuery.status.fget(self)

    query = FallingBehind(["planning"] * 3 + ["job"] * 3 + ["tail", "idle"] + ["planning"] * 50)
    thread = threading.Thread(target=query.run, daemon=True)
    thread.start()
    time.sleep(0.01)
    assert end_after_batch(query, execution(query), time.monotonic() + 10, poll=0.005)
    assert query.jvm.state().log == [("job", "TERMINATED")]  # never while planning
