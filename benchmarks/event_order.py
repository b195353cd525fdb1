"""One EventTime activation of 10k shuffled rows, in process (no Spark):
``read_group`` with the host's pre-sort (``presorted``) and
``Driver.activate``, the sparkwax-timer logic of spark_engine.py.

    python benchmarks/event_order.py [--rows N] [--repeat R] [--plain | --unclaimed]

Prints the CPU ms per activation; ``--plain`` skips the host's pre-sort (the
driver's own sort does all the work, as before it existed); ``--unclaimed``
pre-sorts but does not tell the driver the times ascend (its own check of
the order then runs, as before ``times_ascending``). Not collected by
pytest.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from sparkwax._driver import Driver  # noqa: E402
from sparkwax.engine.hosts.columns import INTEGER, InputLayout, presorted, read_group  # noqa: E402
from sparkwax.step import Step  # noqa: E402
from sparkwax.timers import EventTime  # noqa: E402
from spark_engine import BatchTimerCounter  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--plain", action="store_true")
    parser.add_argument("--unclaimed", action="store_true")
    args = parser.parse_args(argv)
    driver = Driver(Step.of(BatchTimerCounter, step_id="b", batch=True,
                            time=EventTime("ts", watermark="1 hour")))
    layout = InputLayout(names=("t",), sources=("t",), kinds=(INTEGER,), scalar=True,
                         order_by=(), event_column="us")
    t = 1_700_000_000_000 + np.random.default_rng(0).integers(0, 1000, args.rows)
    frame = pd.DataFrame({"key": np.full(args.rows, 5), "t": t, "us": t * 1000})
    stored = None
    started = None
    for round_ in range(args.repeat + 1):
        if round_ == 1:
            started = time.process_time()
        rows, ascending = (None, False) if args.plain else presorted(frame, layout)
        values, times, order = read_group(frame, layout, rows)
        stored = driver.activate(5, stored, values, 1_600_000_000_000, event_times=times,
                                 order=order,
                                 times_ascending=ascending and not args.unclaimed).state
    per = (time.process_time() - started) * 1000 / args.repeat
    how = ("driver sort only" if args.plain else
           "host pre-sort, unclaimed" if args.unclaimed else "host pre-sort")
    print(f"{args.rows:,} rows, {how}: "
          f"{per:.2f} ms CPU per activation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
