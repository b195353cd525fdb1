"""The 35-key checkpoints of docs/performance.md's state show timing: one per host,
under /tmp/sparkwax-state-show/ck-<host>/checkpoint."""
import sys, shutil
from datetime import datetime, timedelta, timezone
import sparkwax as sw
from sparkwax.testing.spark import run_script_on_spark
from sparkwax.testing import Batch
from sparkwax.testing.reference import Accumulator
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
def item(k, m, v): return (k, {"ts": T0 + timedelta(minutes=m), "value": v})
spark = sw.local_session("local[2]", shuffle_partitions=2)
for host in ("per_key", "packed"):
    wd = f"/tmp/sparkwax-state-show/ck-{host}"
    shutil.rmtree(wd, ignore_errors=True)
    script = [Batch([item(f"k{i:02d}", i % 5, i) for i in range(35)]), Batch([item(f"k{i:02d}", 7, 1) for i in range(0, 35, 3)])]
    run_script_on_spark(spark, Accumulator, script, input_schema="key string, ts timestamp, value long",
        output_schema="kind string, a long, b long", time=sw.EventTime("ts", watermark="2 minutes"), workdir=wd, host=host)
print("ok")
