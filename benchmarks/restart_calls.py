"""A restart's own file system work: every call sparkwax makes on the
checkpoint through its storage layer (``engine/checkpoints/storage.py``,
Hadoop's FileSystem behind it) from ``sw.start`` to its return, on a
checkpoint with committed batches, and the time ``sw.start`` takes when
each of those calls costs ``--delay-ms`` more (a remote store's round trip:
the delay is added in the storage layer, so Spark's own reads of the
checkpoint, in the query's thread, are not in it). Issue 51's goal: at most
10 calls and under 1 s of sparkwax's own start-up work at 50 ms per call.

    python benchmarks/restart_calls.py [--delay-ms 0 50] [--restarts 2]
        [--host per_key|packed] [--timers processing|none]

Printed per delay: the calls by kind and by what they touched (the log
folders, the newest log files, sparkwax's own records), their count, the
time spent in them and ``sw.start``'s wall time, the median over
``--restarts`` restarts (each of one more input file, each run to its end
with ``availableNow``). Only the main thread's calls count (the liveness
record's renewals run beside the query every 2 s).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import threading
import time
from collections import Counter
from datetime import timedelta
from typing import Any, Callable, Dict, List

import sparkwax as sw
from sparkwax.engine.checkpoints import storage

METHODS = ("exists", "list", "read_bytes", "read_text", "write_text", "replace_text",
           "create_new", "delete", "rename")

class Count(sw.StatefulLogic):
    """A running count per key, a processing-time timer a minute after each item."""

    def __init__(self, resume=None):
        self.n, self.last = resume or (0, None)

    def on_item(self, value):
        self.n += 1
        self.last = sw.now()
        return [(self.n,)], sw.RETAIN

    def notify_at(self):
        return None if self.last is None else self.last + timedelta(minutes=1)

    def on_notify(self):
        return [], sw.DISCARD

    def snapshot(self):
        return (self.n, self.last)

class Untimed(Count):
    notify_at = sw.StatefulLogic.notify_at  # no timers: NoTimeout

class Recorder:
    """Counts the main thread's outermost storage calls and adds a delay to each."""

    def __init__(self, checkpoint: str, delay_s: float) -> None:
        self.checkpoint = checkpoint.rstrip("/")
        self.delay_s = delay_s
        self.calls: List[str] = []
        self.seconds = 0.0
        self._depth = threading.local()
        self._saved: Dict[str, Callable[..., Any]] = {}

    def __enter__(self) -> "Recorder":
        for name in METHODS:
            original = getattr(storage.HadoopStorage, name)
            self._saved[name] = original
            setattr(storage.HadoopStorage, name, self._wrap(name, original))
        return self

    def __exit__(self, *exc: Any) -> None:
        for name, original in self._saved.items():
            setattr(storage.HadoopStorage, name, original)

    def _wrap(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        recorder = self

        def counted(store: Any, path: str, *args: Any, **kwargs: Any) -> Any:
            depth = getattr(recorder._depth, "n", 0)
            outermost = depth == 0 and threading.current_thread() is threading.main_thread()
            recorder._depth.n = depth + 1
            began = time.perf_counter()
            try:
                if outermost and recorder.delay_s:
                    time.sleep(recorder.delay_s)
                return original(store, path, *args, **kwargs)
            finally:
                recorder._depth.n = depth
                if outermost:
                    recorder.seconds += time.perf_counter() - began
                    recorder.calls.append(f"{name} {recorder.touched(path)}")
        return counted

    def touched(self, path: str) -> str:
        """What a path is, relative to the checkpoint (a log's file by its folder)."""
        relative = str(path).split(self.checkpoint.split(":", 1)[-1], 1)[-1].lstrip("/")
        relative = re.sub(r"^(offsets|commits)/\d+$", r"\1/<batch>", relative or ".")
        return re.sub(r"^(sources/\d+)/\d+$", r"\1/<batch>", relative)

def write_file(source: str, number: int) -> None:
    rows = [{"key": f"k{(number * 7 + i) % 13}", "value": i} for i in range(20)]
    path = os.path.join(source, f"part-{number:04d}.json")
    with open(path, "w") as handle:
        handle.write("".join(json.dumps(row) + "\n" for row in rows))

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay-ms", type=float, nargs="+", default=[0.0, 50.0])
    parser.add_argument("--restarts", type=int, default=2)
    parser.add_argument("--host", default="per_key", choices=["per_key", "packed"])
    parser.add_argument("--timers", default="processing", choices=["processing", "none"])
    args = parser.parse_args()
    spark = sw.local_session("local[2]", shuffle_partitions=2)
    work = tempfile.mkdtemp(prefix="sparkwax-restart-calls-")
    source, checkpoint, out = (os.path.join(work, name) for name in ("in", "ck", "out"))
    os.makedirs(source)
    logic = Count if args.timers == "processing" else Untimed

    def started() -> Any:
        stream = spark.readStream.schema("key string, value long").json(source)
        step = sw.stateful(stream, key="key", builder=logic, value="value",
                           output_schema="n long", host=args.host, step_id="counts")
        return sw.start(step, checkpoint=checkpoint, path=out,
                        trigger={"availableNow": True})

    files = 0
    write_file(source, files)
    started().awaitTermination()  # the first run: the checkpoint the restarts find
    print(f"checkpoint {checkpoint} ({args.host}, timers: {args.timers})")
    for delay_ms in args.delay_ms:
        walls, inside, counts = [], [], []
        for _ in range(args.restarts):
            files += 1
            write_file(source, files)
            with Recorder(checkpoint, delay_ms / 1000) as recorder:
                began = time.perf_counter()
                query = started()
                walls.append(time.perf_counter() - began)
            query.awaitTermination()
            inside.append(recorder.seconds)
            counts.append(Counter(recorder.calls))
        calls = counts[-1]
        print(f"\n-- {delay_ms:g} ms per call: {sum(calls.values())} calls "
              f"(each restart: {[sum(c.values()) for c in counts]}), "
              f"in them {statistics.median(inside):.2f} s, "
              f"sw.start {statistics.median(walls):.2f} s (median of {args.restarts})")
        for what, number in sorted(calls.items(), key=lambda item: (-item[1], item[0])):
            print(f"  {number:>3}  {what}")
    spark.stop()

if __name__ == "__main__":
    main()
