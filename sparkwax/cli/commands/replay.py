"""``sparkwax replay CHECKPOINT APP.py:LOGIC``: replay what a checkpoint ran.

Rebuilds the micro-batches from the checkpoint's offset log and its file
source's log, reads each batch's input files with Spark (``--source-format``,
``--source-schema``, ``--source-option``), runs them offline through LOGIC
(a builder: a ``StatefulLogic`` class or a function, found in APP.py or an
importable module) with the step's settings, and compares each batch's
outputs, per key, with what the sink (``--sink``: Spark's file sink folder)
committed for it. Prints a table (batch, files, rows, keys, watermark,
outputs) and the first differing batch, key and rows. Exit code 0 when every
batch matches, 1 when one differs, 2 when the replay cannot run.

The step's key, output schema, time mode and step id default to what
``sw.start`` recorded in ``<checkpoint>/sparkwax-steps.json``.

>>> parse_time("event:ts:10 minutes")
EventTime(column='ts', watermark='10 minutes')
>>> parse_time("processing")
ProcessingTime()
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ...errors import ConfigError, SparkwaxError
from ...timers import EventTime, ProcessingTime, TimeMode
from ..reader import reader_session, session_options

if TYPE_CHECKING:
    from .. import Handler

_HELP_TIME = ("processing (default) or event:COLUMN:DELAY, e.g. 'event:ts:10 minutes' "
              "(default: the checkpoint's sparkwax-steps.json)")


def replay_command(parser: argparse.ArgumentParser) -> Handler:
    """Replay a checkpoint's micro-batches offline and compare them with its sink.

    Rebuilds the batches CHECKPOINT actually ran (its offsets and its file
    source's log), reads their input files with Spark, runs them through LOGIC
    (APP.py:NAME or module:NAME, a StatefulLogic class or builder) batch by
    batch with the step's settings, and compares each batch's outputs per key
    with the rows the sink (--sink, Spark's file sink) committed. Prints one
    line per batch and the first difference. Exit code 0: equal; 1: different
    (outputs or watermarks); 2: the replay could not run. Key, output schema,
    time mode and step id default to the checkpoint's sparkwax-steps.json
    (written by sw.start).
    """
    parser.add_argument("checkpoint", help="the query's checkpoint (a path or any URI Spark "
                                           "reads: hdfs://, s3a://...)")
    parser.add_argument("logic", metavar="APP.py:LOGIC",
                        help="the builder: NAME in the file APP.py, or module:NAME")
    parser.add_argument("--source-format", required=True,
                        help="the file source's format: json, csv, parquet, orc, text...")
    parser.add_argument("--source-schema", metavar="DDL",
                        help="the schema the query's readStream used, e.g. "
                             "'user string, ts timestamp'")
    parser.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a reader option of the query (header=true, ...); repeatable")
    parser.add_argument("--sink", metavar="PATH",
                        help="the query's file sink folder to compare with (without it, "
                             "the outputs are only counted)")
    parser.add_argument("--sink-format", default="parquet", help="the sink's format "
                                                                  "(default parquet)")
    parser.add_argument("--output-schema", metavar="DDL", help="the step's output_schema")
    parser.add_argument("--key", help="the key column(s), comma-separated")
    parser.add_argument("--time", help=_HELP_TIME)
    parser.add_argument("--order-by", help="order_by column(s), comma-separated")
    parser.add_argument("--value", help="value= column")
    parser.add_argument("--step-id", help="the step's step_id (picks the step in "
                                          "sparkwax-steps.json when it has several)")
    parser.add_argument("--batch", action="store_true", help="a StatefulBatchLogic "
                                                              "(sw.stateful_batch)")
    parser.add_argument("--ttl", help="ttl= duration, e.g. '30 minutes'")
    parser.add_argument("--max-state-bytes", type=int, help="max_state_bytes=")
    parser.add_argument("--map-path", action="append", default=[], metavar="FROM=TO",
                        help="read logged files under FROM from TO instead (a copy of the "
                             "input and sink folders), e.g. hdfs://nn:8020/data=/home/me/data; "
                             "repeatable")
    parser.add_argument("--transform", metavar="APP.py:FUNCTION",
                        help="a DataFrame -> DataFrame function: what the query did between "
                             "its source and the step")
    session_options(parser)
    return run


def parse_time(text: str) -> TimeMode:
    """``processing`` or ``event:COLUMN:DELAY``."""
    if text.strip() == "processing":
        return ProcessingTime()
    kind, _, rest = text.partition(":")
    column, _, delay = rest.partition(":")
    if kind.strip() != "event" or not column.strip():
        raise ConfigError(f"--time takes 'processing' or 'event:COLUMN:DELAY', got {text!r}")
    return EventTime(column.strip(), watermark=delay.strip() or "0 seconds")


def load_object(reference: str, what: str) -> Any:
    """``NAME`` from ``path/app.py:NAME`` (the file's folder goes on sys.path,
    so its sibling modules import) or from ``package.module:NAME``."""
    location, sep, name = reference.rpartition(":")
    if not sep or not location or not name:
        raise ConfigError(f"{what} must be APP.py:NAME or module:NAME, got {reference!r}")
    if location.endswith(".py") or "/" in location:
        path = Path(location).resolve()  # local disk only
        if not path.is_file():  # local disk only
            raise ConfigError(f"{what}: no such file {location!r}")
        folder = str(path.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        module_name = path.stem
        module = sys.modules.get(module_name)
        if module is None or getattr(module, "__file__", None) != str(path):
            spec = importlib.util.spec_from_file_location(module_name, path)
            if spec is None or spec.loader is None:
                raise ConfigError(f"{what}: cannot load {location!r}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as error:
                del sys.modules[module_name]
                raise ConfigError(f"{what}: loading {location} failed: {error!r}") from error
    else:
        try:
            module = importlib.import_module(location)
        except ImportError as error:
            raise ConfigError(f"{what}: cannot import {location!r}: {error}") from None
    found: Any = module
    for part in name.split("."):
        if not hasattr(found, part):
            raise ConfigError(f"{what}: {location} has no {name!r}")
        found = getattr(found, part)
    return found


def _pairs(items: List[str], flag: str) -> Dict[str, str]:
    pairs = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"{flag} takes KEY=VALUE, got {item!r}")
        pairs[name.strip()] = value
    return pairs


def _names(text: Optional[str]) -> Optional[List[str]]:
    if text is None:
        return None
    return [name.strip().strip("`") for name in text.split(",") if name.strip()]


def recorded_step(spark: Any, checkpoint: str, step_id: Optional[str]) -> Dict[str, Any]:
    """The step's description ``sw.start`` recorded next to the checkpoint
    (``{}`` when there is none)."""
    from ...engine.checkpoints.format.files import STEPS_FILE
    from ...engine.checkpoints.storage import join_path, storage_for

    text = storage_for(spark).read_text(join_path(checkpoint, STEPS_FILE))
    if not text or not text.strip():
        return {}
    try:
        steps = json.loads(text).get("steps", {})
    except ValueError:
        return {}
    if step_id is not None:
        return dict(steps.get(step_id, {}))
    return dict(next(iter(steps.values()))) if len(steps) == 1 else {}


def _recorded_time(step: Dict[str, Any]) -> Optional[TimeMode]:
    if step.get("time") == "event" and step.get("event_time"):
        column, _, delay = str(step["event_time"]).rpartition(" - ")
        return EventTime(column, watermark=delay)
    if step.get("time") == "processing":
        return ProcessingTime()
    return None


def _key_names(spark: Any, key_ddl: str) -> List[str]:
    from ...engine.checkpoints.batch_history import output_type

    return [f.name for f in output_type(spark, key_ddl).fields]


def run(args: argparse.Namespace) -> int:
    try:
        return _replay(args)
    except SparkwaxError as error:
        print(f"sparkwax replay: {error}", file=sys.stderr)
        return 2


def _replay(args: argparse.Namespace) -> int:
    from ...testing.checkpoint_replay import replay

    builder = load_object(args.logic, "LOGIC")
    transform = load_object(args.transform, "--transform") if args.transform else None
    source_options = _pairs(args.source_option, "--source-option")
    path_map = _pairs(args.map_path, "--map-path")
    spark = reader_session(args, "sparkwax-replay")
    recorded = recorded_step(spark, args.checkpoint, args.step_id)
    key = _names(args.key) or (_key_names(spark, recorded["key"]) if recorded.get("key")
                               else None)
    output_schema = args.output_schema or recorded.get("output")
    missing = [flag for flag, got in (("--key", key), ("--output-schema", output_schema))
               if not got]
    if missing or key is None:
        raise ConfigError(f"give {' and '.join(missing)} (the checkpoint has no "
                          f"sparkwax-steps.json naming them: it was not started by sw.start, "
                          f"or it holds several steps: pick one with --step-id)")
    time = parse_time(args.time) if args.time else _recorded_time(recorded)
    result = replay(
        args.checkpoint, builder, key=key if len(key) > 1 else key[0],
        output_schema=output_schema, source_format=args.source_format,
        source_schema=args.source_schema, source_options=source_options, sink=args.sink,
        sink_format=args.sink_format, spark=spark, time=time, order_by=_names(args.order_by),
        value=args.value, step_id=args.step_id or recorded.get("step_id"), batch=args.batch,
        ttl=args.ttl, max_state_bytes=args.max_state_bytes, transform=transform,
        path_map=path_map)
    print(result.report())
    return 0 if result.equal else 1


__all__ = ["load_object", "parse_time", "recorded_step", "replay_command", "run"]
