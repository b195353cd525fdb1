"""The operators package: its surface, no pyspark on import, picklable builders,
the module doctests, and check_logic properties of a few operators."""

from __future__ import annotations

import doctest
import importlib
import os
import pickle
import subprocess
import sys
import textwrap
from datetime import timedelta

import pytest
from hypothesis import strategies as st

import sparkwax as sw
import sparkwax.operators as ops
from sparkwax.testing import Batch, Eof, check_logic, run
from sparkwax.testing.strategies import timestamped_items

from kit import REPO

MODULES = ["basic", "final", "collecting", "joins", "windows.core", "windows._aggs", "recipes",
           "rules", "running", "sequence", "many_timers"]


def test_all_is_sorted_and_complete():
    assert ops.__all__ == sorted(ops.__all__)
    for name in ops.__all__:
        assert hasattr(ops, name), name
    for name in ("stateful_map", "stateful_flat_map", "collect", "fold_final", "reduce_final",
                 "count_final", "max_final", "min_final", "joiner",
                 "TumblingWindower", "SlidingWindower", "SessionWindower", "fold_window",
                 "collect_window", "count_window", "reduce_window", "max_window",
                 "min_window", "join_window", "deduplicate", "throttle", "session",
                 "with_ttl", "with_rules", "Rules", "stateful_filter", "fold", "reduce",
                 "sequence", "sum_window", "mean_window", "Timers", "Ttl", "with_state_limit",
                 "StateTooLarge"):
        assert name in ops.__all__


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    module = importlib.import_module(f"sparkwax.operators.{name}")
    failures, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0 and attempted > 0   # a module without examples tests nothing


def test_import_without_pyspark(tmp_path):
    blocked = tmp_path / "blocked" / "pyspark"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('pyspark is blocked')\n")
    program = textwrap.dedent("""
        import sys
        import sparkwax.operators as ops
        from sparkwax.testing import Batch, Eof, run
        out = run(ops.joiner(2), [Batch(ops.tag(0, [("k", 1)]) + ops.tag(1, [("k", 2)])), Eof()])
        assert out.by_key == {"k": [(1, 2)]}, out.by_key
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "pyarrow",
                                                                  "pandas")))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "blocked"), str(REPO)]))
    done = subprocess.run([sys.executable, "-c", program], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _double(state, value):
    return (state or 0) + value, value * 2


def _keep_all(state, value):
    return state, True


def _append(acc, value):
    return acc + [value]


def _positive(value):
    return value > 0


def _negative(value):
    return value < 0


@pytest.mark.parametrize("builder", [
    ops.stateful_map(_double),
    ops.count_final(),
    ops.max_final(by="n"),
    ops.collect(timedelta(seconds=5), 3),
    ops.joiner(("a", "b"), emit_mode="running"),
    ops.count_window(ops.SlidingWindower("10 minutes", "5 minutes")),
    ops.join_window(ops.SessionWindower("5 minutes"), 2),
    ops.deduplicate("id", "1 hour"),
    ops.throttle(3, "1 minute", overflow="flag"),
    ops.session("30 minutes"),
    ops.with_ttl(ops.count_final(), "1 day", flush=True),
    ops.with_rules(ops.Rules({"x": 1}), lambda table, resume: ops.count_final()(resume)),
    ops.stateful_filter(_keep_all),
    ops.fold(list, _append),
    ops.reduce(max),
    ops.sequence([_positive, _negative], within="1 minute", contiguity="relaxed"),
    ops.sum_window(ops.TumblingWindower("1 hour"), by="n"),
    ops.mean_window(ops.SessionWindower("1 hour"), by="n"),
    ops.with_state_limit(ops.count_final(), 1000),
    sw.Step.of(ops.count_final(), ttl=ops.Ttl("1 hour", flush=True),
               max_state_bytes=1000, time=sw.EventTime("ts")).logic_builder(),
])
def test_builders_pickle_and_build(builder):
    from pyspark import cloudpickle

    again = cloudpickle.loads(cloudpickle.dumps(builder))
    assert type(again(None)) is type(builder(None))
    if not isinstance(builder, ops.rules.RulesBuilder):
        assert type(pickle.loads(pickle.dumps(builder))(None)) is type(builder(None))


def test_step_names():
    assert ops.stateful_map(_double).__qualname__ == "stateful_map"
    assert ops.with_ttl(ops.count_final(), "1 hour").__qualname__ == "with_ttl(count_final)"
    assert "collect" in repr(ops.collect(None, 2))


def test_timestamps_must_be_aware():
    from datetime import datetime
    with pytest.raises(sw.CallbackError, match="aware datetime"):
        run(ops.collect(timedelta(seconds=1), 5), [Batch([("k", {"ts": datetime(2024, 1, 1)})])])


# -- check_logic: restore-every-activation, crashes and snapshots change nothing -------

ITEMS = timestamped_items(keys=st.sampled_from(["a", "b"]), max_size=20)
TIME = sw.EventTime("ts", watermark="2 minutes")
TEN = ops.TumblingWindower("10 minutes")


@pytest.mark.parametrize("builder", [
    ops.count_window(TEN, lateness="1 minute"),
    ops.collect_window(ops.SlidingWindower("10 minutes", "4 minutes")),
    ops.fold_window(ops.SessionWindower("3 minutes"), lambda: 0,
                    lambda acc, v: acc + v["value"], lambda a, b: a + b, lateness="30 seconds"),
    ops.max_window(ops.SessionWindower("5 minutes"), by="value"),
    ops.collect(timedelta(minutes=3), 4),
    ops.deduplicate(lambda v: v["value"] % 3, "5 minutes"),
    ops.throttle(2, "4 minutes", overflow="flag"),
    ops.session("4 minutes"),
    ops.with_ttl(ops.stateful_map(lambda s, v: ((s or 0) + 1, (s or 0) + 1)), "6 minutes",
                 flush=True),
], ids=["count_window", "sliding_collect", "session_fold", "session_max", "collect",
        "deduplicate", "throttle", "session", "with_ttl"])
def test_check_logic(builder):
    check_logic(builder, time=TIME, items=ITEMS, max_examples=60)


def test_check_logic_join():
    tagged = st.lists(st.tuples(st.sampled_from(["k", "j"]), st.sampled_from(["l", "r"]),
                                st.integers(0, 9)), max_size=15).map(
        lambda rows: [(k, ops.Tagged(side, n)) for k, side, n in rows])
    for insert_mode in ("first", "last", "product"):
        for emit_mode in ("complete", "final", "running"):
            check_logic(ops.joiner(["l", "r"], insert_mode=insert_mode, emit_mode=emit_mode),
                        items=tagged, max_examples=15)


def test_window_operators_match_a_reference_count():
    """Every value is counted once, in its one tumbling window, whatever the
    micro-batch split (no lateness, no drops: a generous watermark)."""
    from hypothesis import given, settings
    from sparkwax.testing.strategies import micro_batches

    @settings(max_examples=40, deadline=None)
    @given(micro_batches(items=ITEMS))
    def check(batches):
        script = [Batch(b) for b in batches] + [Eof()]
        result = run(ops.count_window(TEN), script, time=sw.EventTime("ts", watermark="1 day"))
        expected = {}
        for key, value in (pair for b in batches for pair in b):
            window = next(iter(TEN.ids_for(value["ts"])))
            expected.setdefault(key, {}).setdefault(window, 0)
            expected[key][window] += 1
        got = {k: {w.window_id: w.value for w in ws} for k, ws in result.by_key.items()}
        assert got == expected
        assert result.live_keys == 0

    check()
