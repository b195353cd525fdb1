"""The Bytewax dataflow of tests/bytewax_flow.py (key_on by user,
stateful_flat_map dedupe, key_on by region, fold_window over tumbling
event-time windows), ported: ``sw.stateful`` twice, ONE streaming query
(Spark 4.0+), against Bytewax 0.21.1's ``run_main`` of the original, row by
row per region.

A stream has no EOF, and Bytewax flushes every open window at its EOF, so
what is compared is what both close on their watermarks: Bytewax runs the
same events with its input aborted after the last one (no EOF flush:
``run_bytewax(..., eof=False)``), Spark runs them one batch a file (the
harness's last ``processAllAvailable`` includes Spark's no-data batch,
which fires the timers the last batch's watermark made due). The last batch
is a visit per region a day later, so both watermarks (Bytewax's per region,
Spark's per query) have passed every window but that batch's own, and the
windows compared are all the others: each ``(window_id, open_time,
close_time, {"visits", "users"})`` of each region, in window-id order. The
late visits (one a batch, late in both systems) are in Bytewax's ``late``
stream and in neither system's windows; Spark drops them in the driver and
counts them (``rows_late``), which is compared with Bytewax's count. The
same rows must also be the offline ``run_flow``'s (tests/unit/testing/
test_bytewax_flow.py compares that with Bytewax at EOF too).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from pyspark import cloudpickle

pytest.importorskip("bytewax.operators")

import bytewax_flow  # noqa: E402
from bytewax_flow import (  # noqa: E402
    INPUT, batches, far_batch, offline, plan, run_bytewax, script, sparkwax_windows)
from kit import HOSTS_AND_BUCKETS, plain_row_value, skip_unless_steps_follow  # noqa: E402
from sparkwax.testing.spark import run_plan_on_spark  # noqa: E402

cloudpickle.register_pickle_by_value(bytewax_flow)   # workers cannot import tests/

pytestmark = [pytest.mark.spark, pytest.mark.lines(since="4.0")]

EVENTS = batches()
BATCHES = EVENTS + [far_batch([e for batch in EVENTS for e in batch])]


@pytest.fixture(autouse=True)
def _a_line_that_chains(spark):
    skip_unless_steps_follow(spark)


@pytest.mark.parametrize("host, buckets, crash_after", [
    (*HOSTS_AND_BUCKETS[0], ()), (*HOSTS_AND_BUCKETS[1], (2,))],
    ids=["per_key", "packed-with-a-restart"])
def test_one_streaming_query_closes_what_bytewax_closes(spark, tmp_path, host, buckets,
                                                        crash_after):
    online = run_plan_on_spark(spark, lambda stream: plan(stream, host, buckets),
                               script(BATCHES, eof=False, crash_after=crash_after),
                               input_schema=INPUT, key="user", workdir=str(tmp_path),
                               metrics_of="visits")
    online.outputs = [(region, tuple(plain_row_value(v) for v in row)) for region, row in online.outputs]

    expected = run_bytewax([e for batch in BATCHES for e in batch], eof=False)
    assert sparkwax_windows(online) == expected.windows
    assert online.metrics.rows_late == sum(map(len, expected.late.values())) > 0
    assert min(len(rows) for rows in expected.windows.values()) >= 4   # something to compare

    _, ported = offline(BATCHES, eof=False, crash_after=crash_after)
    assert sparkwax_windows(online) == sparkwax_windows(ported)
    assert replace(online.metrics, callback_us=0) == replace(ported.metrics, callback_us=0)
