"""The per-emit cost of the Spark hosts' output path, without a JVM.

    python benchmarks/outputs.py [--emits N] [--repeat R]

``OutputBuilder.frame_of`` turns the emits of many keys into one pandas
frame (checking them against the output schema on the way); the packed host
calls it once per bucket, the per-key host once per key. Timed per emit, CPU
time, best of R, for a few output schemas and emit shapes:

* ``frame``  the frame alone (the emit checks and the column building);
* ``arrow``  the frame and pyspark's own pandas -> Arrow conversion of it
             (``PandasToArrowConversion``, as the worker runs it after the
             function), for scale.

``packed`` hands 1,000 keys x 10 emits to one call; ``per-key`` one key with
10 emits per call (the per-key host's shape). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import gc
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pyspark.sql import types as T  # noqa: E402
from pyspark.sql.conversion import PandasToArrowConversion  # noqa: E402

from sparkwax.engine.hosts.outputs import OutputBuilder  # noqa: E402

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
MINUTE = dt.timedelta(minutes=1)


def _session(i):
    return {"start": T0 + i * MINUTE, "end": T0 + (i + 5) * MINUTE, "events": i}


def _fields(*pairs):
    return T.StructType([T.StructField(name, kind) for name, kind in pairs])


CASES = {
    # name: (output schema, emit i -> value); built by hand: fromDDL needs a JVM
    "long (scalar)": (_fields(("n", T.LongType())), lambda i: i),
    "long, string (tuple)": (_fields(("n", T.LongType()), ("label", T.StringType())),
                             lambda i: (i, "x")),
    "int, double (tuple)": (_fields(("n", T.IntegerType()), ("amount", T.DoubleType())),
                            lambda i: (i, i * 0.5)),
    "session (dict, 2 timestamps)": (_fields(("start", T.TimestampType()),
                                             ("end", T.TimestampType()),
                                             ("events", T.LongType())), _session),
    "decimal(10,2) (scalar)": (_fields(("price", T.DecimalType(10, 2))),
                               lambda i: decimal.Decimal(i) / 4),
    "array<long> x5 (scalar)": (_fields(("items", T.ArrayType(T.LongType()))),
                                lambda i: [i, i, i, i, i]),
    "map<string,long> x2 (1-tuple)": (_fields(("tags", T.MapType(T.StringType(), T.LongType()))),
                                     lambda i: ({"a": i, "b": i},)),
    "struct<a long, b string> (1-tuple)": (
        _fields(("s", _fields(("a", T.LongType()), ("b", T.StringType())))),
        lambda i: ({"a": i, "b": "x"},)),
}
SHAPES = {"packed": (1_000, 10), "per-key": (1, 10)}


def groups_of(make, keys: int, per_key: int):
    return [(f"k{k}", (f"k{k}",), [make(k * per_key + i) for i in range(per_key)])
            for k in range(keys)]


def best_of(repeat: int, run) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--emits", type=int, default=100_000, help="emits per measurement")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    args = parser.parse_args(argv)
    print(f"OutputBuilder.frame_of, CPU time per emit (µs), best of {args.repeat}, "
          f"{args.emits:,} emits per measurement")
    header = f"{'schema (emit)':<36} {'shape':<8} {'frame':>7} {'arrow':>7}"
    print(header)
    print("-" * len(header))
    for name in args.cases:
        schema, make = CASES[name]
        builder = OutputBuilder(["key"], schema, "bench")
        out = T.StructType([T.StructField("_0", T.StructType(
            [T.StructField("key", T.StringType())] + list(schema.fields)))])
        for shape, (keys, per_key) in SHAPES.items():
            groups = groups_of(make, keys, per_key)
            calls = max(1, args.emits // (keys * per_key))
            emits = calls * keys * per_key

            def frames():
                for _ in range(calls):
                    builder.frame_of(groups)

            def converted():
                for _ in range(calls):
                    PandasToArrowConversion.convert(
                        [builder.frame_of(groups)], out, timezone="UTC", safecheck=True,
                        arrow_cast=True, assign_cols_by_name=True)

            frame_us = best_of(args.repeat, frames) * 1e6 / emits
            arrow_us = best_of(args.repeat, converted) * 1e6 / emits
            print(f"{name:<36} {shape:<8} {frame_us:>7.2f} {arrow_us:>7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
