"""A Bytewax 0.21.1 dataflow of two stateful steps, re-keyed in between
(tests/bytewax_flow.py: key_on by user, stateful_flat_map dedupe, key_on by
region, fold_window over tumbling event-time windows), run by Bytewax's own
``run_main`` and, ported, by ``run_flow``: the same rows per key, each
step's. The Spark run of the port, one streaming query, is
tests/spark/planning/test_bytewax_flow_spark.py.

What is compared: every window result of the last step, per region, as
``(window_id, open_time, close_time, {"visits", "users"})`` in window-id order
(a window has one result), every first visit of the first step, per user,
in emission order, and the late values: Bytewax reports each on its
``late`` stream, sparkwax drops it before the window logic and counts it
(``rows_late``); neither puts it in a window. At EOF (Bytewax's EOF flush,
``Eof()`` offline) every window is compared; without EOF (Bytewax's input
aborts after its last item, the offline run ends with its no-data batch)
the windows each system closed on its watermark, which a last batch a day
later moves past every window but that batch's own in both. The late
values are late in both systems (behind the region's latest visit, so
behind Bytewax's clock of the region too); where the clocks differ is
pinned by the last test (docs/semantics.md, "A dataflow of two steps")."""

from __future__ import annotations

import functools
from datetime import timedelta

import pytest

pytest.importorskip("bytewax.operators")

from bytewax_flow import (  # noqa: E402
    REGIONS, batches, far_batch, offline, run_bytewax, sparkwax_windows)
from kit import T0  # noqa: E402

TEN = timedelta(minutes=10)
EVENTS = batches()
BATCHES = EVENTS + [far_batch([e for batch in EVENTS for e in batch])]
ALL = [event for batch in BATCHES for event in batch]


@functools.lru_cache(maxsize=None)
def bytewax(eof: bool):
    return run_bytewax(ALL, eof=eof)


def _window(number):
    return (number, T0 + number * TEN, T0 + (number + 1) * TEN)


def test_the_events_make_the_comparison_worth_it():
    """Duplicates to drop, late values, values out of order inside a window,
    every region with several windows of several visits (else equal outputs
    prove little)."""
    run = bytewax(True)
    assert sum(map(len, run.firsts.values())) < len(ALL) - 10
    assert sum(map(len, run.late.values())) == len(EVENTS) - 1   # one a batch but the first
    assert set(run.windows) == set(run.late) == set(REGIONS.values())
    for rows in run.windows.values():
        assert len(rows) >= 4 and max(row[3]["visits"] for row in rows) >= 3
    # somewhere a window's users (time order) are not its visits' arrival order
    late = {(e["user"], e["ts"]) for pairs in run.late.values() for _, e in pairs}
    seen, arrival = set(), {}
    for event in ALL:
        if (event["user"], event["page"]) not in seen:
            seen.add((event["user"], event["page"]))
            if (event["user"], event["ts"]) not in late:
                arrival.setdefault((event["region"], (event["ts"] - T0) // TEN),
                                   []).append(event["user"])
    assert any(row[3]["users"] != arrival[(region, row[0])]
               for region, rows in run.windows.items() for row in rows)
    assert all(sorted(row[3]["users"]) == sorted(arrival[(region, row[0])])
               for region, rows in run.windows.items() for row in rows)


@pytest.mark.parametrize("crash_after", [(), (0, 2, 4)], ids=["calm", "crashes"])
def test_the_port_equals_bytewax_at_eof(crash_after):
    run = bytewax(True)
    first, last = offline(BATCHES, eof=True, crash_after=crash_after)
    assert sparkwax_windows(last) == run.windows
    assert first.by_key == run.firsts
    assert last.metrics.rows_late == sum(map(len, run.late.values()))
    assert first.metrics.rows_late == 0


def test_the_port_closes_what_bytewax_closes_before_eof():
    """Without EOF each closes the windows its watermark passed: a day later
    every region's clock passed every window but the far batch's own."""
    at_eof, before_eof = bytewax(True), bytewax(False)
    first, last = offline(BATCHES, eof=False)
    assert sparkwax_windows(last) == before_eof.windows
    assert first.by_key == before_eof.firsts
    assert last.metrics.rows_late == sum(map(len, before_eof.late.values()))
    left_open = {region: [row for row in rows if row not in before_eof.windows[region]]
                 for region, rows in at_eof.windows.items()}
    assert left_open == {
        e["region"]: [(*_window((e["ts"] - T0) // TEN), {"visits": 1, "users": [e["user"]]})]
        for e in BATCHES[-1]}


def _visit(user, minutes, page):
    return {"user": user, "region": REGIONS[user], "ts": T0 + timedelta(minutes=minutes),
            "page": page}


def test_where_the_clocks_differ():
    """Bytewax's EventClock keeps a watermark per key (region), also moved by
    the system time; Spark's is the query's, moved by data only. Here us runs
    30 minutes ahead of eu: sparkwax closes eu's first window on the query's
    watermark (26 minutes) without EOF, Bytewax does not, and a later eu
    visit at 8 minutes is on time for Bytewax (eu's clock is at 1 - 5
    minutes) but behind the watermark for sparkwax, which drops it and
    counts it late."""
    batches = [[_visit("ann", 1, 1), _visit("dan", 2, 1)], [_visit("dan", 31, 2)],
               [_visit("bob", 8, 1)]]
    flat = [event for batch in batches for event in batch]

    before_eof = run_bytewax(flat, eof=False)
    _, ported = offline(batches, eof=False)
    assert before_eof.windows == {"us": [(*_window(0), {"visits": 1, "users": ["dan"]})]}
    assert sparkwax_windows(ported) == {
        "us": [(*_window(0), {"visits": 1, "users": ["dan"]})],
        "eu": [(*_window(0), {"visits": 1, "users": ["ann"]})]}
    assert ported.metrics.rows_late == 1 and before_eof.late == {}

    at_eof = run_bytewax(flat)
    _, ported = offline(batches, eof=True)
    assert at_eof.windows["eu"] == [(*_window(0), {"visits": 2, "users": ["ann", "bob"]})]
    assert sparkwax_windows(ported)["eu"] == [(*_window(0), {"visits": 1, "users": ["ann"]})]
    assert sparkwax_windows(ported)["us"] == at_eof.windows["us"] == [
        (*_window(0), {"visits": 1, "users": ["dan"]}),
        (*_window(3), {"visits": 1, "users": ["dan"]})]
