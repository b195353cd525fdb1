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
it has no row here.

    python benchmarks/two_clocks.py --python [--keys 10000]

No JVM: the Python side of one woken key, timed per key (CPU, best of 5),
with pyspark's own ``GroupState``: the per-key host given a timed-out key
whose timers are not due (re-armed only), and one whose event timer is due
(a full activation: decode, ``on_notify``, encode); the packed host given a
timed-out bucket of ``--keys`` keys, none due. Not collected by pytest.
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


def python_side(keys: int) -> None:
    from pyspark.sql.streaming.state import GroupState

    from sparkwax._driver import Driver
    from sparkwax.engine.hosts.bucket import Bucket
    from sparkwax.engine.hosts.columns import OTHER, InputLayout
    from sparkwax.engine.hosts.outputs import OutputBuilder
    from sparkwax.engine.planning.plan import PACKED_STATE_SCHEMA, TWO_CLOCK_STATE_SCHEMA
    from sparkwax.engine.hosts.two_clocks import TIMEOUT, TwoClockHost, TwoClockPackedHost
    from sparkwax.recovery import encode
    from sparkwax.step import Step
    from pyspark.sql import types as T

    step = Step.of(IdleAlarm, time=sw.EventTime("ts"), step_id="bench")
    driver = Driver(step)
    layout = InputLayout(names=("ts",), sources=("ts",), kinds=(OTHER,), scalar=False,
                         order_by=(), event_column="__sw_event_us")
    schema = T.StructType([T.StructField("kind", T.StringType()),
                           T.StructField("n", T.LongType())])
    outputs = OutputBuilder(["key"], schema, "bench", metrics=True)
    watermark, now = 1_704_067_200_000, 1_800_000_000_000
    window_end = watermark + 600_000
    blobs = {end: encode((1, 1, sw.timers.from_epoch_ms(end), None, False), step_id="bench",
                         key="k") for end in (window_end, watermark)}
    blob = blobs[window_end]

    def state(row, schema_):
        return GroupState(optionalValue=T.Row(*row), batchProcessingTimeMs=now,
                          eventTimeWatermarkMs=watermark, timeoutConf=TIMEOUT,
                          hasTimedOut=True, watermarkPresent=True, defined=True,
                          updated=False, removed=False, timeoutTimestamp=-1,
                          keyAsUnsafe=b"k", valueSchema=schema_)

    def timed(call, repeat=5):
        best = float("inf")
        for _ in range(repeat):
            started = time.process_time()
            call()
            best = min(best, time.process_time() - started)
        return best

    host = TwoClockHost(driver, layout, outputs, TIMEOUT, True)
    rows = 2000

    def per_key(timer):
        for _ in range(rows):
            s = state((blobs[timer], timer, None), TWO_CLOCK_STATE_SCHEMA)
            for _ in host(("k",), iter([]), s):
                pass
            s.json()

    waiting = timed(lambda: per_key(window_end)) / rows * 1e6
    due = timed(lambda: per_key(watermark)) / rows * 1e6
    print(f"per_key: woken, nothing due (re-armed): {waiting:6.1f} µs per key")
    print(f"per_key: woken, event timer due:        {due:6.1f} µs per key")
    bucket = Bucket.empty()
    for number in range(keys):
        bucket.put(f"k{number}", blob, window_end, None)
    packed_blob, _ = bucket.encode()
    packed = TwoClockPackedHost(driver, layout, outputs, TIMEOUT, ["key"], 1)

    def one_bucket():
        s = state((packed_blob, 1), PACKED_STATE_SCHEMA)
        for _ in packed(("b",), iter([]), s):
            pass
        s.json()

    print(f"packed: woken bucket of {keys} keys, none due: "
          f"{timed(one_bucket) * 1e3:6.2f} ms per bucket")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--python", action="store_true")
    args = parser.parse_args(argv)
    if args.python:
        python_side(max(args.keys))
        return 0
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
