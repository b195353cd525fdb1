"""A two-step event-time dataflow on Spark equals the offline ``run_flow``
(tests/session_flow.py), on both hosts: the query's one watermark, seen by
each step mid-stream, after a restart and in the no-data batches after the
last file, so also the hours that close only there."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pyspark import cloudpickle

import session_flow
from kit import HOSTS_AND_BUCKETS, per_key, skip_unless_steps_follow
from session_flow import HOURLY, INPUT, SCRIPT, SESSIONS, by_country
from sparkwax.testing import run_flow
from sparkwax.testing.spark import run_plan_on_spark

import sparkwax as sw

cloudpickle.register_pickle_by_value(session_flow)   # workers cannot import tests/

pytestmark = [pytest.mark.spark, pytest.mark.lines(since="4.0")]


@pytest.fixture(autouse=True)
def _a_line_that_chains(spark):
    skip_unless_steps_follow(spark)


@pytest.mark.parametrize("host, buckets", HOSTS_AND_BUCKETS)
def test_two_event_time_steps_share_the_query_watermark_as_offline(spark, tmp_path, host,
                                                                   buckets):
    offline = run_flow(SCRIPT, SESSIONS, by_country, HOURLY)

    def plan(stream):
        sessions = sw.stateful(stream, key="user", step=SESSIONS, host=host, buckets=buckets)
        return sw.stateful(sessions.select("country", "kind", "ts", "seen_at"),
                           key="country", step=HOURLY, host=host, buckets=buckets)

    online = run_plan_on_spark(spark, plan, SCRIPT, input_schema=INPUT, key="user",
                               workdir=str(tmp_path), metrics_of="hourly")
    assert per_key(online) == {country: [tuple(row.values()) for row in rows]
                               for country, rows in offline[1].by_key.items()}
    assert replace(online.metrics, callback_us=0) == replace(offline[1].metrics, callback_us=0)
    assert offline[1].late > 0 and offline[1].metrics.timers_fired >= 4  # worth comparing
