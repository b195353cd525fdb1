"""The demo's progress lines and summary say what each figure is."""

import io

from sparkwax.cli.demo.app import QueryStats
from sparkwax.cli.demo.report import DemoLines, Printer, print_summary
from sparkwax.metrics import StepMetrics


def _progress(batch, rows, created, discarded, state_rows):
    return {"batchId": batch, "numInputRows": rows, "processedRowsPerSecond": 22.0,
            "durationMs": {"triggerExecution": 1000},
            "stateOperators": [{"numRowsTotal": state_rows}],
            "eventTime": {"watermark": "2024-03-01T03:00:33.000Z"},
            "observedMetrics": {"sparkwax:sessions": {"keys_created": created,
                                                      "keys_discarded": discarded}}}


def test_lines_show_keys_held_not_buckets_and_start_up_not_a_rate():
    lines = DemoLines({"sessions": "packed", "alerts": "per_key"})
    first = lines("sessions", _progress(0, 500, 300, 0, 8))
    second = lines("sessions", _progress(1, 500, 100, 40, 8))
    assert "start-up" in first and "rows/s" not in first
    assert "keys held 300 (in 8 buckets)" in first
    assert "keys held 360 (in 8 buckets)" in second and "22 rows/s" in second
    per_key = DemoLines({"sessions": "per_key"})("sessions", _progress(0, 5, 5, 0, 5))
    assert "keys held 5 (in 5 state rows)" in per_key


class _Report:
    events, files, output, checkpoint, fraud_cards = 1000, 2, "/out", "/ck", []
    sessions, session_events, open_sessions, open_events = 10, 900, 3, None
    mean_session_seconds, purchases, revenue, late, alerts = 60.0, 5, 10.0, 1, 0
    alerts_by_card, top_alerts, stream_seconds = {}, [], 20.0

    def __init__(self):
        stats = QueryStats("sessions", batches=3, rows=1000, busy_ms=12_000, state_rows=8,
                           first_ms=10_000, first_rows=500, keys_held=340, host="packed",
                           metrics=StepMetrics())
        self.queries = {"sessions": stats}


def test_summary_gives_the_rate_after_the_first_batch_and_the_keys_held():
    out = io.StringIO()
    print_summary(_Report(), Printer(out), "5 minutes")
    text = out.getvalue()
    assert "first batch 10.0 s, start-up included; 250 rows/s after it" in text
    assert "keys held at the end 340 (host packed: 8 buckets)" in text
