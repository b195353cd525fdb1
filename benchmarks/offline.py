"""Offline runner throughput vs a bare Python loop (DESIGN.md section 6).

    python benchmarks/offline.py [--items N] [--repeat R] [--batches B]

For each key count the same items (random int keys, fixed seed) go through

* the bare loop: a dict of live logic objects per key, ``logic.on_item(v)``
  and ``emits.extend(out)``: the floor any host pays for the logic itself;
* ``sparkwax.testing.Runner`` with ``restore="always"`` (Spark's exact
  semantics: decode + build + snapshot + encode per key per activation) and
  ``restore="on_crash"`` (live objects kept between batches), each fed the
  items as B micro-batches and as one batch. The runner time includes
  ``finish()`` (the snapshots of every key), as ``run()`` does.

The logic is ``sparkwax.testing.reference.Counter`` (running count per key,
one emit per item). Best of R runs (CPU time of this process by default:
the machine this was written on is shared and noisy); items/s; ratio =
runner time / bare time (goal: <= 2). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from sparkwax.testing import Batch  # noqa: E402
from sparkwax.testing.reference import Counter  # noqa: E402
from sparkwax.testing.runner import Runner  # noqa: E402


def make_items(n: int, keys: int, seed: int = 0):
    rng = random.Random(seed)
    draw = rng.randrange
    return [(draw(keys), i) for i in range(n)]


def split(items, batches: int):
    size = -(-len(items) // batches)
    return [items[i:i + size] for i in range(0, len(items), size)]


def bare_loop(chunks, builder=Counter):
    """The floor: live objects in a dict, on_item, collect the emits."""
    live = {}
    emits = []
    extend = emits.extend
    for chunk in chunks:
        for key, value in chunk:
            logic = live.get(key)
            if logic is None:
                logic = live[key] = builder(None)
            out, _discard = logic.on_item(value)
            extend(out)
    return emits


def run_runner(chunks, restore: str, builder=Counter):
    runner = Runner(builder, restore=restore)
    for chunk in chunks:
        runner.batch(chunk)
    return runner.process_all_available()


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def best_of(repeat: int, fn, *args, clock=time.process_time):
    best = float("inf")
    result = None
    for _ in range(repeat):
        result = None
        gc.collect()
        start = clock()
        result = fn(*args)
        best = min(best, clock() - start)
    return best, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, nargs="*", default=[10, 10_000, 100_000])
    parser.add_argument("--batches", type=int, default=10, help="micro-batches (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="best of R (default 3)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: process time (default; robust on a shared, noisy "
                             "machine), wall: perf_counter")
    args = parser.parse_args(argv)
    clock = CLOCKS[args.clock]

    print(f"offline runner vs bare loop: {args.items:,} items, Counter logic, "
          f"best of {args.repeat} ({args.clock} time), python {sys.version.split()[0]}")
    header = (f"{'keys':>8} {'batches':>7} {'restore':>9} {'runner items/s':>15} "
              f"{'bare items/s':>13} {'ratio':>6} {'activations':>11}")
    print(header)
    print("-" * len(header))
    worst = 0.0
    for keys in args.keys:
        items = make_items(args.items, keys)
        for batches in (args.batches, 1):
            chunks = split(items, batches)
            bare_s, bare_out = best_of(args.repeat, bare_loop, chunks, clock=clock)
            for restore in ("always", "on_crash"):
                run_s, result = best_of(args.repeat, run_runner, chunks, restore,
                                         clock=clock)
                assert len(result.outputs) == len(bare_out), "runner and bare loop disagree"
                ratio = run_s / bare_s
                worst = max(worst, ratio)
                print(f"{keys:>8,} {len(chunks):>7} {restore:>9} {args.items / run_s:>15,.0f} "
                      f"{args.items / bare_s:>13,.0f} {ratio:>6.2f} {result.activations:>11,}",
                      flush=True)
                del result
    print(f"worst ratio {worst:.2f} (goal <= 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
