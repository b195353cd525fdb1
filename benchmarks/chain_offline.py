"""A two-stage ``sw.chain`` through the offline runner, for timing as a whole
process (docs/performance.md, "A chain's stage counts").

    python benchmarks/chain_offline.py [--tree PATH]

200k items (int keys, fixed seed) over 10k keys in 10 micro-batches,
``restore="always"``, through ``sw.chain(Forward, Count)``: the first stage
counts its items and passes each on, the second is
``sparkwax.testing.reference.Counter``. ``--tree``: the checkout whose
``sparkwax`` to import (default: this one), so two commits can be paired
with ``farm-bench --vs``. Prints nothing; exits non-zero if the run's
output is not the expected 200k rows. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import random
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=HERE, help="the checkout whose sparkwax to import")
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.tree))
    import sparkwax as sw
    from sparkwax.testing import Batch, run
    from sparkwax.testing.reference import Counter

    class Forward(sw.StatefulLogic):
        """Counts its items (its state) and passes each on."""

        def __init__(self, resume=None):
            self.n = resume or 0

        def on_item(self, value):
            self.n += 1
            return [value], sw.RETAIN

        def snapshot(self):
            return self.n

    rng = random.Random(0)
    items = [(rng.randrange(10_000), i) for i in range(200_000)]
    script = [Batch(items[i:i + 20_000]) for i in range(0, len(items), 20_000)]
    chained = sw.chain(sw.Step.of(Forward, step_id="forward"),
                       sw.Step.of(Counter, step_id="count"))
    if len(run(chained, script).outputs) != len(items):
        sys.exit("wrong output")


if __name__ == "__main__":
    main()
