"""``sparkwax demo`` end to end on the shared session, checked against the
generator's own data and the offline runner."""

from __future__ import annotations

import os
import re
from collections import Counter
from datetime import timedelta

import pytest
from pyspark.sql import functions as F

import sparkwax as sw
from sparkwax.cli import main
from sparkwax.cli.demo import clickstream
from sparkwax.cli.demo.logics import CardFraud, UserSession, to_cents
from sparkwax.testing import Batch, run
from sparkwax.timers import EPOCH

EVENTS, BATCHES, SEED = 5_000, 3, 3
TIME = sw.EventTime("ts", watermark="5 minutes")

pytestmark = pytest.mark.slow


def _micros(moment) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)


def test_demo_end_to_end(spark, tmp_path, capsys):
    output = tmp_path / "out"
    code = main(["demo", "--events", str(EVENTS), "--batches", str(BATCHES),
                 "--output", str(output), "--seed", str(SEED), "--master", "local[2]"])
    printed = capsys.readouterr().out
    assert code == 0, printed

    # The shared session was reused and is still alive.
    assert spark.range(3).count() == 3
    assert "using the running SparkSession" in printed

    # Progress lines, one per micro-batch of each query, and the summary.
    for name in ("sessions", "alerts"):
        batches = re.findall(rf"^\s+{name}\s+batch\s+(\d+)", printed, flags=re.M)
        assert [int(b) for b in batches][:BATCHES] == list(range(BATCHES))
    assert "sparkwax demo: summary" in printed
    # Each query's host, picked by docs/performance.md's rule, and why.
    for name in ("sessions", "alerts"):
        assert re.search(rf"^  {name}: host (packed|per_key) \(~[\d,]+ of [\d,]+ keys per "
                         r"micro-batch change; each changed key costs ~[\d.,]+ KB of buckets "
                         r"rewritten\)$", printed, flags=re.M), printed
    # every figure explained once, in plain words
    assert "host packed:" in printed and "keys held" in printed and "start-up" in printed
    assert "open at end of stream" in printed and "top alerted cards" in printed

    # Outputs: Parquet with the expected columns, checkpoints next to them.
    sessions = spark.read.parquet(str(output / "sessions"))
    alerts = spark.read.parquet(str(output / "alerts"))
    assert sessions.columns == ["user_id", "session_start", "session_end", "events",
                                "purchases", "revenue"]
    assert alerts.columns == ["card_id", "rule", "window_start", "detected_at", "purchases",
                              "amount"]
    assert os.path.isdir(output / "checkpoints" / "sessions" / "offsets")
    assert os.path.isdir(output / "checkpoints" / "alerts" / "offsets")

    # Sessions: exactly what the offline runner computes on the same micro-batches.
    stream = clickstream.generate(EVENTS, seed=SEED)
    batches = stream.batches(BATCHES)
    offline = run(UserSession, [Batch([(e["user_id"], e) for e in b]) for b in batches],
                  time=TIME)
    online = Counter(
        (r["user_id"], r["start"], r["end"], r["events"], r["purchases"], to_cents(r["revenue"]))
        for r in sessions.select("user_id", F.unix_micros("session_start").alias("start"),
                                 F.unix_micros("session_end").alias("end"), "events",
                                 "purchases", "revenue").collect())
    expected = Counter((user, _micros(s["session_start"]), _micros(s["session_end"]),
                        s["events"], s["purchases"], to_cents(s["revenue"]))
                       for user, s in offline.outputs)
    assert online == expected

    # Every event is in a closed session, an open one, or was late.
    late = clickstream.late_events(batches, TIME.delay_ms)
    closed = sum(count for (_, _, _, count, _, _), n in online.items() for _ in range(n))
    still_open = sum(snapshot[2] for snapshot in offline.snapshots.values())
    assert closed > 0 and len(late) > 0 and len(offline.snapshots) > 0
    assert closed + still_open + len(late) == EVENTS
    assert _summary_number(printed, "sessions closed") == sum(online.values())
    assert _summary_number(printed, "open at end of stream") == len(offline.snapshots)
    # the summary's late count is the step's rows_late in Spark's progress
    assert _summary_number(printed, "late events dropped") == len(late) == offline.late

    # Alerts: every planted burst, and nothing else.
    alerted = Counter(r["card_id"] for r in alerts.collect())
    assert alerted == Counter(b.card_id for b in stream.bursts)
    offline_alerts = run(CardFraud, [Batch([(e["card_id"], e) for e in b
                                            if e["event_type"] == "purchase"])
                                     for b in batches], time=TIME)
    assert sorted((card, a["rule"], _micros(a["detected_at"]), a["purchases"])
                  for card, a in offline_alerts.outputs) == sorted(
        (r["card_id"], r["rule"], r["at"], r["purchases"])
        for r in alerts.select("card_id", "rule", F.unix_micros("detected_at").alias("at"),
                               "purchases").collect())
    for card in stream.fraud_cards:
        assert card in printed


def _summary_number(printed: str, label: str) -> int:
    match = re.search(rf"^{re.escape(label)}\s+([\d,]+)", printed, flags=re.M)
    assert match, f"no {label!r} line in:\n{printed}"
    return int(match.group(1).replace(",", ""))
