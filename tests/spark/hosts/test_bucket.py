"""The packed host's columnar bucket state against a plain dict model."""

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkwax.engine.hosts.bucket import Bucket

KEYS = st.one_of(st.integers(-3, 40), st.sampled_from(["a", "b", "é", ("x", 1)]))
TIMES = st.none() | st.integers(-10, 10**13)
OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), KEYS, st.binary(max_size=12), TIMES, TIMES),
    st.tuples(st.just("remove"), KEYS),
), max_size=40)


@settings(max_examples=200, deadline=None)
@given(st.lists(OPS, min_size=1, max_size=4), st.integers(-5, 10**13))
def test_bucket_round_trips_like_a_dict(batches, now_ms):
    model = {}
    bucket = Bucket.empty()
    for ops in batches:
        for op in ops:
            if op[0] == "put":
                _, key, blob, timer, armed = op
                bucket.put(key, blob, timer, armed)
                model[key] = (blob, timer, armed)
            else:
                bucket.remove(op[1])
                model.pop(op[1], None)
            assert bucket.get(op[1]) == (model[op[1]][0] if op[1] in model else None)
        assert len(bucket) == len(model)
        blob, earliest = bucket.encode()
        armed = [a for _, _, a in model.values() if a is not None]
        assert earliest == (min(armed) if armed else None)
        bucket = Bucket.decode(blob)
        assert {k: (b, t, a) for k, b, t, a in bucket.entries()} == model
        assert len(bucket) == len(model)
        for key, (value, _, _) in model.items():
            assert bucket.get(key) == value
    assert sorted(map(repr, bucket.due(now_ms))) == sorted(
        repr(k) for k, (_, _, a) in model.items() if a is not None and a < now_ms)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(KEYS, st.tuples(st.binary(max_size=30), TIMES, TIMES), max_size=60))
def test_every_bucket_round_trips_compressed_as_well(model):
    import sparkwax.engine.hosts.bucket as bucket_module

    before = bucket_module._COMPRESS_FROM
    bucket_module._COMPRESS_FROM = 0  # compress whatever the size, where it gains
    try:
        bucket = Bucket.empty()
        for key, (blob, timer, armed) in model.items():
            bucket.put(key, blob, timer, armed)
        stored, _ = bucket.encode()
        assert {k: (b, t, a) for k, b, t, a in Bucket.decode(stored).entries()} == model
    finally:
        bucket_module._COMPRESS_FROM = before


def _counter_bucket(keys):
    bucket = Bucket.empty()
    for key in range(keys):  # what a running count's snapshots look like: similar bytes
        bucket.put(key, b"SWX\x01P" + pickle.dumps(key % 1000, protocol=5), None, None)
    return bucket


def test_a_large_bucket_is_stored_compressed_and_smaller():
    from sparkwax.engine.hosts.bucket import MAGIC, _decompressed

    stored, _ = _counter_bucket(5000).encode()
    assert stored.startswith(MAGIC)
    assert len(stored) * 2 < len(_decompressed(stored))
    assert [k for k, _, _, _ in Bucket.decode(stored).entries()] == list(range(5000))


def test_incompressible_snapshots_are_stored_as_the_plain_pickle():
    import os

    from sparkwax.engine.hosts.bucket import MAGIC

    bucket = Bucket.empty()
    for key in range(200):
        bucket.put(key, os.urandom(1000), None, None)
    stored, _ = bucket.encode()
    assert not stored.startswith(MAGIC) and pickle.loads(stored)[0] == "swb1"
    assert len(Bucket.decode(stored)) == 200


def test_a_bucket_written_before_compression_still_decodes():
    import numpy as np

    # the stored value of sparkwax before zstd: the plain protocol-5 pickle
    old = pickle.dumps(("swb1", ["a", "b"], b"xxy", np.array([2, 3], dtype=np.uint32),
                        np.array([10, np.iinfo(np.int64).min]), None), protocol=5)
    bucket = Bucket.decode(old)
    assert list(bucket.entries()) == [("a", b"xx", 10, None), ("b", b"y", None, None)]
    again = Bucket.decode(_counter_bucket(3000).encode()[0])  # a new value beside it
    assert len(again) == 3000


def test_a_damaged_compressed_bucket_is_refused():
    from sparkwax.engine.hosts.bucket import MAGIC

    stored, _ = _counter_bucket(5000).encode()
    assert stored.startswith(MAGIC)
    with pytest.raises(ValueError, match="damaged compressed"):
        Bucket.decode(stored[:len(stored) // 2])
    huge = MAGIC + (2 ** 40).to_bytes(8, "little") + stored[12:]
    with pytest.raises(ValueError, match="claims 1,099,511,627,776 bytes"):
        Bucket.decode(huge)


def test_untouched_bucket_encodes_the_same_columns():
    bucket = Bucket.empty()
    for i in range(5):
        bucket.put(i, bytes([i]) * i, None, 100 + i)
    blob, _ = bucket.encode()
    again = Bucket.decode(blob)
    assert again.encode() == (blob, 100)
    again.put(2, b"new", 7, None)
    changed = Bucket.decode(again.encode()[0])
    assert [(k, b) for k, b, _, _ in changed.entries()] == [
        (0, b""), (1, b"\x01"), (2, b"new"), (3, b"\x03" * 3), (4, b"\x04" * 4)]


def test_a_foreign_blob_is_refused():
    with pytest.raises(ValueError, match="not a sparkwax bucket state"):
        Bucket.decode(pickle.dumps({"k": (b"x", None, None)}))


@pytest.mark.parametrize("name", ["hosts.bucket", "hosts.packed", "planning.description",
                                  "hosts.prepack", "hosts.initial_state", "hosts.tws"])
def test_module_examples_run(name):
    import doctest
    import importlib

    module = importlib.import_module(f"sparkwax.engine.{name}")
    failures, attempted = doctest.testmod(module)
    assert failures == 0 and attempted > 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(-2**63, 2**63 - 1)), max_size=200))
def test_key_runs_are_each_keys_rows_in_arrival_order(rows):
    import pandas as pd

    from sparkwax.engine.hosts.columns import INTEGER, InputLayout
    from sparkwax.engine.hosts.packed import key_runs

    layout = InputLayout(names=("v",), sources=("v",), kinds=(INTEGER,), scalar=True,
                         order_by=(), event_column=None)
    frame = pd.DataFrame({"key": [k for k, _ in rows], "v": [v for _, v in rows]},
                         dtype="int64")
    runs = key_runs([frame[:len(rows) // 2], frame[len(rows) // 2:]], ["key"], layout)
    expected = {}
    for key, value in rows:
        expected.setdefault(key, []).append(value)
    assert runs.keys == list(expected)  # first appearance
    assert {key: list(runs.rows(runs.positions[key])[0]) for key in runs.keys} == expected


class _State:
    """Just enough of pyspark's GroupState for one packed call."""

    hasTimedOut = False
    exists = True

    def __init__(self, row):
        self.get = row

    def getCurrentProcessingTimeMs(self):
        return 0


def test_a_foreign_bucket_state_is_a_config_error_naming_the_step():
    import pandas as pd
    from pyspark.sql import types as T

    from sparkwax._driver import Driver
    from sparkwax.step import Step
    from sparkwax.engine.hosts.columns import INTEGER, InputLayout
    from sparkwax.engine.hosts.host import NO_TIMEOUT
    from sparkwax.engine.hosts.outputs import OutputBuilder
    from sparkwax.engine.hosts.packed import PackedHost
    from sparkwax.errors import ConfigError
    from sparkwax.testing.reference import Counter

    host = PackedHost(Driver(Step.of(Counter, step_id="counts")),
                      InputLayout(("v",), ("v",), (INTEGER,), True, (), None),
                      OutputBuilder(["key"], T.StructType([T.StructField("n", T.LongType())]),
                                    "counts"),
                      NO_TIMEOUT, ["key"], 4)
    old_format = pickle.dumps({"k": (b"SWX", None, None)})
    frame = pd.DataFrame({"key": ["k"], "v": [1]})
    with pytest.raises(ConfigError, match="step 'counts': a bucket's state in the checkpoint "
                                          "cannot be read"):
        list(host((0,), iter([frame]), _State((old_format, 4))))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 5), st.integers(0, 2**40)),
                max_size=200))
def test_key_runs_with_event_times_are_each_keys_rows_in_the_drivers_order(rows):
    """Per key: a stable sort by event time of the key's rows in arrival order
    (what the driver does itself), so the driver's sort has nothing to do."""
    import pandas as pd

    from sparkwax.engine.hosts.columns import INTEGER, InputLayout
    from sparkwax.engine.hosts.packed import key_runs

    layout = InputLayout(names=("v",), sources=("v",), kinds=(INTEGER,), scalar=True,
                         order_by=(), event_column="t")
    frame = pd.DataFrame({"key": [k for k, _, _ in rows], "v": [v for _, _, v in rows],
                          "t": [t for _, t, _ in rows]}, dtype="int64")
    runs = key_runs(frame, ["key"], layout)
    expected = {}
    for key, time, value in rows:
        expected.setdefault(key, []).append((time, value))
    for key, pairs in expected.items():
        pairs.sort(key=lambda pair: pair[0])  # stable
        values, times, _ = runs.rows(runs.positions[key])
        assert (list(times), list(values)) == ([t for t, _ in pairs], [v for _, v in pairs])
