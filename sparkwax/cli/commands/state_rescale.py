"""``sparkwax state rescale CHECKPOINT --partitions N [--buckets B]``: a
stopped query's state in another number of state partitions (and a packed
step's keys in another number of buckets); see
``sparkwax.engine.checkpoints.state.rescale`` and docs/deploy.md, "Growing".

It prints what it did and what a restart runs on::

    rescaled /data/ck: state partitions 2 -> 5, buckets 8 -> 20 (batch 2 holds the
    rescaled state; a restart runs on 5 state partitions, the checkpoint's,
    whatever spark.sql.shuffle.partitions says)

Exit codes: 0 rescaled (with ``--finish``: an interrupted rescale finished
or undone, or none found: ``nothing to finish: no interrupted rescale in
CHECKPOINT``), 2 refused (the checkpoint unchanged, the reason
printed). An interrupted rescale is always finished or undone first, with a
line saying which.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

from ..arg_types import positive_int


def add_rescale_parser(actions: Any, checkpoint_help: str) -> argparse.ArgumentParser:
    rescale: argparse.ArgumentParser = actions.add_parser(
        "rescale", help="change the number of state partitions (and buckets) of a stopped query")
    rescale.add_argument("checkpoint", help=checkpoint_help)
    rescale.add_argument("--partitions", type=positive_int, required=False,
                         help="the new number of state partitions (spark.sql.shuffle."
                              "partitions of the restarted query)")
    rescale.add_argument("--buckets", type=positive_int, default=None,
                         help="a packed step's new bucket count (default: 4 x partitions when "
                              "the step used the default, else its own count)")
    rescale.add_argument("--sink", default=None,
                         help="the file sink's folder (default: the one sw.start recorded)")
    rescale.add_argument("--force", action="store_true",
                         help="do not wait for the checkpoint's logs to be 10 s old (the "
                              "query is stopped)")
    rescale.add_argument("--finish", action="store_true",
                         help="only finish or undo an interrupted rescale, then stop")
    return rescale


def run_rescale(args: argparse.Namespace, session: Callable[[], Any]) -> int:
    """Check the options, then (``session()``: the reader's Spark) finish
    an interrupted rescale and rescale; 0, or a ``RescaleError`` (exit 2)."""
    from ...errors import RescaleError

    if args.partitions is None and not args.finish:  # before a JVM starts
        raise RescaleError("--partitions N is required (or --finish)")
    spark = session()
    if args.finish:
        print(finish_only(spark, args.checkpoint))
        return 0
    from ...engine.checkpoints.state.frame import checked_request
    from ...engine.checkpoints.state.rescale import finish_interrupted, rescale

    done = finish_interrupted(spark, args.checkpoint)
    if done:
        print(done)
    checked_request(spark, args.checkpoint, 0, None)  # a committed sparkwax step's state
    result = rescale(args.checkpoint, args.partitions, buckets=args.buckets, sink=args.sink,
                     spark=spark, idle_seconds=0 if args.force else 10.0)
    print(result)
    return 0


def finish_only(spark: Any, checkpoint: str) -> str:
    """``--finish``: what was finished or undone, or a line saying there
    was no interrupted rescale to finish."""
    from ...engine.checkpoints.snapshots import require_checkpoint
    from ...engine.checkpoints.state.rescale import finish_interrupted
    from ...engine.checkpoints.storage import storage_for

    require_checkpoint(storage_for(spark), checkpoint)
    done = finish_interrupted(spark, checkpoint)
    return done or (f"nothing to finish: no interrupted rescale in {checkpoint} (the "
                    "checkpoint is unchanged)")
