"""The streaming demo: a clickstream through two sparkwax logics on Spark.

``sparkwax demo`` (or :func:`run_demo`) does, end to end:

1. generates the seeded clickstream (``clickstream.py``) into
   ``OUTPUT/input`` as N files with increasing modification times;
2. starts two Structured Streaming queries on ``spark.readStream`` with
   ``maxFilesPerTrigger=1`` (one file per micro-batch):
   ``UserSession`` keyed by user and ``CardFraud`` keyed by card (purchases
   only), both in event time with a 5-minute watermark, writing Parquet to
   ``OUTPUT/sessions`` and ``OUTPUT/alerts`` with checkpoints;
3. prints one progress line per micro-batch (batch id, rows, rows/s, state
   rows, watermark);
4. when the input is consumed (``availableNow``, or ``processAllAvailable``
   with a processing-time trigger) prints a summary. The watermark trails the
   newest event by 5 minutes, so sessions whose gap timer is not yet due are
   still in the state store at the end: the demo reads them back with Spark's
   ``statestore`` reader and reports them as "open at end of stream".

pyspark is imported only when the demo runs, so ``sparkwax --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from ...errors import ConfigError, SparkwaxError
from ...metrics import StepMetrics, by_batch
from ...engine.checkpoints.format.paths import join_path, scheme_of
from ...timers import EPOCH, EventTime, duration_ms
from . import clickstream
from ...step import Host
from .hosts import demo_hosts
from .logics import ALERT_SCHEMA, SESSION_SCHEMA, CardFraud, UserSession
from .options import (AVAILABLE_NOW, DEFAULT_OUTPUT, DemoOptions, add_arguments,
                      parse_trigger)
from .report import HOSTS_EXPLAINED, LINES_EXPLAINED, DemoLines, Printer, explain, print_summary

WATERMARK = "5 minutes"
MARKER = ".sparkwax-demo"
QUERIES = ("sessions", "alerts")


# pyspark's applyInPandasWithState pads its output frames with all-NA rows and
# concatenates them, which makes pandas >= 2.1 warn once per group on stderr.
_QUIET_WORKERS = {"spark.executorEnv.PYTHONWARNINGS":
                  "ignore:The behavior of DataFrame concatenation:FutureWarning"}


class DemoError(SparkwaxError):
    """The demo could not run (bad options, a foreign output folder, a failed query)."""


@dataclass
class QueryStats:
    name: str
    batches: int = 0
    rows: int = 0
    busy_ms: int = 0
    state_rows: int = 0
    first_ms: int = 0       # the first batch's time: it pays the start-up
    first_rows: int = 0
    keys_held: int = 0      # keys created - discarded (the demo's checkpoints start empty)
    metrics: StepMetrics = field(default_factory=StepMetrics)   # the step's, summed
    host: str = "per_key"   # packed: Spark's state rows are buckets


@dataclass
class DemoReport:
    """What the demo measured (also printed as the summary)."""

    events: int
    files: int
    output: str
    checkpoint: str
    late: int = 0
    sessions: int = 0
    session_events: int = 0
    mean_session_seconds: float = 0.0
    purchases: int = 0
    revenue: float = 0.0
    open_sessions: int = 0
    open_events: Optional[int] = None      # None when the state could not be read
    open_revenue: float = 0.0
    alerts: int = 0
    alerts_by_card: Dict[str, int] = field(default_factory=dict)
    top_alerts: List[Dict[str, Any]] = field(default_factory=list)
    fraud_cards: List[str] = field(default_factory=list)
    generate_seconds: float = 0.0
    stream_seconds: float = 0.0
    queries: Dict[str, QueryStats] = field(default_factory=dict)


# --- command line -------------------------------------------------------------


def run_from_args(args: argparse.Namespace) -> int:
    """Entry point of ``sparkwax demo``."""
    options = DemoOptions(events=args.events, batches=args.batches, output=args.output,
                          checkpoint=args.checkpoint, trigger=args.trigger, master=args.master,
                          seed=args.seed, format=args.format, remote=args.remote,
                          host=args.host)
    try:
        run_demo(options)
    except (DemoError, ConfigError) as error:
        print(f"sparkwax demo: error: {error}", file=sys.stderr)
        return 1
    return 0


# --- the run ------------------------------------------------------------------


def run_demo(options: DemoOptions, out: Optional[TextIO] = None) -> DemoReport:
    """Generate, stream, summarise. Returns the numbers it printed."""
    out = out or sys.stdout
    if options.events < 100:
        raise DemoError(f"--events must be at least 100, got {options.events}")
    trigger = parse_trigger(options.trigger)
    output = os.path.abspath(options.output)
    checkpoint = options.checkpoint or os.path.join(output, "checkpoints")
    checkpoint = checkpoint if scheme_of(checkpoint) else os.path.abspath(checkpoint)
    paths = {"input": os.path.join(output, "input"),
             "sessions": os.path.join(output, "sessions"),
             "alerts": os.path.join(output, "alerts")}
    _prepare(output, output if scheme_of(checkpoint) else checkpoint)

    say = Printer(out)
    started = time.perf_counter()
    stream = clickstream.generate(options.events, seed=options.seed)
    files = clickstream.write_batches(stream, paths["input"], options.batches, fmt=options.format)
    report = DemoReport(events=len(stream.events), files=len(files), output=output,
                        checkpoint=checkpoint, fraud_cards=stream.fraud_cards,
                        generate_seconds=time.perf_counter() - started)
    first, last = _event_span(stream.events)
    say(f"sparkwax demo: {report.events:,} events from {stream.users:,} users "
        f"({first:%Y-%m-%d %H:%M} .. {last:%H:%M} UTC) in {len(files)} {options.format} files "
        f"under {paths['input']} ({report.generate_seconds:.1f} s)")
    hosts = demo_hosts(stream.batches(options.batches), options.host)
    for name, choice in hosts.items():
        say(f"  {name}: host {choice.host} ({choice.reason})")
    explain(say, HOSTS_EXPLAINED)

    import sparkwax
    from ...engine.checkpoints.storage import storage_for
    from ...engine.spark_version import active_context

    owned = options.remote is None and active_context() is None
    if options.remote is not None:  # a Connect client session: the server outlives it
        say(f"connecting to Spark Connect at {options.remote}...")
        spark = sparkwax.local_session(remote=options.remote)
    elif owned:
        say(f"starting Spark ({options.master})...")
        spark = sparkwax.local_session(options.master, conf=_QUIET_WORKERS)
    else:
        # Not ours: reuse it as it is (no config changes, and never stopped here).
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        ignored = "" if spark.sparkContext.master == options.master else (
            f"; --master {options.master} is ignored")
        say(f"using the running SparkSession ({spark.sparkContext.master}{ignored})")
    try:
        if scheme_of(checkpoint):
            _prepare_checkpoint_uri(storage_for(spark), checkpoint)
        stream_started = time.perf_counter()
        queries = _start_queries(spark, paths, checkpoint, trigger, options.format,
                                 {name: choice.host for name, choice in hosts.items()})
        say(f"streaming with trigger {options.trigger!r}, watermark {WATERMARK}, "
            f"master {_master(spark)}, "
            f"{spark.conf.get('spark.sql.shuffle.partitions')} state partitions")
        explain(say, LINES_EXPLAINED.format(watermark=WATERMARK))
        try:
            _follow(queries, trigger, say, {name: c.host for name, c in hosts.items()})
        finally:
            for query in queries.values():
                if query.isActive:
                    query.stop()
        report.stream_seconds = time.perf_counter() - stream_started
        for name, query in queries.items():
            report.queries[name] = _stats(name, query)
            report.queries[name].host = hosts[name].host
        _collect_results(spark, report, paths, checkpoint)
    finally:
        if owned:
            spark.stop()
    print_summary(report, say, WATERMARK)
    return report


def _prepare(output: str, checkpoint: str) -> None:
    """Claim the output (and checkpoint) folders: create them, or clear what an
    earlier demo run left. Refuse folders with files the demo did not write."""
    for folder in dict.fromkeys([output, checkpoint]):
        if folder != output and folder.startswith(output + os.sep):
            continue  # inside the output folder: cleared with it
        if os.path.isdir(folder) and os.listdir(folder):
            if not os.path.exists(os.path.join(folder, MARKER)):
                raise DemoError(f"{folder} is not empty and was not written by "
                                "'sparkwax demo'; choose another folder")
            for entry in os.listdir(folder):
                path = os.path.join(folder, entry)
                if entry == MARKER:
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.remove(path)
        elif os.path.exists(folder) and not os.path.isdir(folder):
            raise DemoError(f"{folder} exists and is not a folder")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, MARKER), "w") as handle:
            handle.write("written by 'sparkwax demo'; the next run clears this folder\n")


def _prepare_checkpoint_uri(store: Any, checkpoint: str) -> None:
    """``_prepare`` for a checkpoint on a Hadoop file system, through Spark."""
    marker = join_path(checkpoint, MARKER)
    if store.exists(checkpoint) and store.list(checkpoint):
        if not store.exists(marker):
            raise DemoError(f"{checkpoint} is not empty and was not written by "
                            "'sparkwax demo'; choose another folder")
        for name in QUERIES:
            store.delete(join_path(checkpoint, name))
    store.write_text(marker, "written by 'sparkwax demo'; the next run clears this folder")


def _master(spark: Any) -> str:
    """The master URL, or the Connect server's (a Connect client has no SparkContext)."""
    from ...engine.deploy.session_confs import is_connect

    if is_connect(spark):
        return f"{spark.conf.get('spark.master', '?')} via Spark Connect"
    master: str = spark.sparkContext.master
    return master


def _event_span(events: Sequence[Dict[str, Any]]) -> Tuple[datetime, datetime]:
    times = [e["ts"] for e in events]
    return min(times), max(times)


def _start_queries(spark: Any, paths: Dict[str, str], checkpoint: str, trigger: Dict[str, Any],
                   fmt: str, hosts: Dict[str, Host]) -> Dict[str, Any]:
    from pyspark.sql import functions as F

    import sparkwax

    reader = spark.readStream.schema(clickstream.SCHEMA).option("maxFilesPerTrigger", 1)
    source = reader.json(paths["input"]) if fmt == "json" else reader.parquet(paths["input"])
    time_mode = EventTime("ts", watermark=WATERMARK)
    sessions = sparkwax.stateful(
        source.select("user_id", "ts", "event_id", "event_type", "amount"),
        key="user_id", builder=UserSession, output_schema=SESSION_SCHEMA, time=time_mode,
        order_by=["ts", "event_id"], step_id="sessions", host=hosts["sessions"])
    alerts = sparkwax.stateful(
        source.where(F.col("event_type") == "purchase")
              .select("card_id", "ts", "event_id", "amount"),
        key="card_id", builder=CardFraud, output_schema=ALERT_SCHEMA, time=time_mode,
        order_by=["ts", "event_id"], step_id="alerts", host=hosts["alerts"])
    started: Dict[str, Any] = {}
    try:
        for name, frame in (("sessions", sessions), ("alerts", alerts)):
            started[name] = (frame.writeStream.format("parquet")
                             .queryName(f"sparkwax_demo_{name}")
                             .option("path", paths[name])
                             .option("checkpointLocation", join_path(checkpoint, name))
                             .outputMode("append")
                             .trigger(**trigger)
                             .start())
    except Exception:
        for query in started.values():
            query.stop()
        raise
    return started


def _follow(queries: Dict[str, Any], trigger: Dict[str, Any], say: Printer,
            hosts: Dict[str, Host]) -> None:
    """Print progress until the queries have consumed the input."""
    from ...engine.queries.progress import Follower

    lines = Follower(queries, lambda line: say("  " + line), DemoLines(hosts))
    done = threading.Event()
    failure: List[BaseException] = []
    if "processingTime" in trigger:
        interval_s = duration_ms(trigger["processingTime"]) / 1000

        def drain() -> None:
            try:
                for query in queries.values():
                    query.processAllAvailable()
                # One more trigger lets Spark run the no-data batch that fires
                # the timers made due by the last data batch's watermark.
                _await_idle_batch(queries, deadline=time.monotonic() + 3 * interval_s + 5)
            except BaseException as error:  # surfaced by the main thread
                failure.append(error)
            finally:
                done.set()

        threading.Thread(target=drain, name="sparkwax-demo-drain", daemon=True).start()
    while True:
        lines.poll()
        _raise_failed(queries)
        if failure:
            raise DemoError(f"a streaming query failed: {failure[0]}") from failure[0]
        if done.is_set() or not any(q.isActive for q in queries.values()):
            break
        time.sleep(0.2)
    lines.poll()
    _raise_failed(queries)


def _await_idle_batch(queries: Any, deadline: float) -> None:
    last = {name: _last_batch(q) for name, q in queries.items()}
    while time.monotonic() < deadline:
        if all(_last_batch(q) > last[name] for name, q in queries.items()):
            return
        time.sleep(0.1)


def _last_batch(query: Any) -> int:
    progress = query.lastProgress
    return -1 if not progress else int(progress["batchId"])


def _raise_failed(queries: Any) -> None:
    for name, query in queries.items():
        if not query.isActive and query.exception() is not None:
            raise DemoError(f"the {name} query failed: {query.exception()}")


def _stats(name: str, query: Any) -> QueryStats:
    stats = QueryStats(name)
    progresses = query.recentProgress
    for progress in progresses:
        stats.batches += 1
        rows = int(progress.get("numInputRows") or 0)
        busy = int((progress.get("durationMs") or {}).get("triggerExecution") or 0)
        stats.rows += rows
        stats.busy_ms += busy
        if int(progress["batchId"]) == 0:
            stats.first_ms, stats.first_rows = busy, rows
    stats.metrics = sum(by_batch(progresses, name).values(), StepMetrics())
    stats.keys_held = stats.metrics.keys_created - stats.metrics.keys_discarded
    last = query.lastProgress
    if last:
        stats.state_rows = sum(int(op.get("numRowsTotal") or 0)
                               for op in last.get("stateOperators", []))
    return stats


# --- results --------------------------------------------------------------------


def _collect_results(spark: Any, report: DemoReport, paths: Any, checkpoint: str) -> None:
    from pyspark.sql import functions as F

    sessions = spark.read.schema(f"user_id string, {SESSION_SCHEMA}").parquet(paths["sessions"])
    row = sessions.agg(
        F.count(F.lit(1)).alias("n"), F.sum("events").alias("events"),
        F.avg(F.unix_micros("session_end") - F.unix_micros("session_start")).alias("micros"),
        F.sum("purchases").alias("purchases"), F.sum("revenue").alias("revenue")).first()
    report.sessions = int(row["n"])
    report.session_events = int(row["events"] or 0)
    report.mean_session_seconds = float(row["micros"] or 0) / 1e6
    report.purchases = int(row["purchases"] or 0)
    report.revenue = float(row["revenue"] or 0.0)

    report.open_sessions = report.queries["sessions"].state_rows
    snapshots = _state_snapshots(spark, join_path(checkpoint, "sessions"), "sessions")
    if snapshots is not None:
        report.open_sessions = len(snapshots)
        report.open_events = sum(s[2] for s in snapshots)
        report.open_revenue = sum(s[4] for s in snapshots) / 100
    report.late = report.queries["sessions"].metrics.rows_late  # Spark's progress

    alerts = spark.read.schema(f"card_id string, {ALERT_SCHEMA}").parquet(paths["alerts"])
    rows = []
    for r in alerts.select("card_id", "rule", "purchases", "amount",
                           F.unix_micros("detected_at").alias("detected_us"))\
            .orderBy("detected_us", "card_id").collect():
        alert = r.asDict()
        alert["detected_at"] = from_epoch_us(alert.pop("detected_us"))
        rows.append(alert)
    report.alerts = len(rows)
    by_card: Dict[str, List[Dict[str, Any]]] = {}
    for alert in rows:
        by_card.setdefault(alert["card_id"], []).append(alert)
    report.alerts_by_card = {card: len(found) for card, found in sorted(by_card.items())}
    ranked = sorted(by_card.items(), key=lambda item: (-len(item[1]),
                                                       -sum(a["amount"] for a in item[1]),
                                                       item[0]))
    report.top_alerts = [{"card_id": card, "alerts": len(found),
                          "rules": ", ".join(sorted({a["rule"] for a in found})),
                          "purchases": sum(a["purchases"] for a in found),
                          "amount": sum(a["amount"] for a in found),
                          "first": found[0]["detected_at"]} for card, found in ranked[:5]]


def _state_snapshots(spark: Any, checkpoint: str, step_id: str) -> Optional[List[Any]]:
    """The decoded snapshots of the query's live keys (Spark's ``statestore``
    reader at the last committed batch), or None if they cannot be read."""
    from ...engine.checkpoints.snapshots import read_entries

    try:
        entries = read_entries(spark, checkpoint, step_id=step_id)
    except Exception:  # e.g. a Spark without the reader
        return None
    snapshots = [entry.snapshot for entry in entries]
    if any(isinstance(s, Exception) for s in snapshots):
        return None
    return snapshots


# --- summary ----------------------------------------------------------------------


def from_epoch_us(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=int(micros))


__all__ = ["AVAILABLE_NOW", "DEFAULT_OUTPUT", "DemoError", "DemoOptions", "DemoReport",
           "add_arguments", "parse_trigger", "run_demo", "run_from_args"]
