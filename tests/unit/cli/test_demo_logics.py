"""The demo's logics, generator and command line, offline (no Spark)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import strategies as st

import sparkwax as sw
from sparkwax.cli import COMMANDS, build_parser, main
from sparkwax.cli.demo import clickstream
from sparkwax.cli.demo.app import parse_trigger
from sparkwax.cli.demo.logics import CardFraud, UserSession
from sparkwax.testing import Batch, Crash, Eof, check_logic, run
from sparkwax.testing.strategies import timestamped_items

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
TIME = sw.EventTime("ts", watermark="5 minutes")


def at(minutes=0, seconds=0):
    return T0 + timedelta(minutes=minutes, seconds=seconds)


def view(minutes, seconds=0):
    return {"ts": at(minutes, seconds), "event_type": "page_view", "amount": None}


def buy(minutes, amount, seconds=0):
    return {"ts": at(minutes, seconds), "event_type": "purchase", "amount": amount}


def session(start, end, events, purchases=0, revenue=0.0):
    return {"session_start": start, "session_end": end, "events": events,
            "purchases": purchases, "revenue": revenue}


# --- UserSession ---------------------------------------------------------------


def test_session_closes_inline_when_the_next_event_is_past_the_gap():
    script = [Batch([("u1", view(0)), ("u1", view(5)), ("u1", buy(10, 12.5)),
                     ("u1", buy(11, 0.1)), ("u1", buy(12, 0.2))]),
              Batch([("u1", view(60))]),
              Eof()]
    result = run(UserSession, script, time=TIME)
    assert result.by_key == {"u1": [session(at(0), at(12), 5, 3, 12.8),
                                    session(at(60), at(60), 1)]}
    assert result.snapshots == {}


def test_session_closes_on_the_gap_timer_when_the_watermark_passes():
    script = [Batch([("u1", view(0)), ("u1", view(3))]),
              Batch([("u2", view(40))])]  # watermark becomes 35 min: u1's timer (33) is due
    result = run(UserSession, script, time=TIME)
    assert result.by_key == {"u1": [session(at(0), at(3), 2)]}
    assert result.snapshots == {"u2": (at(40), at(40), 1, 0, 0)}
    assert result.timers == {"u2": at(70)}


def test_session_is_open_until_the_watermark_passes_last_event_plus_gap():
    script = [Batch([("u1", view(0))]), Batch([("u2", view(34))])]  # watermark 29 min < 30
    result = run(UserSession, script, time=TIME)
    assert result.outputs == []
    assert set(result.snapshots) == {"u1", "u2"}


def test_session_drops_late_events_and_widens_for_out_of_order_ones():
    script = [Batch([("u1", view(60)), ("u2", view(59))]),
              Batch([("u1", view(55)),      # at the watermark (60 - 5): late, dropped
                     ("u2", view(62)),
                     ("u2", view(57))]),    # out of order, not late: widens the session
              Eof()]
    result = run(UserSession, script, time=TIME)
    assert result.late == 1
    assert result.by_key == {"u1": [session(at(60), at(60), 1)],
                             "u2": [session(at(57), at(62), 3)]}


def test_session_survives_crashes():
    script = [Batch([("u1", view(0))]), Crash(), Batch([("u1", buy(1, 3.0))]), Crash(), Eof()]
    assert run(UserSession, script, time=TIME).by_key == {
        "u1": [session(at(0), at(1), 2, 1, 3.0)]}


# --- CardFraud -------------------------------------------------------------------


def purchase(minutes, seconds, amount):
    return {"ts": at(minutes, seconds), "amount": amount}


def alert(rule, start, detected, purchases, amount):
    return {"rule": rule, "window_start": start, "detected_at": detected,
            "purchases": purchases, "amount": amount}


def test_card_testing_alerts_once_at_the_third_small_purchase():
    script = [Batch([("c1", purchase(0, s, 1.0)) for s in (0, 5, 10, 15, 20)]), Eof()]
    result = run(CardFraud, script, time=TIME)
    assert result.by_key == {"c1": [alert("small-amounts", at(0), at(0, 10), 3, 3.0)]}


def test_velocity_alerts_at_the_sixth_purchase_within_two_minutes():
    items = [("c1", purchase(0, 15 * n, 20.0)) for n in range(8)]
    result = run(CardFraud, [Batch(items[:4]), Batch(items[4:]), Eof()], time=TIME)
    assert result.by_key == {"c1": [alert("velocity", at(0), at(1, 15), 6, 120.0)]}


def test_no_alert_for_ordinary_or_spread_out_purchases():
    items = [("c1", purchase(0, s, 1.5)) for s in (0, 40, 70)]    # never 3 within a minute
    items += [("c2", purchase(0, 20 * n, 30.0)) for n in range(5)]  # only 5 within 2 minutes
    items += [("c3", purchase(0, 25 * n, 30.0)) for n in range(7)]  # 6th is 125 s after the 1st
    result = run(CardFraud, [Batch(items), Eof()], time=TIME)
    assert result.outputs == []


def test_an_idle_card_is_discarded_and_can_alert_again():
    burst = [("c1", purchase(0, s, 0.9)) for s in (0, 3, 6)]
    later = [("c1", purchase(9, s, 0.9)) for s in (0, 3, 6)]
    script = [Batch(burst), Batch([("other", purchase(8, 0, 50.0))])]
    middle = run(CardFraud, script, time=TIME)
    assert set(middle.snapshots) == {"other"}  # watermark 3 min >= 0:06 + 2 min: c1 forgotten
    result = run(CardFraud, script + [Batch(later), Eof()], time=TIME)
    assert result.by_key == {"c1": [alert("small-amounts", at(0), at(0, 6), 3, 2.7),
                                    alert("small-amounts", at(9), at(9, 6), 3, 2.7)]}


def test_a_new_burst_in_the_same_micro_batch_alerts_again():
    items = [("c1", purchase(0, s, 0.9)) for s in (0, 3, 6)]
    items += [("c1", purchase(5, s, 0.9)) for s in (0, 3, 6)]
    result = run(CardFraud, [Batch(items), Eof()], time=TIME)
    assert [a["detected_at"] for a in result.by_key["c1"]] == [at(0, 6), at(5, 6)]


def test_card_state_keeps_only_the_window():
    items = [("c1", purchase(0, 50 * n, 40.0)) for n in range(4)]  # 0, 50, 100, 150 s
    result = run(CardFraud, [Batch(items)], time=TIME)
    assert result.snapshots == {"c1": (((at(0, 50), 4000), (at(0, 100), 4000),
                                         (at(0, 150), 4000)), False)}
    assert result.timers == {"c1": at(0, 150) + timedelta(minutes=2)}


# --- properties (restore / crash / determinism) ----------------------------------


def _events(items):
    kinds = ["page_view", "page_view", "add_to_cart", "purchase"]
    return [(key, {"ts": value["ts"], "event_type": kinds[value["value"] % 4],
                   "amount": (value["value"] * 37 % 9000) / 100 if value["value"] % 4 == 3
                   else None})
            for key, value in items]


def _purchases(items):
    return [(key, {"ts": value["ts"], "amount": [0.5, 1.99, 2.0, 35.0][value["value"] % 4]})
            for key, value in items]


def test_user_session_property():
    items = timestamped_items(keys=st.sampled_from(["u1", "u2"]), values=st.integers(0, 50),
                              steps=st.integers(0, 1800).map(lambda s: timedelta(seconds=s)),
                              max_size=25).map(_events)
    check_logic(UserSession, items=items, time=TIME, max_examples=150)


def test_card_fraud_property():
    items = timestamped_items(keys=st.sampled_from(["c1", "c2"]), values=st.integers(0, 50),
                              steps=st.integers(0, 90).map(lambda s: timedelta(seconds=s)),
                              disorder=st.integers(0, 60).map(lambda s: timedelta(seconds=s)),
                              max_size=30).map(_purchases)
    check_logic(CardFraud, items=items, time=TIME, max_examples=150)


# --- the generator, and both logics over it offline --------------------------------


def test_generator_is_seeded_exact_and_realistic():
    stream = clickstream.generate(3_000, seed=11)
    again = clickstream.generate(3_000, seed=11)
    assert stream.events == again.events and stream.bursts == again.bursts
    assert clickstream.generate(3_000, seed=12).events != stream.events
    assert len(stream.events) == 3_000
    assert len({e["event_id"] for e in stream.events}) == 3_000
    assert all(e["ts"].tzinfo is timezone.utc for e in stream.events)
    kinds = {e["event_type"] for e in stream.events}
    assert kinds == {"page_view", "add_to_cart", "purchase"}
    purchases = [e for e in stream.events if e["event_type"] == "purchase"]
    assert all(e["card_id"] and e["amount"] > 0 for e in purchases)
    assert all(e["card_id"] is None for e in stream.events if e["event_type"] != "purchase")
    assert len(stream.bursts) == 3 and len(stream.fraud_cards) == 2  # one card hit twice
    assert sum(len(b) for b in stream.batches(4)) == 3_000


def test_write_batches_json_and_parquet(tmp_path):
    pytest.importorskip("pyarrow")
    stream = clickstream.generate(500, seed=3)
    for fmt in clickstream.FORMATS:
        paths = clickstream.write_batches(stream, str(tmp_path / fmt), 4, fmt=fmt)
        assert [p.rsplit("/", 1)[1] for p in paths] == [f"batch-0000{i}.{fmt}" for i in range(4)]
        mtimes = [int(__import__("os").stat(p).st_mtime) for p in paths]
        assert mtimes == sorted(mtimes) and len(set(mtimes)) == 4
    lines = (tmp_path / "json" / "batch-00000.json").read_text().splitlines()
    assert len(lines) == 125 and lines[0].startswith('{"event_id":')
    import pyarrow.parquet as pq
    table = pq.read_table(str(tmp_path / "parquet" / "batch-00003.parquet"))
    assert table.num_rows == 125 and str(table.schema.field("ts").type) == "timestamp[ms, tz=UTC]"


def test_both_logics_offline_on_the_generated_stream():
    stream = clickstream.generate(6_000, seed=5)
    batches = stream.batches(4)
    sessions = run(UserSession, [Batch([(e["user_id"], e) for e in b]) for b in batches],
                   time=TIME)
    late = clickstream.late_events(batches, TIME.delay_ms)
    closed = sum(s["events"] for _, s in sessions.outputs)
    still_open = sum(snap[2] for snap in sessions.snapshots.values())
    assert sessions.late == len(late) > 0
    assert closed + still_open + len(late) == 6_000
    alerts = run(CardFraud, [Batch([(e["card_id"], e) for e in b if e["event_type"] == "purchase"])
                             for b in batches], time=TIME)
    alerted = {}
    for card, _ in alerts.outputs:
        alerted[card] = alerted.get(card, 0) + 1
    planted = {}
    for burst in stream.bursts:
        planted[burst.card_id] = planted.get(burst.card_id, 0) + 1
    assert alerted == planted


# --- command line ------------------------------------------------------------------


def test_cli_help_explains_every_demo_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--events", "--batches", "--output", "--checkpoint", "--trigger",
                   "--master", "--seed"):
        assert option in text
    assert "available-now" in text and "sparkwax-demo-out" in text


def test_cli_without_a_command_prints_help(capsys):
    assert main([]) == 2
    assert "demo" in capsys.readouterr().err


def test_cli_rejects_bad_options(capsys):
    for argv in (["demo", "--trigger", "soon"], ["demo", "--events", "0"], ["nope"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
    assert "--trigger" in capsys.readouterr().err


def test_cli_subcommands_are_one_function_each():
    def hello(parser):
        """Say hello."""
        parser.add_argument("--name", default="world")
        return lambda args: 0 if args.name == "sparkwax" else 3

    parser = build_parser({**COMMANDS, "hello": hello})
    args = parser.parse_args(["hello", "--name", "sparkwax"])
    assert args.handler(args) == 0


def test_demo_refuses_a_foreign_output_folder(tmp_path, capsys):
    (tmp_path / "precious.txt").write_text("not the demo's")
    assert main(["demo", "--events", "200", "--output", str(tmp_path)]) == 1
    assert "was not written by 'sparkwax demo'" in capsys.readouterr().err
    assert (tmp_path / "precious.txt").read_text() == "not the demo's"


def test_demo_clears_its_own_earlier_output(tmp_path):
    from sparkwax.cli.demo.app import MARKER, _prepare

    output, checkpoint = tmp_path / "out", tmp_path / "elsewhere"
    _prepare(str(output), str(checkpoint))
    (output / "sessions").mkdir()
    (output / "sessions" / "part-0.parquet").write_text("old")
    (checkpoint / "offsets").mkdir()
    _prepare(str(output), str(checkpoint))
    assert sorted(p.name for p in output.iterdir()) == [MARKER]
    assert sorted(p.name for p in checkpoint.iterdir()) == [MARKER]


def test_parse_trigger():
    assert parse_trigger("available-now") == {"availableNow": True}
    assert parse_trigger("2 seconds") == {"processingTime": "2000 milliseconds"}
    with pytest.raises(sw.ConfigError):
        parse_trigger("0 seconds")


def test_summary_prints_every_line_of_the_report():
    import io
    from datetime import datetime, timezone

    from sparkwax.cli.demo.app import DemoReport, QueryStats
    from sparkwax.cli.demo.report import Printer, print_summary

    report = DemoReport(events=1_000, files=4, output="/out", checkpoint="/out/ck", late=7,
                        sessions=20, session_events=900, open_sessions=3, open_events=93,
                        alerts=2, alerts_by_card={"c1": 2}, fraud_cards=["c1"],
                        stream_seconds=2.0, queries={"sessions": QueryStats("sessions")})
    report.top_alerts = [{"card_id": "c1", "alerts": 2, "rules": "burst", "purchases": 5,
                          "amount": 12.5, "first": datetime(2024, 1, 1, tzinfo=timezone.utc)}]
    out = io.StringIO()
    print_summary(report, Printer(out), "5 minutes")
    text = out.getvalue()
    for line in ("sessions closed", "open at end of stream", "late events dropped",
                 "(5 minutes behind the newest event)", "top alerted cards",
                 "  c1         2  burst          5  $12.50  2024-01-01 00:00:00",
                 "results: /out/sessions"):
        assert line in text, line
