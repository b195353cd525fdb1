"""``sparkwax demo``: the e-commerce clickstream demo (``sparkwax.cli.demo``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .. import Handler


def demo_command(parser: argparse.ArgumentParser) -> Handler:
    """Run the e-commerce clickstream demo on a local Spark.

    Generates a seeded clickstream (users, sessions, purchases, a few planted
    card-testing fraud bursts) as micro-batch files, streams it through two
    sparkwax logics (UserSession per user, CardFraud per card) with Spark
    Structured Streaming in event time, writes the results as Parquet with
    checkpoints, shows per-batch progress and ends with a summary table.
    """
    from ..demo import app

    app.add_arguments(parser)
    return app.run_from_args


__all__ = ["demo_command"]
