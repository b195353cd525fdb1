"""What the demo prints: one progress line per micro-batch and the summary.

>>> print("\\n".join(table([("a", "1"), ("bbb", "22")], aligns="<>")))
a     1
bbb  22
>>> duration(75), duration(9)
('1m 15s', '9s')
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import List, Sequence, TextIO


class Printer:
    def __init__(self, out: TextIO):
        self.out = out

    def __call__(self, line: str = "") -> None:
        self.out.write(line + "\n")
        self.out.flush()


def print_summary(report, say: Printer, watermark: str) -> None:
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
                 f"{report.events:,} events in {report.stream_seconds:.1f} s of streaming"))
    for name, stats in report.queries.items():
        rows.append((f"  {name} query", f"{stats.batches} batches",
                     f"{stats.rows:,} rows, {stats.busy_ms / 1000:.1f} s busy, "
                     f"{stats.metrics.timers_fired:,} timers fired, "
                     f"{stats.state_rows:,} "
                     f"{'buckets' if stats.host == 'packed' else 'state rows'} at the end"))
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


def when(moment) -> str:
    if isinstance(moment, datetime):
        if moment.tzinfo is not None:
            moment = moment.astimezone(timezone.utc)
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return str(moment)
