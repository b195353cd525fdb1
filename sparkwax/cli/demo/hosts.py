"""Which host each demo query runs on, by docs/performance.md's rule.

The per-key host pays Spark's per-group cost (0.6-1.5 ms) for every key a
micro-batch touches; the packed host rewrites its buckets, ``N x (s + 25 B)``
bytes for ``N`` live keys with ``s``-byte snapshots, spread over the ``k``
touched keys. Packed wins with thousands of touched keys, or while the
rewrite per touched key stays under ~20 KB.

>>> choose_host(keys_total=8_000, keys_per_batch=5_000, snapshot_bytes=80).host
'packed'
>>> choose_host(keys_total=1_000_000, keys_per_batch=300, snapshot_bytes=900).host
'per_key'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Sequence

PACKED_BELOW_BYTES = 20_000     # bucket bytes rewritten per touched key
MANY_TOUCHED = 1_000            # "thousands of keys touched per micro-batch"
HOSTS = ("auto", "per_key", "packed")


@dataclass(frozen=True)
class HostChoice:
    host: str
    reason: str


def choose_host(keys_total: int, keys_per_batch: int, snapshot_bytes: int) -> HostChoice:
    """The host docs/performance.md recommends for a query of this shape."""
    touched = max(keys_per_batch, 1)
    rewrite = keys_total * (snapshot_bytes + 25) / touched
    shape = (f"~{keys_per_batch:,} of {keys_total:,} keys per micro-batch change; "
             f"each changed key costs ~{rewrite / 1000:,.1f} KB of buckets rewritten")
    if keys_per_batch >= MANY_TOUCHED or rewrite < PACKED_BELOW_BYTES:
        return HostChoice("packed", shape)
    return HostChoice("per_key", shape)


# Pickled snapshot sizes, measured on the demo's data: UserSession keeps five
# numbers and times, CardFraud the recent purchases of a card.
SNAPSHOT_BYTES = {"sessions": 90, "alerts": 200}
KEY_OF = {"sessions": "user_id", "alerts": "card_id"}


def demo_hosts(batches: Sequence[Sequence[Dict[str, Any]]], forced: str = "auto"
               ) -> Dict[str, HostChoice]:
    """The host of each demo query for these micro-batches (``forced``:
    "per_key" or "packed" for both, as ``--host`` says)."""
    choices = {}
    for name, column in KEY_OF.items():
        rows = [[row for row in batch if row.get(column) is not None and
                 (name != "alerts" or row.get("event_type") == "purchase")]
                for batch in batches]
        total = len({row[column] for batch in rows for row in batch})
        per_batch = max((len({row[column] for row in batch}) for batch in rows), default=0)
        choice = choose_host(total, per_batch, SNAPSHOT_BYTES[name])
        if forced != "auto":
            choice = HostChoice(forced, f"--host {forced}; {choice.host} by the rule: "
                                        f"{choice.reason}")
        choices[name] = choice
    return choices


__all__ = ["HOSTS", "HostChoice", "choose_host", "demo_hosts"]
