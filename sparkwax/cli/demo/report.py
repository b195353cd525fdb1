"""What the demo prints: one progress line per micro-batch and the summary.

>>> print("\\n".join(table([("a", "1"), ("bbb", "22")], aligns="<>")))
a     1
bbb  22
>>> duration(75), duration(9)
('1m 15s', '9s')
"""

from __future__ import annotations

import os
import textwrap
from datetime import datetime, timezone
from typing import Any, Dict, List, Mapping, Sequence, TextIO

from ...engine.queries.progress import progress_line
from ...metrics import steps_in

HOSTS_EXPLAINED = (
    "(host per_key: Spark keeps one state row per key and pays a fixed cost for every "
    "key a micro-batch touches; host packed: sparkwax groups the keys into a few buckets, "
    "one Spark state row each, and rewrites a bucket whole when one of its keys changes: "
    "cheaper when many keys change per micro-batch)")
LINES_EXPLAINED = (
    "one line per micro-batch of each query: rows read from the batch's file; rows/s over "
    "the batch's time (the first batch of a query also starts Spark's Python workers and "
    "plans the query, so it shows 'start-up' instead); late = events at or behind the "
    "watermark, dropped; timers = timers that fired (a session closed by its 30-minute gap, "
    "a card's window ended); keys held = users (sessions) or cards (alerts) with state "
    "after the batch, and where they are stored (Spark state rows: one per key, or the "
    "buckets of the packed host); watermark = the newest event time seen minus {watermark}; "
    "the last figure is the batch's wall time")


class Printer:
    def __init__(self, out: TextIO):
        self.out = out

    def __call__(self, line: str = "") -> None:
        self.out.write(line + "\n")
        self.out.flush()


def explain(say: Printer, text: str, width: int = 100) -> None:
    """``text`` wrapped, indented by two spaces."""
    for line in textwrap.wrap(text, width - 2, break_on_hyphens=False):
        say("  " + line)


class DemoLines:
    """The demo's progress line: ``progress_line``'s figures in plain words,
    keys held (counted from the step's keys created and discarded: the demo's
    checkpoints start empty) instead of Spark's state rows, and 'start-up'
    instead of a rate for a query's first batch."""

    def __init__(self, hosts: Mapping[str, str]):
        self.hosts = hosts
        self.keys: Dict[str, int] = {}

    def __call__(self, name: str, progress: Mapping[str, Any], width: int = 0) -> str:
        step = steps_in(progress).get(name)
        if step is not None:
            self.keys[name] = self.keys.get(name, 0) + step.keys_created - step.keys_discarded
        line = progress_line(name, progress, width)
        rows = int(progress.get("numInputRows") or 0)
        if int(progress["batchId"]) == 0 and rows:
            rate = f"{float(progress.get('processedRowsPerSecond') or 0.0):>9,.0f} rows/s"
            line = line.replace(rate, f"{'start-up':>16}", 1)
        state_rows = sum(int(op.get("numRowsTotal") or 0)
                         for op in progress.get("stateOperators") or [])
        where = (f"{state_rows:,} buckets" if self.hosts.get(name) == "packed"
                 else f"{state_rows:,} state rows")
        return line.replace(f"state {state_rows:,} rows",
                            f"keys held {self.keys.get(name, 0):,} (in {where})", 1)


def print_summary(report: Any, say: Printer, watermark: str) -> None:
    """The end-of-demo table (``report`` is a DemoReport)."""
    say()
    say("sparkwax demo: summary")
    say("=" * 72)
    rows = [
        ("input events", f"{report.events:,}", f"{report.files} files, one per micro-batch"),
        ("sessions closed", f"{report.sessions:,}",
         f"{report.session_events:,} events; UserSession, 30-minute gap"),
    ]
    open_note = "still in state: the watermark has not passed their gap"
    if report.open_events is not None:
        open_note = (f"{report.open_events:,} events, ${report.open_revenue:,.2f}; "
                     "gap timer not due yet")
    rows.append(("open at end of stream", f"{report.open_sessions:,}", open_note))
    rows.append(("mean session length", duration(report.mean_session_seconds),
                 f"{report.session_events / max(report.sessions, 1):.1f} events per session"))
    rows.append(("purchases", f"{report.purchases:,}", "in closed sessions"))
    rows.append(("revenue", f"${report.revenue:,.2f}", "in closed sessions"))
    rows.append(("late events dropped", f"{report.late:,}",
                 f"at or behind the watermark ({watermark} behind the newest event); "
                 "sessions step's rows_late in Spark's progress"))
    rows.append(("fraud alerts", f"{report.alerts:,}",
                 f"on {len(report.alerts_by_card)} cards (CardFraud); "
                 f"{len(report.fraud_cards)} cards had planted bursts"))
    throughput = report.events / report.stream_seconds if report.stream_seconds else 0.0
    rows.append(("throughput", f"{throughput:,.0f} events/s",
                 f"{report.events:,} events in {report.stream_seconds:.1f} s of streaming, "
                 "start-up included; each query's rate after its first batch below"))
    for name, stats in report.queries.items():
        after = stats.rows - stats.first_rows
        busy_after = (stats.busy_ms - stats.first_ms) / 1000
        rate = f"{after / busy_after:,.0f} rows/s after it" if busy_after > 0 else "no more"
        stored = "buckets" if stats.host == "packed" else "state rows"
        rows.append((f"  {name} query", f"{stats.batches} batches",
                     f"{stats.rows:,} rows, {stats.busy_ms / 1000:.1f} s busy (first batch "
                     f"{stats.first_ms / 1000:.1f} s, start-up included; {rate}), "
                     f"{stats.metrics.timers_fired:,} timers fired, keys held at the end "
                     f"{stats.keys_held:,} (host {stats.host}: {stats.state_rows:,} {stored})"))
    for line in table(rows, aligns="<><"):
        say(line)
    if report.top_alerts:
        say()
        say("top alerted cards")
        header = ("card", "alerts", "rule", "purchases", "amount", "first alert (UTC)")
        cells = [header] + [(a["card_id"], str(a["alerts"]), a["rules"], str(a["purchases"]),
                             f"${a['amount']:,.2f}", when(a["first"]))
                            for a in report.top_alerts]
        for number, line in enumerate(table(cells, aligns="<><>><")):
            say("  " + line)
            if number == 0:
                say("  " + "-" * len(line))
    say()
    say(f"results: {os.path.join(report.output, 'sessions')} and "
        f"{os.path.join(report.output, 'alerts')} (Parquet); checkpoints: {report.checkpoint}")


def table(rows: Sequence[Sequence[str]], aligns: str) -> List[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [f"{cell:{align}{width}}" for cell, align, width in zip(row, aligns, widths)]
        lines.append("  ".join(cells).rstrip())
    return lines


def duration(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def when(moment: Any) -> str:
    if isinstance(moment, datetime):
        if moment.tzinfo is not None:
            moment = moment.astimezone(timezone.utc)
        shown: str = moment.strftime("%Y-%m-%d %H:%M:%S")
        return shown
    return str(moment)
