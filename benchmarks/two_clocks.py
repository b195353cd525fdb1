"""What a step with both timer kinds costs per no-data micro-batch on Spark.

    python benchmarks/two_clocks.py [--keys 1000 10000] [--batches 6]

Each case is one streaming query over ``--keys`` keys of one row each
(``sparkwax.testing.reference.IdleAlarm``, ``EventTime("ts")``): every key
then holds an event-time timer the watermark does not reach and an hour-long
processing deadline, so under ``ProcessingTimeTimeout`` every key (per-key
host) or bucket (packed host) is woken at every micro-batch, finds nothing
due (``timers.Deadlines.due``) and is only re-armed. The source then stalls;
measured: ``durationMs.triggerExecution`` of the no-data micro-batches that
follow (median of ``--batches``), the default trigger (batches back to
back). An ``EventTime`` step with one timer kind runs no micro-batch at all
while its source stalls (Spark runs one only when the watermark moved), so
it has no row here. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import sparkwax as sw  # noqa: E402
from sparkwax.testing.reference import IdleAlarm  # noqa: E402

SCHEMA = "key string, ts timestamp, idle_ms long, alarm_discard boolean"


def case(spark, keys: int, host: str, batches: int) -> float:
    work = tempfile.mkdtemp(prefix="sw-two-clocks-")
    source = os.path.join(work, "in")
    os.makedirs(source)
    ts = datetime(2024, 1, 1, tzinfo=timezone.utc).isoformat()
    with open(os.path.join(source, "rows.json"), "w") as handle:
        for number in range(keys):
            handle.write(json.dumps({"key": f"k{number}", "ts": ts, "idle_ms": 3_600_000})
                         + "\n")
    stream = spark.readStream.schema(SCHEMA).json(source)
    out = sw.stateful(stream, key="key", builder=IdleAlarm, time=sw.EventTime("ts"),
                      output_schema="kind string, n long", host=host)
    query = out.writeStream.format("noop").option(
        "checkpointLocation", os.path.join(work, "checkpoint")).start()
    try:
        give_up = time.monotonic() + 600
        while time.monotonic() < give_up:
            done = {p["batchId"]: p for p in query.recentProgress}
            idle = [p for n, p in done.items() if n >= 1 and p["numInputRows"] == 0]
            if len(idle) >= batches + 1:
                break
            time.sleep(0.2)
        times = [p["durationMs"]["triggerExecution"] for p in idle[1:batches + 1]]
    finally:
        query.stop()
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--batches", type=int, default=6)
    args = parser.parse_args(argv)
    spark = sw.local_session("local[2]", shuffle_partitions=2)
    print("host      keys  no-data batch (median ms)")
    results = {}
    for host in ("per_key", "packed"):
        for keys in args.keys:
            results[host, keys] = case(spark, keys, host, args.batches)
            print(f"{host:8} {keys:6}  {results[host, keys]:8.0f}", flush=True)
    low, high = min(args.keys), max(args.keys)
    if high > low:
        for host in ("per_key", "packed"):
            slope = (results[host, high] - results[host, low]) / (high - low) * 1000
            print(f"{host}: {slope:.1f} µs per woken key per micro-batch")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
