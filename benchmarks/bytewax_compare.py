"""Bytewax 0.21.1 (one worker) on the counting workload of spark_engine.py.

    python benchmarks/bytewax_compare.py [--rows N] [--keys 100 10000]

The same logic (count values per key, emit nothing per item, the count at
EOF) over the same kind of items ``(str(key), value)``; wall time of
``run_main``, best of --repeat. Compare with the per-batch times printed by
benchmarks/spark_engine.py (which processes the same number of rows per
micro-batch). Not collected by pytest.
"""

import argparse
import random
import time

import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.operators import StatefulLogic
from bytewax.testing import TestingSink, TestingSource, run_main


class Count(StatefulLogic):
    def __init__(self, resume):
        self.n = resume or 0

    def on_item(self, value):
        self.n += 1
        return [], False

    def on_eof(self):
        return [self.n], True

    def snapshot(self):
        return self.n


def run_once(items) -> float:
    flow = Dataflow("count")
    stream = op.input("in", flow, TestingSource(items, batch_size=10_000))
    counted = op.stateful("count", stream, lambda resume: Count(resume))
    out = []
    op.output("out", counted, TestingSink(out))
    started = time.perf_counter()
    run_main(flow)
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, nargs="*", default=[100, 10_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rng = random.Random(0)
    print(f"{'keys':>7} {'best s':>8} {'rows/s':>10}")
    for keys in args.keys:
        items = [(str(rng.randrange(keys)), i) for i in range(args.rows)]
        best = min(run_once(items) for _ in range(args.repeat))
        print(f"{keys:>7,} {best:>8.2f} {args.rows / best:>10,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
