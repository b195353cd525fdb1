"""``sw.chain``: same-key stages as one step. A stage that passes every item
through (and holds no state) leaves the other stage's run as it is, timers,
DISCARDs, crashes and EOF included, on either side of it; the stages'
errors name the stage and the key; a chain made wrong is a ConfigError."""

from __future__ import annotations

import pickle

import cloudpickle
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparkwax as sw
import sparkwax.testing
from sparkwax.errors import CallbackError
from sparkwax.step import Step
from sparkwax.testing import Batch, Crash, Eof, run, run_bounded
from sparkwax.testing.reference import Accumulator, Counter, TransitionRecorder
from sparkwax.testing.strategies import keyed_items, scripts, timestamped_items

from kit import Evens, PassThrough, at, recorder_commands

RECORDER_COMMANDS = recorder_commands()

TIME = sw.EventTime("ts", watermark="2 minutes")


def recorder(step_id="rec"):
    return Step.of(TransitionRecorder, step_id=step_id)


def passing(step_id="pass"):
    return Step.of(PassThrough, step_id=step_id)


def same_run(chained, alone, stage_id):
    assert chained.by_key == alone.by_key
    assert chained.timers == alone.timers
    assert chained.snapshots == {key: {stage_id: snapshot}
                                 for key, snapshot in alone.snapshots.items()}
    assert chained.metrics.keys_created == alone.metrics.keys_created
    assert chained.metrics.keys_discarded == alone.metrics.keys_discarded


@settings(max_examples=80, deadline=None)
@given(script=scripts(items=keyed_items(keys=st.sampled_from(["a", "b", 3]), values=RECORDER_COMMANDS,
                                        max_size=12)),
       restore=st.sampled_from(["always", "on_crash"]),
       first=st.booleans())
def test_a_pass_through_stage_leaves_the_run_as_it_is(script, restore, first):
    stages = (passing(), recorder()) if first else (recorder(), passing())
    same_run(run(sw.chain(*stages), script, restore=restore),
             run(TransitionRecorder, script, restore=restore), "rec")


@settings(max_examples=50, deadline=None)
@given(script=scripts(items=timestamped_items(keys=st.sampled_from(["a", "b"]),
                                              values=st.integers(0, 30)), time=TIME),
       restore=st.sampled_from(["always", "on_crash"]))
def test_event_time_timers_of_a_chained_stage(script, restore):
    # Accumulator arms an event-time timer per key; after a pass-through
    # stage it fires at the same watermarks, late rows dropped as before.
    chained = run(sw.chain(passing(), Step.of(Accumulator, step_id="acc")), script,
                  restore=restore, time=TIME)
    same_run(chained, run(Accumulator, script, restore=restore, time=TIME), "acc")
    assert chained.late == run(Accumulator, script, restore=restore, time=TIME).late


@settings(max_examples=50, deadline=None)
@given(items=keyed_items(keys=st.sampled_from(["a", "b"]), values=RECORDER_COMMANDS, max_size=12))
def test_bounded_input(items):
    chained = run_bounded(sw.chain(recorder(), passing()), items)
    assert chained.by_key == run_bounded(TransitionRecorder, items).by_key


def test_emits_flow_through_the_stages_each_with_its_own_snapshot():
    evens_then_count = sw.chain(Step.of(Evens, step_id="evens"),
                                Step.of(Counter, step_id="count"))
    # (the third batch reaches only the first stage: the second keeps its snapshot)
    script = [Batch([("k", 1), ("k", 2), ("j", 3)]), Crash(), Batch([("k", 4), ("k", 5)]),
              Batch([("k", 7)])]
    result = run(evens_then_count, script)
    assert result.by_key == {"k": [1, 2]}
    assert result.snapshots == {"k": {"evens": 3, "count": 2}, "j": {"evens": 1}}
    # at EOF the first stage's on_eof emits reach the second as items, then its own on_eof
    assert run(evens_then_count, [*script, Eof()]).by_key == {"k": [1, 2, 3], "j": [1]}
    assert result.step_id == "stateful:Evens>Counter"


def test_a_chain_discards_when_no_stage_holds_a_logic():
    class Once(PassThrough):
        pass

    result = run(sw.chain(Step.of(Once, step_id="a"), passing("b")),
                 [Batch([("k", {"id": 1})])])
    assert result.snapshots == {} and result.metrics.keys_created == 0


class Fails(Counter):
    def on_item(self, value):
        if value == 13:
            raise ValueError("unlucky")
        return super().on_item(value)


def test_a_stage_error_names_the_stage_and_the_key():
    with pytest.raises(CallbackError) as raised:
        run(sw.chain(passing(), Step.of(Fails, step_id="count")), [Batch([("k", 1), ("k", 13)])])
    assert (raised.value.step_id, raised.value.key, raised.value.callback) == \
        ("count", "k", "on_item")
    # a stage's snapshot that cannot be rebuilt names it too
    class Broken(Counter):
        def __init__(self, resume=None):
            if resume == 1:
                raise RuntimeError("cannot resume")
            super().__init__(resume)

    with pytest.raises(sw.BuilderError) as built:
        run(sw.chain(passing(), Step.of(Broken, step_id="broken")),
            [Batch([("k", 1)]), Batch([("k", 2)])])
    assert (built.value.step_id, built.value.key) == ("broken", "k")


def test_a_chain_ships_as_a_builder():
    chain = sw.chain(Step.of(Evens, step_id="evens"), Step.of(Counter, step_id="count"))
    assert run(chain, [Batch([("k", 2)])]).by_key == {"k": [1]} and chain._drivers
    copy = pickle.loads(cloudpickle.dumps(chain))  # each process makes its own drivers
    assert copy == chain and copy._drivers is None
    assert run(copy, [Batch([("k", 2)])]).by_key == {"k": [1]}
    assert chain != sw.chain(Step.of(Evens, step_id="evens"), Step.of(Counter, step_id="n"))
    assert repr(chain) == "chain('evens', 'count')" and hash(copy) == hash(chain)


class Relay(sw.StatefulLogic):
    """Passes its items on; ``relay_notify`` sets its timer, whose
    ``on_notify`` emits ``{"id": 100}`` downstream."""

    def __init__(self, resume=None):
        self.notify = resume

    def on_item(self, value):
        self.notify = value.get("relay_notify", self.notify)
        return [value], sw.RETAIN

    def notify_at(self):
        return self.notify

    def on_notify(self):
        self.notify = None
        return [{"id": 100}], sw.RETAIN

    def snapshot(self):
        return self.notify


def test_every_due_stage_fires_in_the_activation_of_the_earliest():
    # stage 1's timer (minute 1) and stage 2's (minute 2) are both due at
    # minute 5: stage 2 fires before the item stage 1's on_notify sends it
    chain = sw.chain(Step.of(Relay, step_id="relay"), recorder())
    result = run(chain, [Batch([("k", {"id": 1, "relay_notify": at(1), "notify": at(2)})],
                               now=at(0)),
                         sw.testing.Tick(now=at(5))])
    assert result.by_key == {"k": [("item", 1, 1), ("notify", at(2), 1), ("item", 100, 1)]}
    assert result.metrics.timers_fired == 1  # one on_notify of the chained step


class Raises(Relay):
    """Raises in the callback its item names."""

    def on_item(self, value):
        self.fail = value.get("fail")
        if self.fail == "notify_at":
            self.notify = "not a datetime"
        return super().on_item(value)

    def on_notify(self):
        raise RuntimeError("on_notify")

    def on_eof(self):
        raise RuntimeError("on_eof")

    def snapshot(self):
        if self.fail == "snapshot":
            raise RuntimeError("snapshot")
        return super().snapshot()


@pytest.mark.parametrize("fail, callback, script", [
    ("on_notify", "on_notify", [Batch([("k", {"id": 1, "relay_notify": at(1)})], now=at(0)),
                                sw.testing.Tick(now=at(5))]),
    ("on_eof", "on_eof", [Batch([("k", {"id": 1})]), Eof()]),
    ("snapshot", "snapshot", [Batch([("k", {"id": 1, "fail": "snapshot"})])]),
    ("notify_at", "notify_at", [Batch([("k", {"id": 1, "fail": "notify_at"})])]),
])
def test_each_callback_of_a_stage_names_the_stage_and_the_key(fail, callback, script):
    with pytest.raises(sw.LogicError) as raised:
        run(sw.chain(passing(), Step.of(Raises, step_id="raises")), script)
    assert (raised.value.step_id, raised.value.key, raised.value.callback) == \
        ("raises", "k", callback)


def test_a_stage_may_be_a_batch_logic_or_limited():
    from sparkwax.testing.reference import BatchCounter

    chain = sw.chain(Step.of(Evens, step_id="evens", max_state_bytes=64),
                     Step.of(BatchCounter, step_id="batch", batch=True))
    assert run(chain, [Batch([("k", 2), ("k", 4)])]).by_key == {"k": [1, 2]}


@pytest.mark.parametrize("stages, message", [
    ((Counter,), "two or more stages"),
    ((Counter, Counter), r"\['stateful:Counter'\] is given twice"),
    ((Step.of(Counter, step_id="a", order_by="id"), passing()), "stage 'a': a stage's Step "
                                                                  "sets only batch, "
                                                                  "max_state_bytes, step_id;"),
    ((Step.of(Counter, step_id="a", ttl="1 hour"), passing()), "stage 'a'"),
])
def test_a_chain_made_wrong_is_a_config_error(stages, message):
    with pytest.raises(sw.ConfigError, match=message):
        sw.chain(*stages)


def test_a_stage_with_processing_deadlines_is_refused():
    class Deadline(Counter):
        def processing_notify_at(self):
            return None

    with pytest.raises(sw.ConfigError, match="stage '.*Deadline': processing deadlines"):
        sw.chain(Deadline, passing())
    with pytest.raises(sw.ConfigError, match="step 'd': .*Deadline has processing_notify_at"):
        sw.chain(Step.of(Deadline, step_id="d"), passing())


def test_a_snapshot_that_is_not_a_chains_is_a_builder_error():
    from sparkwax._driver import Driver
    from sparkwax.recovery import encode

    driver = Driver(Step.of(sw.chain(recorder(), passing()), step_id="c"))
    with pytest.raises(sw.BuilderError, match="a chain's snapshot is a dict of its stages' "
                                              "snapshots, got int") as raised:
        driver.activate("k", encode(5, step_id="c", key="k"), [], 0)
    assert (raised.value.step_id, raised.value.key) == ("c", "k")


@pytest.mark.parametrize("options", [{"max_state_bytes": 10_000}, {"ttl": "1 hour"}])
def test_a_chained_step_with_a_state_limit_or_ttl(options):
    # the step's wrappers hold the chain's logic: its stages still name the key
    chain = sw.chain(passing(), Step.of(Fails, step_id="count"))
    assert run(chain, [Batch([("k", 1), ("k", 2)])], **options).by_key == {"k": [1, 2]}
    with pytest.raises(CallbackError) as raised:
        run(chain, [Batch([("k", 13)])], **options)
    assert (raised.value.step_id, raised.value.key) == ("count", "k")


def test_a_chain_asks_spark_for_timers_even_when_no_stage_may():
    # Its class has notify_at, so Step.uses_timers says yes: a checkpoint records
    # the timeout Spark runs it with, and Spark allows no change of it on restart,
    # so a chain of timer-free stages keeps asking (docs/semantics.md, "Chained
    # stages"): a chain started by an older sparkwax restarts as it was.
    assert Step.of(sw.chain(passing(), Counter)).uses_timers() is True
    assert Step.of(Counter).uses_timers() is False
