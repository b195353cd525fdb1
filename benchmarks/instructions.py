"""Instructions per item of the driver's hot paths, counted by valgrind: a
measure that does not move with the machine's load (CPU time on this shared
2-core machine strays up to 9% between identical runs).

    python benchmarks/instructions.py [--tree DIR] [--items 30000]

For each case it runs a child Python under ``valgrind --tool=cachegrind
--cache-sim=no`` twice, with ``--items`` items and with none, and prints
(instructions of the first - of the second) / items: the work per item
beyond the interpreter's start and the imports. ``--tree`` runs another
source tree's ``sparkwax`` and ``benchmarks`` (e.g. ``git archive REV | tar
-x -C DIR``) to compare two versions of the code on the same counts.

* ``offline B/R``: ``benchmarks/offline.py``'s runner (Counter logic,
  ``--items`` items over as many keys in B micro-batches, restore R);
* ``host_sim packed``: ``benchmarks/host_sim.py --variants sw-packed`` (one
  row per key), per row.

Needs valgrind. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OFFLINE = """
import sys
sys.path.insert(0, "benchmarks")
from offline import make_items, split, run_runner
items, batches, restore = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
if items:
    run_runner(split(make_items(items, items), batches), restore)
"""
CASES = [("offline 10/always", "offline", ["10", "always"]),
         ("offline 10/on_crash", "offline", ["10", "on_crash"]),
         ("offline 1/always", "offline", ["1", "always"]),
         ("offline 1/on_crash", "offline", ["1", "on_crash"]),
         ("host_sim packed", "host_sim", [])]


def instructions(tree: str, kind: str, items: int, extra: list) -> int:
    """Instructions valgrind counted in one child run."""
    if kind == "offline":
        command = [sys.executable, "-c", OFFLINE, str(items), *extra]
    else:
        command = [sys.executable, "benchmarks/host_sim.py", "--rows", str(items), "--keys",
                   str(items), "--variants", "sw-packed", "--repeat", "1"]
    env = dict(os.environ, PYTHONPATH=tree)
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                           "--cachegrind-out-file=/dev/null", *command], cwd=tree, env=env,
                          capture_output=True, text=True, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=os.path.dirname(HERE))
    parser.add_argument("--items", type=int, default=30000)
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed")
        return 1
    print(f"instructions per item, {args.items:,} items, tree {args.tree}")
    for name, kind, extra in CASES:
        # host_sim's floor: a quarter of the items (it needs some to run)
        floor_items = 0 if kind == "offline" else args.items // 4
        more = instructions(args.tree, kind, args.items, extra)
        less = instructions(args.tree, kind, floor_items, extra)
        print(f"  {name:22} {(more - less) / (args.items - floor_items):>10,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
