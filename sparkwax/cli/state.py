"""``sparkwax state show|clear CHECKPOINT``: look at or remove a query's state.

``show`` decodes every key's snapshot through Spark's ``statestore`` reader
and prints key, snapshot (repr, cut), size and next timer, then a summary
line; ``--json`` prints one JSON object per key (sorted by key; the snapshot
as JSON: see ``sparkwax.snapshot_json``) and a summary line instead.
``clear`` removes the checkpoint after a confirmation (``--yes`` skips it),
and refuses while a query seems to be running on it. Checkpoints are read
through Spark's file systems (any URI Spark can write a checkpoint to:
``hdfs://``, ``s3a://``, ``abfss://``, ``viewfs://``...; ``--conf`` passes
the settings they need), or on a Spark Connect server with ``--remote``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from ..errors import ConfigError, SparkwaxError, short_repr
from ..paths import local_folder
from ..snapshot_json import json_value
from .rescale import add_rescale_parser, run_rescale
from .state_check import add_check_parser, run_check

if TYPE_CHECKING:
    from . import Handler

_SNAPSHOT_WIDTH = 60
# The reader's own session (when no --master): one core, one shuffle partition, a
# fixed 1 GB driver (no machine sizing), no UI, and a JVM tuned to start fast (the
# C1 compiler only, the serial collector): the work is a few small jobs.
READER_CONF = {
    "spark.default.parallelism": "1",
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-Dlog4j.rootLogger=ERROR -XX:TieredStopAtLevel=1 "
                                     "-XX:+UseSerialGC",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
}
_CHECKPOINT_HELP = "the query's checkpoint: a path or any URI Spark can read (hdfs://, s3a://...)"


def state_command(parser: argparse.ArgumentParser) -> Handler:
    """Show, check, rescale or clear the state of a checkpointed sparkwax query.

    show: decode every key's snapshot from CHECKPOINT (Spark's statestore
    reader) and print key, snapshot, size in bytes and next timer, with a
    summary line (live keys, total bytes, largest key).
    clear: remove CHECKPOINT (offsets, commits and state) so the query starts
    over from its source; asks for confirmation unless --yes.
    check: restore every stored snapshot through APP.py:LOGIC on the
    executors; exit 1 when any key fails.
    rescale: put a stopped query's state in --partitions N state partitions
    (a packed step's keys in 4 x N buckets), keeping every key.
    """
    actions = parser.add_subparsers(dest="action", metavar="{show,clear,rescale,check}", required=True)
    show = actions.add_parser("show", help="print the live keys and their snapshots")
    show.add_argument("checkpoint", help=_CHECKPOINT_HELP)
    show.add_argument("--key", help="only this key (first key column, as a string)")
    show.add_argument("--limit", type=int, default=20,
                      help="at most this many keys, largest first (default 20; 0 = all)")
    show.add_argument("--operator", type=int, default=0,
                      help="stateful operator id when the query has several (default 0)")
    show.add_argument("--json", action="store_true",
                      help="JSON lines for scripts: one object per key, sorted by key (snapshot "
                           "as JSON: datetimes ISO 8601, bytes as {\"$bytes\": base64}, "
                           "other objects as {\"$repr\": ...}), then the summary")
    clear = actions.add_parser("clear", help="remove the checkpoint (after confirmation)")
    clear.add_argument("checkpoint", help=_CHECKPOINT_HELP)
    clear.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    clear.add_argument("--force", action="store_true",
                       help="clear even if a query seems to be running on it")
    rescale = add_rescale_parser(actions, _CHECKPOINT_HELP)
    for action in (show, clear, rescale):
        _session_options(action)
    add_check_parser(actions, _CHECKPOINT_HELP, _session_options)
    return run


def _session_options(parser: argparse.ArgumentParser) -> None:
    """Where the checkpoint is read from: a local Spark (any Hadoop file
    system URI it can reach) or a Spark Connect server (its file systems)."""
    parser.add_argument("--master", default=None,
                        help="Spark master for the reader (default: a minimal local[1] "
                             "session, see READER_CONF)")
    parser.add_argument("--remote", metavar="sc://HOST:PORT",
                        help="use a Spark Connect server instead (reads its file systems)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting, e.g. spark.hadoop.fs.s3a.endpoint=...; "
                             "repeatable")


def _settings(args: argparse.Namespace) -> Dict[str, str]:
    settings = {}
    for item in args.conf:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ConfigError(f"--conf takes KEY=VALUE, got {item!r}")
        settings[name.strip()] = value
    return settings


def _session(args: argparse.Namespace, app_name: str) -> Any:
    """The Spark session that reads the checkpoint; a checkpoint that surely is
    on the local disk is checked first, so a wrong path fails before a JVM starts."""
    from ..engine.session import local_session

    settings = _settings(args)
    folder = None if args.remote else local_folder(args.checkpoint, settings, os.environ)
    if folder is not None and not os.path.isdir(os.path.join(folder, "offsets")):  # local disk only
        raise ConfigError(f"{args.checkpoint!r} is not a streaming checkpoint (no offsets/ "
                          "folder)")
    if args.remote is None and args.master is None:
        from pyspark import SparkContext

        running = SparkContext._active_spark_context
        if running is not None:  # called from a program: its session, its settings kept
            return local_session(running.master, app_name=app_name, conf=settings)
        return local_session("local[1]", app_name=app_name, shuffle_partitions=1,
                             conf={**READER_CONF, **settings})
    return local_session(args.master, app_name=app_name, conf=settings, remote=args.remote)


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "show":
            return _show(args)
        if args.action == "rescale":
            return run_rescale(args, _session(args, "sparkwax-rescale"))
        if args.action == "check":
            return run_check(args, _session)
        return _clear(args)
    except SparkwaxError as error:
        print(f"sparkwax state: {error}", file=sys.stderr)
        return 2


def _show(args: argparse.Namespace) -> int:
    from ..engine.state.show import shown_state

    spark = _session(args, "sparkwax-state")
    entries, summary, deadlines = shown_state(
        spark, args.checkpoint, operator_id=args.operator, key=args.key,
        limit=args.limit or None, as_repr=not args.json)  # decoded on the executors
    if args.json:
        for entry in entries:
            snapshot = entry.snapshot if entry.error is None else {"$error": entry.error}
            extra = {"deadline": _iso(entry.deadline, None)} if deadlines else {}
            print(json.dumps({"key": json_value(entry.key), "snapshot": snapshot,
                              "bytes": entry.size, "timer": _iso(entry.timer, None), **extra,
                              "partition": entry.partition}))
        print(json.dumps({"summary": json_value(summary)}))
        return 0
    rows = [[short_repr(e.key), _cut(e.snapshot if e.error is None else f"<{e.error}>"),
             str(e.size), _iso(e.timer)] + ([_iso(e.deadline)] if deadlines else [])
            for e in entries]
    print_table(["key", "snapshot", "bytes", "next timer"] + (["deadline"] if deadlines else []),
                rows)
    print(summary_line(summary, len(entries), args.key))
    return 0


def summary_line(summary: Dict[str, Any], shown: int, key: Any = None) -> str:
    """The line under ``state show``'s table.

    >>> summary_line({"live_keys": 35, "total_bytes": 4585, "largest_key": "k21",
    ...               "largest_bytes": 131}, 20)
    "35 live keys (showing the 20 largest, sorted by key), 4585 bytes in all, largest key 'k21' (131 bytes)"
    >>> summary_line({"live_keys": 2, "total_bytes": 9, "largest_key": 7,
    ...               "largest_bytes": 5}, 2)
    '2 live keys (sorted by key), 9 bytes in all, largest key 7 (5 bytes)'
    """
    if key is not None:
        which = f"showing key {key!r}"
    elif shown < summary["live_keys"]:
        which = f"showing the {shown} largest, sorted by key"
    else:
        which = "sorted by key"
    return (f"{summary['live_keys']} live keys ({which}), {summary['total_bytes']} bytes in "
            f"all, largest key {summary['largest_key']!r} ({summary['largest_bytes']} bytes)")


def _clear(args: argparse.Namespace) -> int:
    from ..engine.checkpoint import clear, require_checkpoint, running_query_hint
    from ..engine.storage import storage_for

    spark = _session(args, "sparkwax-state")
    require_checkpoint(storage_for(spark), args.checkpoint)
    if not args.force:
        busy = running_query_hint(spark, args.checkpoint, 120.0)
        if busy:
            raise ConfigError(f"{args.checkpoint} looks in use ({busy}); stop the query "
                              "first or pass --force")
    if not args.yes:
        answer = input(f"Remove {args.checkpoint} (offsets, commits and all state)? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing removed")
            return 1
    clear(args.checkpoint, force=True, spark=spark)
    print(f"removed {args.checkpoint}")
    return 0


def format_table(header: List[str], rows: List[List[str]]) -> str:
    """A plain text table.

    >>> print(format_table(["key", "n"], [["a", "1"], ["bb", "22"]]))
    key | n
    ----+---
    a   | 1
    bb  | 22
    """
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
    line: Callable[[List[Any]], str] = lambda cells: " | ".join(
        str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    rule = "-+-".join("-" * w for w in widths)
    return "\n".join([line(header), rule] + [line(r) for r in rows])


def _cut(text: str) -> str:
    return text if len(text) <= _SNAPSHOT_WIDTH else text[:_SNAPSHOT_WIDTH - 3] + "..."


def _iso(moment: Optional[datetime], missing: Any = "-") -> Any:
    return moment.isoformat() if moment is not None else missing


def print_table(header: List[str], rows: List[List[str]]) -> None:
    """rich's table on an interactive terminal, ``format_table``'s plain text
    otherwise (stable for scripts and pipes)."""
    if sys.stdout.isatty():
        try:
            from rich.console import Console
            from rich.table import Table

            table = Table(*header, box=None, header_style="bold")
            for row in rows:
                table.add_row(*row)
            Console().print(table)
            return
        except ImportError:
            pass
    print(format_table(header, rows))
