"""Two stateful steps over two keys in one streaming query (Spark 4.0+).

A user's first visit to each page, by user (a dedupe that forgets a user 10
minutes of event time after their latest visit), then a running count of
first visits, by region: ``sw.stateful`` twice, as one step is written.
JSON files in (``user, region, ts, page``), Parquet out (``region, n``).
Kill it at any point and start it again with the same arguments: it resumes
from ``--checkpoint``, nothing lost or counted twice.

    python examples/regions_app.py --input in/ --output out/ --checkpoint ck/ \\
        [--host per_key|packed]

Offline, the same two steps run with ``sparkwax.testing.run_flow`` (see
``offline``); docs/guide.md, "Several stateful steps".
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from typing import Any, List, Optional, Sequence

import sparkwax as sw

INPUT_SCHEMA = "user string, region string, ts timestamp, page long"
TIME = sw.EventTime("ts", watermark="2 minutes")


class FirstVisits(sw.StatefulLogic):
    """A user's first visit to each page; forgets the user 10 minutes of
    event time after their latest visit."""

    def __init__(self, resume: Any = None):
        self.pages, self.last = (set(resume[0]), resume[1]) if resume else (set(), None)

    def on_item(self, value: Any) -> Any:
        self.last = value["ts"] if self.last is None else max(self.last, value["ts"])
        if value["page"] in self.pages:
            return [], sw.RETAIN
        self.pages.add(value["page"])
        return [value], sw.RETAIN

    def notify_at(self) -> Any:
        return None if self.last is None else self.last + timedelta(minutes=10)

    def on_notify(self) -> Any:
        return [], sw.DISCARD

    def snapshot(self) -> Any:
        return (sorted(self.pages), self.last)


class RegionCount(sw.StatefulLogic):
    """A region's first visits so far, after each one."""

    def __init__(self, resume: Any = None):
        self.n = resume or 0

    def on_item(self, value: Any) -> Any:
        self.n += 1
        return [(self.n,)], sw.RETAIN

    def snapshot(self) -> Any:
        return self.n


VISITS = sw.Step.of(FirstVisits, step_id="first_visits", time=TIME,
                    output_schema="region string, ts timestamp, page long")
REGIONS = sw.Step.of(RegionCount, step_id="regions", output_schema="n long")


def build(stream: Any, host: str = "per_key") -> Any:
    """The two steps over a stream of visits: ``region, n`` rows."""
    visits = sw.stateful(stream, key="user", step=VISITS, host=host)
    return sw.stateful(visits.select("region", "ts", "page"), key="region", step=REGIONS,
                       host=host)


def by_region(user: str, visit: Any) -> Any:
    """What ``build``'s select does between the steps, for ``run_flow``."""
    return visit["region"], {"ts": visit["ts"], "page": visit["page"]}


def offline(script: Sequence[Any]) -> List[Any]:
    """The two steps offline over ``script`` (``sparkwax.testing`` steps)."""
    from sparkwax.testing import run_flow

    return run_flow(script, VISITS, by_region, REGIONS)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="first visits by user, then counts by region")
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--host", default="per_key", choices=["per_key", "packed"])
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    spark = sw.local_session(args.master, shuffle_partitions=2)
    stream = spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", 1) \
        .json(args.input)
    query = sw.start(build(stream, args.host), checkpoint=args.checkpoint, path=args.output,
                     trigger={"availableNow": True}, query_name="regions")
    query.awaitTermination()
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
