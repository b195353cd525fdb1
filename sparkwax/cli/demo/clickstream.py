"""A seeded, realistic e-commerce clickstream, written as micro-batch files.

Users visit in sessions (runs of page views, add-to-carts and purchases
separated by silences longer than 30 minutes); each user pays with one or two
cards of their own. A few card-testing bursts are planted: a fraudster runs
many small purchases (or many ordinary ones) on one stolen card within a
minute or two. Events reach the collector a little late (seconds), a few
minutes late, or, for about 0.4%, very late (offline phones): those fall
behind the demo's watermark and are dropped.

>>> stream = generate(2_000, seed=1)
>>> len(stream.events), stream.events[0]["ts"].tzinfo is not None
(2000, True)
>>> sorted(stream.fraud_cards) == sorted({b.card_id for b in stream.bursts})
True
>>> [len(b) for b in stream.batches(3)]
[667, 667, 666]

Command line (writes the files only)::

    python -m sparkwax.cli.demo.clickstream --events 200000 --batches 20 --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

UTC = timezone.utc
START = datetime(2024, 3, 1, tzinfo=UTC)
SCHEMA = ("event_id long, ts timestamp, user_id string, event_type string, page string, "
          "product_id string, amount double, card_id string")
FORMATS = ("json", "parquet")
BASE_MTIME = 1_700_000_000  # file i gets this + i seconds as modification time

_PAGES = ("/", "/search", "/category/shoes", "/category/books", "/category/kitchen",
          "/category/toys", "/deals", "/help", "/account")
_HORIZON_MS = 24 * 3_600_000
_SESSION_GAP_MIN_MS = 31 * 60_000        # > the 30-minute session gap of UserSession
_SESSION_GAP_MEAN_MS = 4 * 3_600_000
_MAX_PURCHASES_PER_SESSION = 2


@dataclass(frozen=True)
class Burst:
    """A planted fraud burst: ``purchases`` purchases on ``card_id``."""

    card_id: str
    user_id: str
    kind: str          # "card-testing" (small amounts) or "velocity" (ordinary amounts)
    start: datetime
    purchases: int


@dataclass
class Clickstream:
    """The generated events, in arrival order (the order files are cut in)."""

    events: List[Dict[str, Any]]
    bursts: List[Burst]
    users: int
    cards: int
    seed: int
    arrival_ms: List[int] = field(default_factory=list, repr=False)

    @property
    def fraud_cards(self) -> List[str]:
        """Cards with at least one planted burst (sorted)."""
        return sorted({b.card_id for b in self.bursts})

    def batches(self, count: int) -> List[List[Dict[str, Any]]]:
        """The events cut into ``count`` consecutive, nearly equal micro-batches."""
        count = max(1, min(count, len(self.events))) if self.events else 1
        size, extra = divmod(len(self.events), count)
        out, position = [], 0
        for number in range(count):
            end = position + size + (1 if number < extra else 0)
            out.append(self.events[position:end])
            position = end
        return out


def generate(events: int = 200_000, *, seed: int = 7, start: datetime = START) -> Clickstream:
    """``events`` events (exactly), reproducible from ``seed``."""
    if events < 100:
        raise ValueError(f"the demo clickstream needs at least 100 events, got {events}")
    rng = random.Random(seed)
    bursts_wanted = 3 + events // 50_000
    burst_sizes = [_burst_size(rng, number) for number in range(bursts_wanted)]
    normal_wanted = events - sum(burst_sizes)

    users: List[str] = []
    cards_of: Dict[str, List[str]] = {}
    raw: List[Tuple[Any, ...]] = []  # (ts_ms, user, type, page, product, cents, card)
    card_count = 0
    while len(raw) < normal_wanted * 1.25:
        user = f"u{len(users):06d}"
        users.append(user)
        own = 1 if rng.random() < 0.7 else 2
        cards_of[user] = [f"c-{card_count + i:06d}" for i in range(own)]
        card_count += own
        _user_sessions(rng, user, cards_of[user], raw)
    raw.sort(key=lambda e: (e[0], e[1]))
    del raw[normal_wanted:]

    first, last = raw[0][0], raw[-1][0]
    bursts: List[Burst] = []
    owners = [u for u in users if cards_of[u]]
    victim_cards: List[str] = []
    for number, size in enumerate(burst_sizes):
        if number == bursts_wanted - 1 and victim_cards:
            card = victim_cards[0]           # the first stolen card is hit again
        else:
            card = rng.choice(cards_of[rng.choice(owners)])
            while card in victim_cards:
                card = rng.choice(cards_of[rng.choice(owners)])
        victim_cards.append(card)
        kind = "velocity" if number % 3 == 1 else "card-testing"
        at = first + (last - first) * (number + 1) // (bursts_wanted + 1) + rng.randrange(60_000)
        fraudster = f"x{number:05d}"
        bursts.append(Burst(card, fraudster, kind, _moment(start, at), size))
        _plant_burst(rng, raw, fraudster, card, kind, at, size)

    raw.sort(key=lambda e: (e[0], e[1]))
    burst_users = {b.user_id for b in bursts}
    rows, arrivals = [], []
    for event_id, (ts, user, kind, page, product, cents, card) in enumerate(raw):
        rows.append({"event_id": event_id, "ts": _moment(start, ts), "user_id": user,
                     "event_type": kind, "page": page, "product_id": product,
                     "amount": None if cents is None else cents / 100, "card_id": card})
        arrivals.append(ts + _delay_ms(rng, user in burst_users))
    order = sorted(range(len(rows)), key=lambda i: (arrivals[i], i))
    return Clickstream(events=[rows[i] for i in order], bursts=bursts, users=len(users),
                       cards=card_count, seed=seed, arrival_ms=[arrivals[i] for i in order])


def _user_sessions(rng: random.Random, user: str, cards: Sequence[str], out: List[Any]) -> None:
    t = rng.randrange(10 * 3_600_000)
    while t < _HORIZON_MS:
        t = _session(rng, user, cards, t, out)
        t += _SESSION_GAP_MIN_MS + int(rng.expovariate(1 / _SESSION_GAP_MEAN_MS))


def _session(rng: random.Random, user: str, cards: Sequence[str], t: int, out: List[Any]) -> int:
    """One visit starting at ``t`` (ms); returns the time of its last event."""
    length = 1 + min(int(rng.expovariate(1 / 17)), 150)
    cart: List[int] = []
    purchases = 0
    for position in range(length):
        if position:
            t += 2_000 + min(int(rng.expovariate(1 / 40_000)), 20 * 60_000)
        roll = rng.random()
        if cart and purchases < _MAX_PURCHASES_PER_SESSION and roll < 0.1:
            out.append((t, user, "purchase", "/checkout/done", None, sum(cart),
                        rng.choice(cards)))
            purchases += 1
            cart = []
        elif position and roll > 0.91:
            product = rng.randrange(1, 5000)
            cart.append(_price_cents(rng))
            out.append((t, user, "add_to_cart", f"/product/{product}", f"p{product:05d}",
                        None, None))
        else:
            if rng.random() < 0.5:
                product = rng.randrange(1, 5000)
                out.append((t, user, "page_view", f"/product/{product}", f"p{product:05d}",
                            None, None))
            else:
                out.append((t, user, "page_view", rng.choice(_PAGES), None, None, None))
    return t


def _price_cents(rng: random.Random) -> int:
    """Shop prices: mostly $5-$100, a long tail, always ending in .99 (>= $4.99)."""
    dollars = max(4, int(rng.lognormvariate(3.3, 0.8)))
    return dollars * 100 + 99


def _burst_size(rng: random.Random, number: int) -> int:
    return rng.randint(7, 10) if number % 3 == 1 else rng.randint(6, 15)


def _plant_burst(rng: random.Random, out: List[Any], user: str, card: str, kind: str, at: int,
                 size: int) -> None:
    t = at
    for _ in range(size):
        if kind == "card-testing":
            cents = rng.randint(50, 199)                    # $0.50 - $1.99
            t += rng.randint(2_000, 8_000)
        else:
            cents = rng.randint(15, 90) * 100 + 99          # ordinary-looking amounts
            t += rng.randint(5_000, 14_000)
        out.append((t, user, "purchase", "/checkout/done", None, cents, card))


def _delay_ms(rng: random.Random, fraudster: bool) -> int:
    """How late an event reaches the collector."""
    if fraudster:
        return rng.randrange(3_000)
    roll = rng.random()
    if roll < 0.004:
        return rng.randrange(12 * 60_000, 3 * 3_600_000)   # offline phone: behind the watermark
    if roll < 0.03:
        return rng.randrange(20_000, 4 * 60_000)           # flaky network: out of order
    return rng.randrange(15_000)


def _moment(start: datetime, ms: int) -> datetime:
    return start + timedelta(milliseconds=ms)


# --- files -----------------------------------------------------------------


def write_batches(stream: Clickstream, directory: str, batches: int, *,
                  fmt: str = "json") -> List[str]:
    """Write the stream as ``batches`` files (``batch-00000.json`` ...) whose
    modification times increase, so a file source with
    ``maxFilesPerTrigger=1`` reads one file per micro-batch, in order. Each
    file appears atomically (written aside, then renamed in)."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    os.makedirs(directory, exist_ok=True)
    staging = os.path.join(directory, ".staging")
    os.makedirs(staging, exist_ok=True)
    paths = []
    for number, rows in enumerate(stream.batches(batches)):
        name = f"batch-{number:05d}.{fmt}"
        temporary = os.path.join(staging, name)
        (_write_json if fmt == "json" else _write_parquet)(temporary, rows)
        os.utime(temporary, (BASE_MTIME + number,) * 2)
        path = os.path.join(directory, name)
        os.replace(temporary, path)
        paths.append(path)
    os.rmdir(staging)
    return paths


def _write_json(path: str, rows: Iterable[Dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            record = {k: v for k, v in row.items() if v is not None}
            record["ts"] = row["ts"].isoformat(timespec="milliseconds").replace("+00:00", "Z")
            handle.write(json.dumps(record, separators=(",", ":")))
            handle.write("\n")


def _write_parquet(path: str, rows: List[Dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("event_id", pa.int64()), ("ts", pa.timestamp("ms", tz="UTC")),
                        ("user_id", pa.string()), ("event_type", pa.string()),
                        ("page", pa.string()), ("product_id", pa.string()),
                        ("amount", pa.float64()), ("card_id", pa.string())])
    columns = {name: [row[name] for row in rows] for name in schema.names}
    pq.write_table(pa.table(columns, schema=schema), path)


# --- what Spark will do with it ---------------------------------------------


def late_events(batches: Sequence[Sequence[Dict[str, Any]]], watermark_ms: int,
                where: Optional[Callable[[Dict[str, Any]], bool]] = None) -> List[Dict[str, Any]]:
    """The events Spark drops as late when it reads ``batches`` one per
    micro-batch with ``withWatermark("ts", watermark)`` on the rows that pass
    ``where``: an event is late when its time is at or behind the watermark,
    which is the max event time of the earlier batches minus the delay."""
    late: List[Dict[str, Any]] = []
    max_ms: Optional[int] = None
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    for rows in batches:
        threshold = None if max_ms is None else max(max_ms - watermark_ms, 0)
        for row in rows:
            if where is not None and not where(row):
                continue
            ms = (row["ts"] - epoch) // timedelta(milliseconds=1)
            if threshold is not None and ms <= threshold:
                late.append(row)
            if max_ms is None or ms > max_ms:
                max_ms = ms
    return late


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sparkwax.cli.demo.clickstream",
        description="Write the demo's seeded e-commerce clickstream as micro-batch files.")
    parser.add_argument("--events", type=int, default=200_000,
                        help="number of events (default: %(default)s)")
    parser.add_argument("--batches", type=int, default=12,
                        help="number of files, one per micro-batch (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default: %(default)s)")
    parser.add_argument("--format", choices=FORMATS, default="json",
                        help="file format (default: %(default)s)")
    parser.add_argument("--out", required=True, help="directory to write the files to")
    args = parser.parse_args(argv)
    stream = generate(args.events, seed=args.seed)
    paths = write_batches(stream, args.out, args.batches, fmt=args.format)
    print(f"{len(stream.events):,} events from {stream.users:,} users in {len(paths)} "
          f"{args.format} files under {args.out}; fraud bursts on cards "
          f"{', '.join(stream.fraud_cards)}")
    return 0


__all__ = ["BASE_MTIME", "Burst", "Clickstream", "FORMATS", "SCHEMA", "START", "generate",
           "late_events", "main", "write_batches"]

if __name__ == "__main__":
    sys.exit(main())
