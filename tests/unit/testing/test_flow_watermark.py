"""``run_flow`` runs Spark's one watermark per query (docs/semantics.md,
"Re-keyed steps in one query"): the smallest of the ``EventTime`` steps'
inputs, 0 until rows reach each, kept over a restart that forgets each
input's max; no-data batches while it moves. tests/spark/planning/
test_flow_watermark_spark.py compares the same flow with Spark."""

from __future__ import annotations

from datetime import timedelta

import pytest

import sparkwax as sw
from sparkwax.testing import Batch, Crash, Eof, run_flow
from sparkwax.testing.reference import Counter

from kit import at
from session_flow import HOURLY, SCRIPT, SESSIONS, Sessions, by_country, visit


def hours(result):
    return {(country, row["hour"], row["closed_at"]) for country, row in result.outputs}


def test_the_hours_close_on_the_query_watermark():
    sessions, hourly = run_flow(SCRIPT, SESSIONS, by_country, HOURLY)
    # the same on Spark (the Spark test); each step alone would close more, earlier
    assert hours(hourly) == {("de", at(0), at(101)), ("fr", at(0), at(101)),
                             ("de", at(120), at(232)), ("fr", at(60), at(232))}
    assert hourly.late == 6    # every session end: at its last event, behind the watermark
    assert sessions.late == 0


def test_a_restart_forgets_each_input_max_until_rows_reach_it():
    script = [Batch([visit("u1", "de", 0)]), Batch([visit("u2", "de", 100), visit("u3", "de", 101)]),
              Crash(), Batch([visit("u2", "de", 105), visit("u3", "de", 190)])]
    sessions, _ = run_flow(script, SESSIONS, by_country, HOURLY)
    # after the crash no session starts, so the hourly input has no rows: the
    # watermark stays at 101 - 30 minutes, and u2's session (due at 115) stays open
    assert [(user, row["kind"]) for user, row in sessions.outputs] == \
        [("u1", "start"), ("u2", "start"), ("u3", "start"), ("u1", "end")]
    assert sessions.timers == {"u2": at(115), "u3": at(200)}


def test_an_input_without_rows_holds_every_step_at_zero():
    class EndsOnly(Sessions):
        """Emits only from its timer: the next step's input has no rows."""
        def on_item(self, event):
            super().on_item(event)
            return [], sw.RETAIN

    first = sw.Step.of(EndsOnly, step_id="sessions", time=SESSIONS.time)
    script = [Batch([visit(f"u{minutes}", "de", minutes)]) for minutes in (0, 60, 120, 180)]
    sessions, hourly = run_flow(script, first, by_country, HOURLY)
    assert sessions.metrics.timers_fired == 0 and hourly.outputs == []   # as on Spark
    alone = sw.testing.run(first, script)
    assert alone.metrics.timers_fired > 0   # alone, its own watermark moves


def test_the_no_data_batches_run_while_the_watermark_moves():
    _, hourly = run_flow(SCRIPT, SESSIONS, by_country, HOURLY)
    # data batches, the catch-up before the crash, then the no-data batches after the last
    assert len(hourly.batch_metrics) == 6 + 1 + 1


def test_eof_catches_up_first():
    _, ended = run_flow([*SCRIPT, Eof()], SESSIONS, by_country, HOURLY)
    _, streamed = run_flow(SCRIPT, SESSIONS, by_country, HOURLY)
    assert hours(ended) == hours(streamed)   # Hourly has no on_eof
    caught_up = len(streamed.batch_metrics)
    assert [m.deterministic() for m in ended.batch_metrics[:caught_up]] == \
        [m.deterministic() for m in streamed.batch_metrics]


def test_a_rekey_that_raises_names_both_steps_and_the_key():
    with pytest.raises(sw.CallbackError, match=r"step 'counter', key 'u1', rekey .* between "
                       r"steps 'counter' and 'regions' raised ZeroDivisionError") as caught:
        run_flow([Batch([("u1", "x")])], sw.Step.of(Counter, step_id="counter"),
                 lambda key, n: (key, n / 0), sw.Step.of(Counter, step_id="regions"))
    assert isinstance(caught.value.__cause__, ZeroDivisionError) and caught.value.value == 1


def test_a_rekey_must_return_a_pair_or_none():
    with pytest.raises(sw.ReturnValueError, match=r"must return \(next key, next value\) "
                       r"or None .* \(got 'eu'\)"):
        run_flow([Batch([("u1", "x")])], Counter, lambda key, n: "eu", Counter)
