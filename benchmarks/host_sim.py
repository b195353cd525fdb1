"""The per-group path of the Spark engine, simulated in plain Python.

    python benchmarks/host_sim.py [--rows N] [--keys K ...] [--profile VARIANT]

No JVM: each group is handed to the function the way pyspark's worker does
for applyInPandasWithState: a real ``pyspark.sql.streaming.state.GroupState``
built from the JSON properties and the pickled state row; value chunks of at
most 10,000 rows cut from an Arrow batch and turned into pandas frames with
pyspark's own ``ArrowBatchTransformer.to_pandas``; after the call
``state.json()`` and the pickled state row; the output frames of 1,000 groups
concatenated and converted with pyspark's ``PandasToArrowConversion``. Every key already
has state (a warm micro-batch). Timed per group, CPU time, best of R:

* ``worker``    the pyspark-side work alone (a function that yields nothing
                and leaves the state untouched): the floor for everyone;
* ``bare``      the hand-written function of benchmarks/spark_engine.py;
* ``sparkwax``  ``StreamingHost`` + ``Driver`` with a StatefulBatchLogic
                counting ``len(values)`` (``stateful_batch(value="v")``);
* ``sw-per-item`` ``StreamingHost`` with spark_engine.py's ``Count``: counting
                per item, no emits (``stateful(value="v")``);
* ``sw-metrics`` ``sparkwax`` plus the per-group metrics row every streaming
                step sends since issue 12 (``sparkwax.metrics``);
* ``bare-packed`` spark_engine.py's hand-written bucket function over 8
                buckets (keys interleaved in a bucket's rows, a pickled
                ``{key: count}`` per bucket): the floor of a packed design;
* ``sw-packed`` ``PackedHost`` over the same 8 buckets, metrics on.

The packed variants run every bucket as a group (``--keys`` is then the
number of user keys, all touched, all holding state).

``--profile VARIANT`` prints a cProfile of that variant instead.
Not collected by pytest.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pickle
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from pyspark.sql.conversion import ArrowBatchTransformer, PandasToArrowConversion  # noqa: E402
from pyspark.sql.streaming.state import GroupState  # noqa: E402

from sparkwax._driver import Driver  # noqa: E402
from sparkwax.step import Step  # noqa: E402
from sparkwax.engine.hosts.columns import INTEGER, InputLayout  # noqa: E402
from sparkwax.engine.hosts.bucket import Bucket  # noqa: E402
from sparkwax.engine.hosts.host import NO_TIMEOUT, StreamingHost  # noqa: E402
from sparkwax.engine.hosts.packed import PackedHost  # noqa: E402
from sparkwax.engine.hosts.outputs import METRICS_COLUMN, OutputBuilder, metrics_type  # noqa: E402
from sparkwax.engine.planning.plan import PACKED_STATE_SCHEMA, STATE_SCHEMA  # noqa: E402
from sparkwax.recovery import encode  # noqa: E402
from sparkwax.testing.reference import BatchCounter  # noqa: E402

from spark_engine import Count, bare_count, bare_packed_count  # noqa: E402  (benchmarks/, the script's folder)

CHUNK = 10_000          # spark.sql.execution.arrow.maxRecordsPerBatch
GROUPS_PER_BATCH = 1_000
BARE_STATE = T.StructType([T.StructField("s", T.BinaryType())])
OUT = T.StructType([T.StructField("key", T.LongType()), T.StructField("count", T.LongType())])


def idle(key, pdfs, state):
    for _ in pdfs:
        pass
    return iter(())


def sparkwax_host(batch: bool, metrics: bool = False):
    driver = Driver(Step.of(BatchCounter if batch else Count, step_id="bench", batch=batch))
    layout = InputLayout(names=("v",), sources=("v",), kinds=(INTEGER,), scalar=True,
                         order_by=(), event_column=None)
    outputs = OutputBuilder(["key"], T.StructType([T.StructField("count", T.LongType())]),
                            "bench", metrics=metrics)
    host = StreamingHost(driver, layout, outputs, NO_TIMEOUT, True)

    def run_streaming_group(key, frames, state):
        return host(key, frames, state)
    return run_streaming_group


BUCKETS = 8
PACKED_STATE = {}  # (variant, keys) -> {bucket: state row}, filled by packed_groups


def packed_host():
    driver = Driver(Step.of(BatchCounter, step_id="bench", batch=True))
    layout = InputLayout(names=("v",), sources=("v",), kinds=(INTEGER,), scalar=True,
                         order_by=(), event_column=None)
    outputs = OutputBuilder(["key"], T.StructType([T.StructField("count", T.LongType())]),
                            "bench", metrics=True)
    host = PackedHost(driver, layout, outputs, NO_TIMEOUT, ["key"], BUCKETS)

    def run_streaming_group(key, frames, state):
        return host(key, frames, state)
    return run_streaming_group


def packed_state(variant: str):
    return lambda bucket: PACKED_STATE[variant, bucket]


VARIANTS = {
    "worker": (idle, BARE_STATE, lambda n: (pickle.dumps(n),)),
    "bare": (bare_count, BARE_STATE, lambda n: (pickle.dumps(n),)),
    "sparkwax": (sparkwax_host(True), STATE_SCHEMA,
                 lambda n: (encode(n, step_id="bench", key=None), None)),
    "sw-per-item": (sparkwax_host(False), STATE_SCHEMA,
                    lambda n: (encode(n, step_id="bench", key=None), None)),
    "sw-metrics": (sparkwax_host(True, metrics=True), STATE_SCHEMA,
                   lambda n: (encode(n, step_id="bench", key=None), None)),
    "bare-packed": (bare_packed_count, BARE_STATE, packed_state("bare-packed")),
    "sw-packed": (packed_host(), PACKED_STATE_SCHEMA, packed_state("sw-packed")),
}
PACKED = ("bare-packed", "sw-packed")
WITH_METRICS = T.StructType(list(OUT.fields) + [T.StructField(METRICS_COLUMN, metrics_type())])
OUTPUTS = {"sw-metrics": WITH_METRICS, "sw-packed": WITH_METRICS}


def packed_groups(rows: int, keys: int):
    """(bucket, [Arrow chunk]) per bucket: key k in bucket k % 8, a bucket's
    rows in random order (keys interleaved, as Spark hands them); every key
    holds state (count 1) in both packed variants' state rows."""
    rng = np.random.default_rng(7)
    all_keys = rng.permutation(np.arange(rows, dtype=np.int64) % keys)
    groups = []
    for bucket in range(BUCKETS):
        mine = all_keys[all_keys % BUCKETS == bucket]
        batch = pa.RecordBatch.from_arrays([pa.array(mine), pa.array(np.arange(len(mine)))],
                                           names=["key", "v"])
        groups.append((bucket, [batch.slice(i, CHUNK) for i in range(0, len(mine), CHUNK)]))
        held = range(bucket, keys, BUCKETS)
        PACKED_STATE["bare-packed", bucket] = (pickle.dumps({k: 1 for k in held}),)
        store = Bucket.empty()
        for k in held:
            store.put(k, encode(1, step_id="bench", key=k), None, None)
        PACKED_STATE["sw-packed", bucket] = (store.encode()[0], BUCKETS)
    return groups


def make_groups(rows: int, keys: int):
    """(key, [Arrow chunk]) per key: key and v columns, sliced from shared batches."""
    per_key = rows // keys
    groups = []
    for key in range(keys):
        v = np.arange(per_key, dtype=np.int64)
        batch = pa.RecordBatch.from_arrays(
            [pa.array(np.full(per_key, key, dtype=np.int64)), pa.array(v)], names=["key", "v"])
        chunks = [batch.slice(i, CHUNK) for i in range(0, per_key, CHUNK)]
        groups.append((key, chunks))
    return groups


def frames_of(chunks):
    """What the worker hands the function: one pandas frame per Arrow chunk."""
    for chunk in chunks:
        yield pd.concat(ArrowBatchTransformer.to_pandas(
            chunk, timezone="UTC", struct_in_pandas="dict", ndarray_as_list=False,
            prefer_int_ext_dtype=False, df_for_struct=False), axis=1)


def run_batch(fn, state_schema, state_row, groups, pickler=pickle, out=OUT):
    """One micro-batch through ``fn``, with the worker's own per-group work."""
    outputs = []
    sent = 0
    for key, chunks in groups:
        # worker: state from JSON properties + the pickled state row
        props = json.loads(PROPS)
        blob = pickler.dumps(state_schema.toInternal(state_row(key)))
        props["optionalValue"] = T.Row(*pickler.loads(blob))
        state = GroupState(keyAsUnsafe=b"k", valueSchema=state_schema, **props)
        for frame in fn((np.int64(key),), frames_of(chunks), state):
            if not isinstance(frame, pd.DataFrame) or len(frame.columns) != len(out):
                raise TypeError(frame)
            outputs.append(frame)
        # worker: the state row back to the JVM
        state.json()
        if state.exists:
            pickler.dumps(state_schema.toInternal(state._value))
        if len(outputs) >= GROUPS_PER_BATCH:
            sent += to_arrow(outputs, out)
            outputs = []
    if outputs:
        sent += to_arrow(outputs, out)
    return sent


def to_arrow(frames, out) -> int:
    merged = pd.concat(frames, ignore_index=True)
    return PandasToArrowConversion.convert(merged, out, timezone="UTC", safecheck=True,
                                           arrow_cast=True, assign_cols_by_name=True).num_rows


PROPS = json.dumps({"batchProcessingTimeMs": 1_700_000_000_000, "eventTimeWatermarkMs": -1,
                    "timeoutConf": "NoTimeout", "hasTimedOut": False,
                    "watermarkPresent": False, "defined": True, "updated": False,
                    "removed": False, "timeoutTimestamp": -1})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, nargs="*", default=[100, 10_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--profile", choices=sorted(VARIANTS))
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)

    from pyspark.serializers import CPickleSerializer

    pickler = CPickleSerializer()
    if args.profile:
        for keys in args.keys:
            groups = (packed_groups if args.profile in PACKED else make_groups)(args.rows, keys)
            fn, schema, row = VARIANTS[args.profile]
            out = OUTPUTS.get(args.profile, OUT)
            run_batch(fn, schema, row, groups, pickler, out)
            profile = cProfile.Profile()
            profile.enable()
            run_batch(fn, schema, row, groups, pickler, out)
            profile.disable()
            print(f"== {args.profile}, {keys} keys x {args.rows // keys} rows")
            pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
        return 0

    print(f"per-group path, simulated (no JVM): {args.rows:,} rows, CPU time, best of "
          f"{args.repeat}")
    header = (f"{'keys':>7} {'rows/key':>8} {'variant':<12} {'batch ms':>9} {'us/group':>9} "
              f"{'- worker':>9} {'ratio':>6}")
    print(header)
    print("-" * len(header))
    for keys in args.keys:
        groups = make_groups(args.rows, keys)
        bucketed = packed_groups(args.rows, keys) if set(PACKED) & set(args.variants) else None
        times = {variant: float("inf") for variant in args.variants}
        for _ in range(args.repeat):  # interleaved: drifting load hits every variant
            for variant in args.variants:
                fn, schema, row = VARIANTS[variant]
                gc.collect()
                start = time.process_time()
                run_batch(fn, schema, row, bucketed if variant in PACKED else groups, pickler,
                          OUTPUTS.get(variant, OUT))
                times[variant] = min(times[variant], time.process_time() - start)
        for variant in args.variants:
            best = times[variant]
            own = best - times.get("worker", 0.0)
            ratio = f"{best / times['bare']:.2f}" if "bare" in times else "-"
            print(f"{keys:>7,} {args.rows // keys:>8,} {variant:<12} {best * 1000:>9,.1f} "
                  f"{best * 1e6 / keys:>9,.1f} {own * 1e6 / keys:>9,.1f} {ratio:>6}", flush=True)
    print("us/group = batch / keys; '- worker' = the same minus the pyspark-side floor; "
          "ratio = variant / bare")
    return 0


if __name__ == "__main__":
    sys.exit(main())
