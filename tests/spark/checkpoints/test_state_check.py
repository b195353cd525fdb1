"""check_state / sparkwax state check: every stored snapshot restored through a
new logic on the executors, both hosts; failures counted per error class
with example keys, the recorded step id; exit codes of the command."""

import os
from pathlib import Path

import pytest

import sparkwax as sw
from sparkwax import recovery
from sparkwax.engine.checkpoints.state.restore_check import check_state

from kit import each_spark_host, state_cli

KEYS = ["k1", "k2", "k3", "k4", "k5"]


class SumV1(sw.StatefulLogic):
    """v1 stores a tuple (total, count)."""

    def __init__(self, resume=None):
        self.total, self.count = resume or (0, 0)

    def on_item(self, value):
        self.total += value
        self.count += 1
        return [self.total], sw.RETAIN

    def snapshot(self):
        return (self.total, self.count)

    def notify_at(self):  # timers (none set): SumV2BadTimer's notify_at is no shape change
        return None


def _on_executor():
    from pyspark import TaskContext

    if TaskContext.get() is None:  # what would happen if the check ran on the driver
        raise RuntimeError("restored on the driver")


class SumV2Compatible(SumV1):
    """v2 stores a dict and migrates v1's tuples."""

    restored = []  # appended to where the builder runs: stays empty on the driver

    def __init__(self, resume=None):
        _on_executor()
        SumV2Compatible.restored.append(resume)
        if isinstance(resume, tuple):
            resume = {"total": resume[0], "count": resume[1]}
        resume = resume or {"total": 0, "count": 0}
        super().__init__((resume["total"], resume["count"]))

    def snapshot(self):
        return {"total": self.total, "count": self.count}


class SumV2Dict(SumV2Compatible):
    """v2 that forgot v1: it expects a dict."""

    def __init__(self, resume=None):
        _on_executor()
        resume = resume or {"total": 0, "count": 0}
        SumV1.__init__(self, (resume["total"], resume["count"]))


class SumV2BadTimer(SumV2Compatible):
    """v2 whose notify_at returns a naive datetime for large totals."""

    def notify_at(self):
        from datetime import datetime

        return datetime(2024, 1, 1) if self.total >= 3 else None


@pytest.fixture(scope="module")
def checkpoints(spark, tmp_path_factory):
    made = {}
    for host in ("per_key", "packed"):
        workdir = tmp_path_factory.mktemp(f"check-{host}")
        source = workdir / "in"
        source.mkdir()
        (source / "batch-0.json").write_text("".join(
            f'{{"key": "{key}", "value": {n}}}\n' for n, key in enumerate(KEYS, 1)))
        stream = spark.readStream.schema("key string, value long").json(str(source))
        out = sw.stateful(stream, key="key", builder=SumV1, value="value",
                          output_schema="total long", step_id="sums", host=host)
        query = sw.start(out, checkpoint=str(workdir / "ck"), path=str(workdir / "out"),
                         stop_on_signal=False, trigger={"availableNow": True})
        query.awaitTermination()
        made[host] = str(workdir / "ck")
    return made


@each_spark_host
def test_a_compatible_logic_restores_every_key_on_the_executors(spark, checkpoints, host,
                                                                 monkeypatch):
    decoded_here = []
    real_decode = recovery.decode
    monkeypatch.setattr(recovery, "decode",
                        lambda *a, **k: decoded_here.append(1) or real_decode(*a, **k))
    result = check_state(spark, checkpoints[host], SumV2Compatible)
    assert (result.keys_ok, result.keys_failed, result.failures) == (len(KEYS), 0, [])
    assert result.ok and "every key restores" in str(result)
    # the state was not collected: no snapshot was decoded nor restored in this process
    assert decoded_here == [] and SumV2Compatible.restored == []


@each_spark_host
def test_an_incompatible_logic_names_the_keys_and_the_error_class(spark, checkpoints, host):
    result = check_state(spark, checkpoints[host], SumV2Dict, examples=2)
    assert (result.keys_ok, result.keys_failed) == (0, len(KEYS))
    [failure] = result.failures
    assert failure.error_class == "BuilderError" and failure.count == len(KEYS)
    assert failure.example_keys == ["'k1'", "'k2'"]  # the first keys, sorted
    assert failure.first_message.startswith(
        "step 'sums', key 'k1', builder(resume_state): the builder raised TypeError(")
    report = str(result)
    assert "5 fail, 0 restore" in report and "BuilderError: 5 key(s), e.g. 'k1', 'k2'" in report


def test_timers_are_validated_as_the_driver_does(spark, checkpoints):
    result = check_state(spark, checkpoints["packed"], SumV2BadTimer)
    assert (result.keys_ok, result.keys_failed) == (2, 3)  # totals 1, 2 | 3, 4, 5
    [failure] = result.failures
    assert failure.error_class == "NotifyAtError"
    assert failure.example_keys == ["'k3'", "'k4'", "'k5'"]
    assert "notify_at() must return None or an aware datetime" in failure.first_message


def test_the_command_prints_the_report_and_exits_0_1_2(spark, checkpoints, tmp_path, capsys):
    app = tmp_path / "sums_v2.py"
    app.write_text(Path(__file__).read_text())  # this module: its classes, from a file
    checkpoint = checkpoints["per_key"]
    assert state_cli(["check", checkpoint, f"{app}:SumV2Compatible"]) == 0
    assert "5 stored key(s) checked with SumV2Compatible: every key restores" in \
        capsys.readouterr().out
    assert state_cli(["check", checkpoint, f"{app}:SumV2Dict", "--examples", "1"]) == 1
    out = capsys.readouterr().out
    assert "BuilderError: 5 key(s), e.g. 'k1'\n    step 'sums', key 'k1'" in out
    assert state_cli(["check", checkpoint, f"{app}:NoSuchLogic"]) == 2
    assert "has no 'NoSuchLogic'" in capsys.readouterr().err
    assert state_cli(["check", os.path.join(str(tmp_path), "nothing"), f"{app}:SumV2Dict"]) == 2


class IdleNoDeadline(sw.StatefulLogic):
    """An event-time sum; v2 of ``Idle`` without its processing deadline:
    sw.start refuses it on Idle's checkpoint."""

    def __init__(self, resume=None):
        self.total = resume or 0

    def on_item(self, value):
        self.total += value["value"]
        return [self.total], sw.RETAIN

    def notify_at(self):
        return None

    def snapshot(self):
        return self.total


class Idle(IdleNoDeadline):
    """With a processing deadline beside its timer (a two-clock step): the
    checkpoint records deadlines."""

    def processing_notify_at(self):
        return None


TWO_CLOCK_TIME = sw.EventTime("ts", watermark="1 minute")


def _two_clock_stream(spark, workdir: Path):
    source = workdir / "in"
    source.mkdir(exist_ok=True)
    (source / "batch-0.json").write_text("".join(
        f'{{"key": "{key}", "value": {n}, "ts": "2024-01-01T00:00:0{n}Z"}}\n'
        for n, key in enumerate(KEYS, 1)))
    return spark.readStream.schema("key string, value long, ts timestamp").json(str(source))


def _two_clock_step(stream, builder):
    return sw.stateful(stream, key="key", builder=builder, output_schema="total long",
                       time=TWO_CLOCK_TIME, step_id="idle")


def test_a_shape_sw_start_refuses_fails_the_check_with_its_error(spark, tmp_path, capsys):
    """The issue's case: a logic that drops its deadlines passed the check,
    then sw.start refused it. Now the check compares the shape as sw.start
    does (describe_changes) and fails with sw.start's own error, exit 1."""
    stream = _two_clock_stream(spark, tmp_path)
    checkpoint = str(tmp_path / "ck")
    sw.start(_two_clock_step(stream, Idle), checkpoint=checkpoint, format="noop",
             stop_on_signal=False, trigger={"availableNow": True}).awaitTermination()
    with pytest.raises(sw.ConfigError) as refused:
        sw.start(_two_clock_step(stream, IdleNoDeadline), checkpoint=checkpoint, format="noop",
                 stop_on_signal=False)
    result = check_state(spark, checkpoint, IdleNoDeadline)
    assert not result.ok and result.shape_changes == [
        "step 'idle': deadlines changed from True to None",
        "step 'idle': state changed from 'per_key/1 two-clock' to 'per_key/1'"]
    assert str(result) == str(refused.value)  # the same error, word for word
    assert check_state(spark, checkpoint, Idle).ok  # the same logic: its keys are checked
    changed = check_state(spark, checkpoint, Idle, time=sw.EventTime("at", watermark="1 minute"))
    assert changed.shape_changes == [
        "step 'idle': event-time column changed from 'ts' to 'at'"]

    app = tmp_path / "idle_v2.py"
    app.write_text(Path(__file__).read_text())
    assert state_cli(["check", checkpoint, f"{app}:IdleNoDeadline"]) == 1
    out = capsys.readouterr().out
    assert out == str(refused.value) + "\n"  # the short block, no key report


def test_a_checkpoint_without_a_record_says_the_shape_was_not_compared(spark, tmp_path):
    stream = _two_clock_stream(spark, tmp_path)
    checkpoint = str(tmp_path / "ck")
    # (no deadlines: Spark alone would not end a two-clock step's availableNow run)
    query = (_two_clock_step(stream, IdleNoDeadline).writeStream.format("noop")  # not sw.start
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination(300)
    result = check_state(spark, checkpoint, IdleNoDeadline, time=TWO_CLOCK_TIME,
                         step_id="idle")
    assert result.ok and result.keys_ok == len(KEYS) and result.shape_changes == []
    last = str(result).splitlines()[-1]
    assert last == (f"the step's shape (time mode, timers, deadlines, state) could not be "
                    f"compared: {checkpoint} has no sparkwax-steps.json (the query was not "
                    "started with sw.start, which records it)")
