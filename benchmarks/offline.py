"""Offline runner throughput vs a bare Python loop (docs/performance.md,
"Offline runner vs a plain Python loop").

    python benchmarks/offline.py [--items N] [--repeat R] [--batches B] [--gc-young N]

For each key count the same items (random int keys, fixed seed) go through

* the plain loop: what a user would write without sparkwax, doing the same
  work as the runner's result holds: one live logic object per key in a dict
  (``builder(None)`` at a key's first item), ``logic.on_item(value)`` for
  every item in arrival order (the same calls, on the same logic), each emit
  kept as a ``(key, emit)`` pair as ``RunResult.outputs`` keeps it, and the
  object dropped on DISCARD. No validation, no snapshots, no metrics, no
  micro-batches: the floor any host pays for the logic itself;
* ``sparkwax.testing.Runner`` with ``restore="always"`` (Spark's exact
  semantics: decode + build + snapshot + encode per key per activation) and
  ``restore="on_crash"`` (live objects kept between batches), each fed the
  items as B micro-batches and as one batch. The runner time includes
  ``finish()`` (the snapshots of every key), as ``run()`` does.

The logic is ``sparkwax.testing.reference.Counter`` (running count per key,
one emit per item). Each time is the best of R runs, the three sides run in
interleaved rounds (plain loop, always, on_crash, then again), measured both as CPU
time of this process and as wall time (each clock's best); items/s and the
ratio = runner time / plain-loop time are on the ``--clock`` (default CPU:
the machine is shared and noisy), the other clock's ratio beside it. Goal
(issue 24): worst ratio <= 3, metrics included (the runner sums
``StepMetrics`` per micro-batch as it always does). ``--gc-young N`` runs
everything with CPython's young generation collected every N allocations
(default: Python's own, 700): how much of each side is cyclic GC. Not
collected by pytest.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

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
    """The plain loop: live objects in a dict, on_item per item, each emit
    kept as ``(key, emit)``, a discarded key's object dropped."""
    live = {}
    outputs = []
    append = outputs.append
    for chunk in chunks:
        for key, value in chunk:
            logic = live.get(key)
            if logic is None:
                logic = live[key] = builder(None)
            out, discard = logic.on_item(value)
            for emit in out:
                append((key, emit))
            if discard:
                del live[key]
    return outputs


def run_runner(chunks, restore: str, builder=Counter):
    runner = Runner(builder, restore=restore)
    for chunk in chunks:
        runner.batch(chunk)
    return runner.process_all_available()


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def best_of(repeat: int, sides):
    """``{side: ({clock: best seconds}, result)}`` of ``sides``, ``{side:
    (fn, args)}``, run in interleaved rounds (each side once per round, in
    turn), so drifting load on a shared machine hits every side alike."""
    best = {side: dict.fromkeys(CLOCKS, float("inf")) for side in sides}
    results = dict.fromkeys(sides)
    for _ in range(repeat):
        for side, (fn, args) in sides.items():
            results[side] = None
            gc.collect()
            start = {name: clock() for name, clock in CLOCKS.items()}
            results[side] = fn(*args)
            for name, clock in CLOCKS.items():
                best[side][name] = min(best[side][name], clock() - start[name])
    return {side: (best[side], results[side]) for side in sides}


def per_key(outputs):
    """Outputs grouped per key (hosts agree per key, not on the global order)."""
    grouped = {}
    for key, value in outputs:
        grouped.setdefault(key, []).append(value)
    return grouped


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, nargs="*", default=[10, 10_000, 100_000])
    parser.add_argument("--batches", type=int, default=10, help="micro-batches (default 10)")
    parser.add_argument("--repeat", type=int, default=5, help="best of R rounds (default 5)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="the clock of items/s and of the worst ratio: cpu (default; "
                             "process time, robust on a shared, noisy machine) or wall")
    parser.add_argument("--gc-young", type=int, default=None, metavar="N",
                        help="collect the young generation every N allocations (both sides)")
    args = parser.parse_args(argv)
    other = "wall" if args.clock == "cpu" else "cpu"
    if args.gc_young is not None:
        gc.set_threshold(args.gc_young, *gc.get_threshold()[1:])

    print(f"offline runner vs plain loop: {args.items:,} items, Counter logic, "
          f"best of {args.repeat}, items/s and ratio on {args.clock} time, "
          f"python {sys.version.split()[0]}, gc thresholds {gc.get_threshold()}")
    header = (f"{'keys':>8} {'batches':>7} {'restore':>9} {'runner items/s':>15} "
              f"{'plain items/s':>14} {'ratio':>6} {other + ' ratio':>10} "
              f"{'runner cpu s':>12} {'runner wall s':>13} {'activations':>11}")
    print(header)
    print("-" * len(header))
    worst = 0.0
    for keys in args.keys:
        items = make_items(args.items, keys)
        for batches in (args.batches, 1):
            chunks = split(items, batches)
            timed = best_of(args.repeat, {"plain": (bare_loop, (chunks,)),
                                          "always": (run_runner, (chunks, "always")),
                                          "on_crash": (run_runner, (chunks, "on_crash"))})
            bare_s, bare_out = timed.pop("plain")
            expected = per_key(bare_out)
            del bare_out
            for restore in ("always", "on_crash"):
                run_s, result = timed.pop(restore)
                assert per_key(result.outputs) == expected, "runner and plain loop disagree"
                assert result.metrics.rows_in == result.metrics.emits == args.items
                ratio = run_s[args.clock] / bare_s[args.clock]
                worst = max(worst, ratio)
                print(f"{keys:>8,} {len(chunks):>7} {restore:>9} "
                      f"{args.items / run_s[args.clock]:>15,.0f} "
                      f"{args.items / bare_s[args.clock]:>14,.0f} {ratio:>6.2f} "
                      f"{run_s[other] / bare_s[other]:>10.2f} {run_s['cpu']:>12.3f} "
                      f"{run_s['wall']:>13.3f} {result.activations:>11,}", flush=True)
                del result
    print(f"worst ratio {worst:.2f} on {args.clock} time (goal <= 3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
