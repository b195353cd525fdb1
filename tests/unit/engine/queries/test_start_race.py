"""Spark's own guard against two queries on one checkpoint, the last line
behind the liveness record (sparkwax/engine/queries/start_guard.py): a query
it stops fails with a CheckpointInUseError saying another query took the
checkpoint, without Spark's plan and Java frames, never a CheckpointError."""

import pytest

from sparkwax.engine.queries.start import StartedQuery
from sparkwax.engine.queries.start_guard import spark_guard
from sparkwax.errors import CheckpointError, CheckpointInUseError

STREAM_FAILED = ("[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: "
                 "Multiple streaming queries are concurrently using file:/data/ck/sources/0\n"
                 "=== Streaming Query ===\nIdentifier: [id = 1, runId = 2]\n"
                 "Current Committed Offsets: {}\n" + "\tat org.apache.spark.Frame\n" * 27)
LOG_UPDATE = ("SparkConcurrentModificationException: [CONCURRENT_STREAM_LOG_UPDATE] "
              "Concurrent update to the log. Multiple streaming jobs detected for 0.")


class Failing:
    """Spark's StreamingQuery, stopped by ``error``."""

    isActive = True  # (no progress printing to wait for)

    def __init__(self, error):
        self.error = error

    def awaitTermination(self, timeout=None):
        raise self.error

    def exception(self):
        return self.error


@pytest.mark.parametrize("text, guard", [
    (STREAM_FAILED, "Multiple streaming queries are concurrently using"),
    (LOG_UPDATE, "CONCURRENT_STREAM_LOG_UPDATE"),
])
def test_a_query_spark_stopped_for_another_names_the_race(text, guard):
    query = StartedQuery(Failing(RuntimeError(text)), None, "/data/ck")
    with pytest.raises(CheckpointInUseError) as caught:
        query.awaitTermination()
    message = str(caught.value)
    assert message.startswith("the query on /data/ck stopped: another query started on the "
                              "same checkpoint at the same time")
    assert repr(guard) in message and "not damaged" in message
    assert "org.apache" not in message and "=== Streaming Query ===" not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert not isinstance(caught.value, CheckpointError)
    assert isinstance(query.exception(), CheckpointInUseError)


def test_a_guard_is_found_in_a_cause_and_nothing_else_is_one():
    try:
        try:
            raise RuntimeError(LOG_UPDATE)
        except RuntimeError as inner:
            raise ValueError("py4j: an error occurred while calling o42.start") from inner
    except ValueError as outer:
        assert spark_guard(outer) == "CONCURRENT_STREAM_LOG_UPDATE"
    assert spark_guard(RuntimeError("java.util.ConcurrentModificationException")) is None
