"""``sparkwax state check CHECKPOINT APP.py:LOGIC``: does every stored
snapshot restore through this (new) logic? Runs ``check_state`` on Spark's
executors (the app's own modules are shipped, as ``submit`` does), prints
its report and exits 0 when every key restores, 1 when any fails, 2 when it
cannot run (a usage or configuration error).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from ..arg_types import non_negative_int, positive_int


def add_check_parser(actions: Any, checkpoint_help: str,
                     session_options: Callable[[argparse.ArgumentParser], None]
                     ) -> argparse.ArgumentParser:
    """The ``check`` subcommand's parser."""
    check: argparse.ArgumentParser = actions.add_parser(
        "check", help="restore every stored snapshot through a logic (before a restart with "
                      "changed code); exit 1 if any key fails")
    check.add_argument("checkpoint", help=checkpoint_help)
    check.add_argument("logic", metavar="APP.py:LOGIC",
                       help="the builder or logic class (path/app.py:Name or module:Name)")
    check.add_argument("--operator", type=non_negative_int, default=0,
                       help="stateful operator id when the query has several (default 0)")
    check.add_argument("--examples", type=positive_int, default=3,
                       help="example keys shown per error class (default 3)")
    check.add_argument("--step-id", help="the step id errors name (default: the recorded one)")
    check.add_argument("--time", help="'processing' or 'event:COLUMN:DELAY' (default: the "
                                      "recorded time mode)")
    check.add_argument("--batch", action="store_true",
                       help="the step is a stateful_batch step (on_batch)")
    check.add_argument("--ttl", help="the step's ttl=, e.g. '30 minutes' (its snapshots hold "
                                     "the ttl's bookkeeping)")
    check.add_argument("--max-state-bytes", type=positive_int, help="the step's max_state_bytes=")
    session_options(check)
    return check


def run_check(args: argparse.Namespace, session: Callable[[Any, str], Any]) -> int:
    """Load the logic, ship the app, check, print the report: 0 / 1 (2 is
    the caller's, for a ``SparkwaxError``)."""
    from ...engine.deploy.app_modules import ship_app_file
    from ...engine.checkpoints.state.restore_check import check_state
    from ...engine.checkpoints.state.frame import checked_request
    from .replay import load_object, parse_time

    builder = load_object(args.logic, "LOGIC")
    spark = session(args, "sparkwax-state-check")
    checked_request(spark, args.checkpoint, args.operator, None)  # a sparkwax step's state
    location = args.logic.rpartition(":")[0]
    ship_app_file(spark, location, sys.modules.get(getattr(builder, "__module__", ""), None))
    result = check_state(spark, args.checkpoint, builder, operator_id=args.operator,
                         examples=args.examples, step_id=args.step_id,
                         time=parse_time(args.time) if args.time else None, batch=args.batch,
                         ttl=args.ttl, max_state_bytes=args.max_state_bytes)
    print(result)
    return 0 if result.ok else 1


__all__ = ["add_check_parser", "run_check"]
