"""When sparkwax ends a query of a step that asks Spark for a micro-batch at
every trigger (``sparkwax.engine.queries.catch_up``), read from progress dictionaries
as Spark reports them; the Spark side is tests/spark/queries/test_available_now.py."""

import pytest

from sparkwax.engine.queries.catch_up import (asks_every_batch, bounded, caught_up,
                                      process_all_available, stop_when_caught_up,
                                      wait_caught_up)


def progress(batch, start, end, latest=None, ran=True, rows=0):
    durations = {"addBatch": 5, "triggerExecution": 9} if ran else {"triggerExecution": 0}
    return {"batchId": batch, "numInputRows": rows, "durationMs": durations,
            "sources": [{"startOffset": start, "endOffset": end, "latestOffset": latest}]}


@pytest.mark.parametrize("report, expected", [
    (progress(3, {"logOffset": 2}, {"logOffset": 2}), True),
    (progress(3, '{"logOffset":2}', {"logOffset": 2}), True),        # JSON text
    (progress(3, {"logOffset": 2}, {"logOffset": 2}, {"logOffset": 2}), True),
    (progress(3, {"logOffset": 1}, {"logOffset": 2}, rows=0), False),  # read an empty file
    (progress(3, {"logOffset": 2}, {"logOffset": 2}, {"logOffset": 3}), False),  # more left
    (progress(3, {"logOffset": 2}, {"logOffset": 2}, ran=False), False),  # Spark's idle report
    (None, False),
    ({"batchId": 0, "durationMs": {"addBatch": 1}, "sources": []}, True),
])
def test_caught_up(report, expected):
    assert caught_up(report) is expected


def test_caught_up_needs_every_source():
    report = progress(1, 1, 1)
    report["sources"].append({"startOffset": 4, "endOffset": 5, "latestOffset": 5})
    assert not caught_up(report)


@pytest.mark.parametrize("steps, expected", [
    ([{"time": "processing", "timers": True}], True),
    ([{"time": "processing", "timers": False}], False),
    ([{"time": "event", "timers": True}], False),
    ([{"time": "event", "timers": True, "deadlines": True}], True),
    ([{"time": "event", "timers": True}, {"time": "processing", "timers": True}], True),
    ([], False),
])
def test_asks_every_batch(steps, expected):
    assert asks_every_batch(steps) is expected


def test_bounded_triggers():
    assert bounded({"availableNow": True}) and not bounded({"once": True})  # Spark ends once
    assert not bounded({"availableNow": False}) and not bounded({"processingTime": "1 s"})
    assert not bounded(None) and not bounded({})


class FakeQuery:
    """Reports one progress per poll (``lastProgress``), then stays at the
    last; ``stop()`` ends it."""

    def __init__(self, reports, active_polls=100):
        self.reports, self.polls, self.stopped = list(reports), 0, 0
        self.active_polls = active_polls

    @property
    def isActive(self):
        return not self.stopped and self.polls < self.active_polls

    @property
    def lastProgress(self):
        report = self.reports[min(self.polls, len(self.reports) - 1)] if self.reports else None
        self.polls += 1
        return report

    def stop(self):
        self.stopped += 1


DATA, NO_DATA = progress(0, 0, 1, rows=3), progress(1, 1, 1)


def test_wait_returns_at_the_first_caught_up_batch_after_the_given_one():
    query = FakeQuery([DATA, NO_DATA, progress(2, 1, 1)])
    assert wait_caught_up(query, after=-1, sleep=lambda _: None)
    assert query.polls == 2                       # batch 1 is the first caught up
    query = FakeQuery([DATA, NO_DATA, progress(2, 1, 1)])
    assert wait_caught_up(query, after=1, sleep=lambda _: None)
    assert query.polls == 3                       # batch 1 is not after batch 1


def test_wait_ends_when_the_query_stops():
    query = FakeQuery([DATA], active_polls=4)
    assert not wait_caught_up(query, sleep=lambda _: None)


def test_process_all_available_skips_the_batch_in_flight():
    query = FakeQuery([NO_DATA, NO_DATA, progress(2, 1, 1), progress(3, 1, 1)])
    # called after batch 1: batch 2 may have been planned before the call
    assert process_all_available(query, poll=0)
    assert query.lastProgress["batchId"] == 3


def test_stop_when_caught_up_stops_once():
    query = FakeQuery([DATA, DATA, NO_DATA])
    stop_when_caught_up(query, poll=0).join(5)
    assert query.stopped == 1
    never = FakeQuery([DATA], active_polls=3)
    stop_when_caught_up(never, poll=0).join(5)
    assert never.stopped == 0
