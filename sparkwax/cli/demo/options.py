"""The ``sparkwax demo`` command line: its options and their parsing.

>>> parse_trigger("available-now"), parse_trigger("2 seconds")
({'availableNow': True}, {'processingTime': '2000 milliseconds'})
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Dict, Optional

from ...errors import ConfigError
from ...timers import duration_ms
from . import clickstream
from .hosts import HOSTS

DEFAULT_OUTPUT = "./sparkwax-demo-out"
DEFAULT_EVENTS = 200_000
DEFAULT_BATCHES = 12
DEFAULT_SEED = 7
AVAILABLE_NOW = "available-now"


@dataclass
class DemoOptions:
    events: int = DEFAULT_EVENTS
    batches: int = DEFAULT_BATCHES
    output: str = DEFAULT_OUTPUT
    checkpoint: Optional[str] = None       # default: OUTPUT/checkpoints
    trigger: str = AVAILABLE_NOW           # or a processing-time interval, e.g. "1 second"
    master: str = "local[*]"
    seed: int = DEFAULT_SEED
    format: str = "json"
    remote: Optional[str] = None           # a Spark Connect server, e.g. "sc://host:15002"
    host: str = "auto"                     # or "per_key" / "packed" for both queries


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``sparkwax demo`` options."""
    parser.add_argument(
        "--events", type=_positive_int, default=DEFAULT_EVENTS, metavar="N",
        help="number of clickstream events to generate (default: %(default)s; at least 100)")
    parser.add_argument(
        "--batches", type=_positive_int, default=DEFAULT_BATCHES, metavar="N",
        help="number of input files; each one is read as one micro-batch "
             "(default: %(default)s)")
    parser.add_argument(
        "--output", default=DEFAULT_OUTPUT, metavar="DIR",
        help="folder for the generated input, the Parquet results (sessions/, alerts/) and, "
             "by default, the checkpoints; recreated at every run, and refused if it holds "
             "files the demo did not write (default: %(default)s)")
    parser.add_argument(
        "--checkpoint", default=None, metavar="DIR",
        help="checkpoint folder of the two streaming queries, a local path or any URI "
             "Spark can write (hdfs://, s3a://...) (default: OUTPUT/checkpoints)")
    parser.add_argument(
        "--trigger", default=AVAILABLE_NOW, type=_trigger_text, metavar="WHEN",
        help="'available-now' (default: process every file, one per micro-batch, then stop) "
             "or a processing-time interval such as '1 second' (one micro-batch per "
             "interval; the demo stops the queries once all input is processed)")
    parser.add_argument(
        "--master", default="local[*]", metavar="URL",
        help="Spark master URL (default: %(default)s, every core of this machine)")
    parser.add_argument(
        "--remote", default=None, metavar="sc://HOST:PORT",
        help="run on a Spark Connect server instead of a local Spark (it must see the "
             "output folder's path; the checkpoint may be any URI the server can write)")
    parser.add_argument(
        "--host", choices=HOSTS, default="auto",
        help="the sparkwax host of both queries; 'auto' (default) picks per query by "
             "docs/performance.md's rule and says why")
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED,
        help="random seed of the generated clickstream (default: %(default)s)")
    parser.add_argument(
        "--format", choices=clickstream.FORMATS, default="json",
        help="file format of the generated input (default: %(default)s)")


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _trigger_text(text: str) -> str:
    try:
        parse_trigger(text)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def parse_trigger(text: str) -> Dict[str, Any]:
    """``"available-now"`` -> ``{"availableNow": True}``; ``"1 second"`` ->
    ``{"processingTime": "1000 milliseconds"}`` (keyword arguments of
    ``DataStreamWriter.trigger``)."""
    cleaned = text.strip().lower().replace("_", "-")
    if cleaned in (AVAILABLE_NOW, "availablenow"):
        return {"availableNow": True}
    try:
        ms = duration_ms(text)
    except ConfigError:
        raise ConfigError(f"--trigger must be 'available-now' or an interval such as "
                          f"'1 second', got {text!r}") from None
    if ms <= 0:
        raise ConfigError(f"--trigger interval must be positive, got {text!r}")
    return {"processingTime": f"{ms} milliseconds"}


__all__ = ["AVAILABLE_NOW", "DEFAULT_BATCHES", "DEFAULT_EVENTS", "DEFAULT_OUTPUT",
           "DEFAULT_SEED", "DemoOptions", "add_arguments", "parse_trigger"]
