"""``sparkwax state show|clear CHECKPOINT``: look at or remove a query's state.

``show`` decodes every key's snapshot through Spark's ``statestore`` reader
and prints key, snapshot (repr, cut), size and next timer, then a summary
line; ``--json`` prints one JSON object per key (sorted by key; the snapshot
as JSON: see ``sparkwax._ops.snapshot_json``) and a summary line instead.
``show --key K`` for a key the state does not hold says so on stderr and
exits 1. ``clear`` removes the checkpoint after a confirmation (``--yes`` skips it),
and refuses while a query seems to be running on it. Checkpoints are read
through Spark's file systems (any URI Spark can write a checkpoint to:
``hdfs://``, ``s3a://``, ``abfss://``, ``viewfs://``...; ``--conf`` passes
the settings they need), or on a Spark Connect server with ``--remote``.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from ...errors import ConfigError, SparkwaxError, short_repr
from ..._ops.snapshot_json import json_value
from ..._ops.tables import format_table
from ..arg_types import non_negative_int
from ..reader import reader_session, session_options
from .state_rescale import add_rescale_parser, run_rescale
from .state_check import add_check_parser, run_check

if TYPE_CHECKING:
    from .. import Handler

_SNAPSHOT_WIDTH = 60
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
    show.add_argument("--limit", type=non_negative_int, default=20,
                      help="at most this many keys, largest first (default 20; 0 = all)")
    show.add_argument("--operator", type=non_negative_int, default=0,
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
        session_options(action)
    add_check_parser(actions, _CHECKPOINT_HELP, session_options)
    return run


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "show":
            return _show(args)
        if args.action == "rescale":
            return run_rescale(args, lambda: reader_session(args, "sparkwax-rescale"))
        if args.action == "check":
            return run_check(args, reader_session)
        return _clear(args)
    except SparkwaxError as error:
        print(f"sparkwax state: {error}", file=sys.stderr)
        return 2


def _show(args: argparse.Namespace) -> int:
    from ...engine.checkpoints.state.show import shown_state

    spark = reader_session(args, "sparkwax-state")
    entries, summary, deadlines = shown_state(
        spark, args.checkpoint, operator_id=args.operator, key=args.key,
        limit=args.limit or None, as_repr=not args.json)  # decoded on the executors
    if args.key is not None and not entries:
        print(f"sparkwax state: {key_not_found(args.checkpoint, args.key, summary)}",
              file=sys.stderr)
        return 1
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
    others = _other_steps(spark, args.checkpoint, args.operator)
    if others:
        print(others)
    return 0


def _other_steps(spark: Any, checkpoint: str, shown: int) -> Optional[str]:
    """The line naming the other steps' operators of a query of several
    steps (None for one step)."""
    from ...engine.checkpoints.state.asked import operator_ids
    from ...engine.checkpoints.storage import storage_for

    present = operator_ids(storage_for(spark), checkpoint)
    if len(present) < 2:
        return None
    rest = ", ".join(str(n) for n in present if n != shown)
    return (f"operator {shown} of {len(present)}: its query runs {len(present)} steps (Spark "
            f"numbers the last step 0); --operator {rest} shows the "
            f"{'other' if len(present) == 2 else 'others'}")


def key_not_found(checkpoint: str, key: str, summary: Dict[str, Any]) -> str:
    """What ``show --key`` says of a key the state does not hold (exit 1).

    >>> key_not_found("/ck", "zzz", {"live_keys": 2})
    "no key 'zzz' in the state of /ck (2 live keys; --key matches the first key column, the text cast to its type)"
    """
    return (f"no key {key!r} in the state of {checkpoint} ({summary['live_keys']} live keys; "
            f"--key matches the first key column, the text cast to its type)")


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
    from ...engine.checkpoints.snapshots import clear, require_checkpoint, running_query_hint
    from ...engine.checkpoints.storage import storage_for

    spark = reader_session(args, "sparkwax-state")
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


def _cut(text: str) -> str:
    return text if len(text) <= _SNAPSHOT_WIDTH else text[:_SNAPSHOT_WIDTH - 3] + "..."


def _iso(moment: Optional[datetime], missing: Any = "-") -> Any:
    return moment.isoformat() if moment is not None else missing


def print_table(header: List[str], rows: List[List[str]]) -> None:
    """The table as ``sparkwax._ops.tables.format_table`` draws it (the same text
    on a terminal and in a pipe, stable for scripts)."""
    print(format_table(header, rows))
