"""Each stage of ``sw.chain`` has its own counts (``RunResult.stage_metrics``,
one per micro-batch in ``batch_stage_metrics``), by the step's counting rule
applied to the stage: a stage beside a pass-through one counts as the same
logic run alone; TTL expiry and DISCARDs count where the stage's state goes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparkwax as sw
from sparkwax._driver import Clocks, Driver, KeyBatch
from sparkwax.step import Step
from sparkwax.testing import Batch, Crash, Eof, run, run_bounded
from sparkwax.testing.reference import Accumulator, Counter, TransitionRecorder
from sparkwax.testing.strategies import keyed_items, scripts, timestamped_items

from kit import T0, Evens, PassThrough, recorder_commands

RECORDER_COMMANDS = recorder_commands()
TIME = sw.EventTime("ts", watermark="2 minutes")


def counts(metrics):
    return metrics.deterministic()


def passing():
    return Step.of(PassThrough, step_id="pass")


@settings(max_examples=80, deadline=None)
@given(script=scripts(items=keyed_items(keys=st.sampled_from(["a", "b", 3]),
                                        values=RECORDER_COMMANDS, max_size=12)),
       restore=st.sampled_from(["always", "on_crash"]), first=st.booleans())
def test_a_stage_beside_a_pass_through_counts_as_its_logic_alone(script, restore, first):
    rec = Step.of(TransitionRecorder, step_id="rec")
    chained = run(sw.chain(*((passing(), rec) if first else (rec, passing()))), script,
                  restore=restore)
    alone = run(TransitionRecorder, script, restore=restore)
    assert [counts(batch["rec"]) for batch in chained.batch_stage_metrics] == \
        [counts(batch) for batch in alone.batch_metrics]
    assert counts(chained.stage_metrics["rec"]) == counts(alone.metrics)
    through = chained.stage_metrics["pass"]  # every item it was handed, none kept
    assert (through.keys_created, through.keys_discarded, through.timers_fired) == (0, 0, 0)
    assert through.rows_in == through.emits == (
        alone.metrics.rows_in if first else alone.metrics.emits)
    stage_time = sum(m.callback_us for m in chained.stage_metrics.values())
    assert stage_time <= chained.metrics.callback_us  # the stages' time is the step's


@settings(max_examples=50, deadline=None)
@given(script=scripts(items=timestamped_items(keys=st.sampled_from(["a", "b"]),
                                              values=st.integers(0, 30)), time=TIME),
       restore=st.sampled_from(["always", "on_crash"]))
def test_no_stage_sees_a_late_row(script, restore):
    chained = run(sw.chain(passing(), Step.of(Accumulator, step_id="acc")), script,
                  restore=restore, time=TIME)
    alone = run(Accumulator, script, restore=restore, time=TIME)
    expected = counts(alone.metrics)
    expected["rows_in"] -= expected["rows_late"]  # the chained step drops and counts them
    expected["rows_late"] = 0
    assert counts(chained.stage_metrics["acc"]) == expected
    assert chained.metrics.rows_late == alone.metrics.rows_late


CHAIN = sw.chain(Step.of(Evens, step_id="evens"), Step.of(Counter, step_id="count"))


def test_each_stage_counts_its_own_items_emits_and_keys():
    result = run(CHAIN, [Batch([("k", 1), ("k", 2), ("j", 3)]), Crash(),
                         Batch([("k", 4), ("k", 5)]), Batch([("j", 7)])])
    evens, count = zip(*[(b["evens"], b["count"]) for b in result.batch_stage_metrics])
    assert [(m.rows_in, m.emits, m.keys_created) for m in evens] == [(3, 1, 2), (2, 1, 0),
                                                                      (1, 0, 0)]
    # j's odd values never reach the second stage: it holds no state for j
    assert [(m.rows_in, m.emits, m.keys_created) for m in count] == [(1, 1, 1), (1, 1, 0),
                                                                      (0, 0, 0)]
    assert all(m.rows_late == m.processing_timers_fired == 0 for m in evens + count)


def test_a_stage_that_discards_counts_its_key_out_and_back_in():
    class CountsToTwo(Counter):
        """Counts; DISCARDs at the second value (its state goes)."""

        def on_item(self, value):
            emits, _ = super().on_item(value)
            return emits, self.count == 2

    chain = sw.chain(Step.of(CountsToTwo, step_id="two"), Step.of(Counter, step_id="all"))
    result = run(chain, [Batch([("k", "a")]), Batch([("k", "b")]), Batch([("k", "c")])])
    two = [(m.keys_created, m.keys_discarded) for m in
           (b["two"] for b in result.batch_stage_metrics)]
    assert two == [(1, 0), (0, 1), (1, 0)]
    assert [b["all"].keys_created for b in result.batch_stage_metrics] == [1, 0, 0]
    assert result.metrics.keys_discarded == 0  # the chain kept the key throughout


def test_a_ttl_expiry_discards_the_key_in_every_stage_holding_it():
    chain = sw.chain(Step.of(Counter, step_id="first"), Step.of(Counter, step_id="second"))

    def item(key, minute):
        return (key, {"ts": T0 + timedelta(minutes=minute)})

    # j's row at minute 30 moves the watermark past k's expiry (minute 10): the
    # no-data batch after it expires k in both stages
    result = run(sw.Step.of(chain, time=TIME, ttl="10 minutes"),
                 [Batch([item("k", 0)]), Batch([item("j", 30)])])
    pairs = [((b["first"].keys_created, b["first"].keys_discarded),
              (b["second"].keys_created, b["second"].keys_discarded))
             for b in result.batch_stage_metrics]
    steps = [(m.keys_created, m.keys_discarded, m.timers_fired) for m in result.batch_metrics]
    assert steps == [(1, 0, 0), (1, 0, 0), (0, 1, 1)]
    assert pairs == [((1, 0), (1, 0)), ((1, 0), (1, 0)), ((0, 1), (0, 1))]
    assert result.snapshots.keys() == {"j"}


@settings(max_examples=40, deadline=None)
@given(items=keyed_items(keys=st.sampled_from(["a", "b"]), values=RECORDER_COMMANDS, max_size=12))
def test_bounded_input_counts_the_stages_too(items):
    chained = run_bounded(sw.chain(Step.of(TransitionRecorder, step_id="rec"), passing()), items)
    alone = run_bounded(TransitionRecorder, items)
    assert counts(chained.stage_metrics["rec"]) == counts(alone.metrics)
    assert chained.batch_stage_metrics == [chained.stage_metrics]


def test_the_driver_hands_each_call_its_own_stage_counts():
    driver = Driver(Step.of(CHAIN))
    first = driver.activate_keys(KeyBatch(["k"], [[2, 4]]), Clocks(0))
    second = driver.activate_keys(KeyBatch(["k"], [[6]], stored=[first.states[0]]), Clocks(0))
    assert driver.stage_ids == ("evens", "count")
    assert [m.rows_in for m in first.stages] == [2, 2]
    assert [m.rows_in for m in second.stages] == [1, 1]  # not the first call's again
    assert Driver(Step.of(Counter)).activate_keys(KeyBatch(["k"], [[1]]), Clocks(0)).stages == ()


def test_a_stage_error_leaves_no_count_for_the_next_call():
    class Fails(Counter):
        def on_item(self, value):
            if value == 13:
                raise ValueError("unlucky")
            return super().on_item(value)

    driver = Driver(Step.of(sw.chain(passing(), Step.of(Fails, step_id="count"))))
    with pytest.raises(sw.CallbackError):
        driver.activate_keys(KeyBatch(["k"], [[1, 13]]), Clocks(0))
    after = driver.activate_keys(KeyBatch(["j"], [[5]]), Clocks(0))
    assert [m.rows_in for m in after.stages] == [1, 1]


def test_eof_reaches_every_stage():
    result = run(CHAIN, [Batch([("k", 2)]), Eof()])
    # at EOF the first stage's on_eof emit (100) is the second's item
    assert [b["count"].rows_in for b in result.batch_stage_metrics] == [1, 1]
    assert [b["evens"].emits for b in result.batch_stage_metrics] == [1, 1]


def test_a_stage_counts_every_timer_of_the_call():
    """Two keys' timers fire in the same no-data batch: the stage counts both."""
    def item(key, minute):
        return (key, {"ts": T0 + timedelta(minutes=minute), "value": 1})

    chain = sw.chain(passing(), Step.of(Accumulator, step_id="acc"))
    script = [Batch([item("a", 0), item("b", 0)]), Batch([item("c", 30)])]
    result = run(sw.Step.of(chain, time=TIME), script)
    fired = [batch["acc"].timers_fired for batch in result.batch_stage_metrics]
    assert max(fired) >= 2 and sum(fired) == result.metrics.timers_fired


def test_a_stage_counts_the_time_of_each_of_its_passes():
    import time

    class Slow(PassThrough):
        def on_item(self, value):
            time.sleep(0.002)
            return super().on_item(value)

    result = run(sw.chain(Step.of(Slow, step_id="slow"), passing()),
                 [Batch([("k", n) for n in range(5)])])
    slow = result.stage_metrics["slow"].callback_us
    assert type(slow) is int and slow >= 5 * 2000  # every pass's, not the last one's
    assert 0 <= result.stage_metrics["pass"].callback_us < slow <= result.metrics.callback_us


def test_a_shipped_chain_starts_counting_from_zero():
    import pickle

    chain = sw.chain(passing(), Step.of(Counter, step_id="count"))
    chain.counts.rows = 7  # counted in this process, not yet taken
    assert pickle.loads(pickle.dumps(chain)).counts.take()[0].rows_in == 0


def test_each_of_three_stages_counts_its_upstreams_emits_as_its_items():
    chain = sw.chain(Step.of(Evens, step_id="evens"), passing(),
                     Step.of(Counter, step_id="count"))
    stages = run(chain, [Batch([("k", n) for n in range(1, 8)])]).stage_metrics
    assert [(m.rows_in, m.emits) for m in stages.values()] == [(7, 3), (3, 3), (3, 3)]
