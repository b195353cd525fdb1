"""The goals of issue 24, checked on one run of ``spark_engine.py``.

``check(results)`` takes every measured batch of every variant per case,
``{(touched, total, rows): {variant: (wall_ms_per_round, cpu_ms_per_round)}}``,
and returns one ``Goal`` per goal that the run has the variants for. A goal's
value is the median over the rounds of the paired ratio (round r of the
variant / round r of its base): every variant runs once per round, so load
that drifts over the run hits both sides of a ratio alike, and one slow batch
of either side moves the median little (the best batch of each side, judged
before, flipped goals between runs of the same tree):

>>> run = {(100, 100, 1_000_000): {"bare": ([800, 900, 700], [1400, 1600, 1300]),
...                                "sparkwax": ([840, 990, 720], [1500, 1650, 1390]),
...                                "sw-packed": ([820, 880, 690], [1390, 1580, 1300])}}
>>> for goal in check(run):
...     print(goal)
100/100: sparkwax / bare, CPU <= 1.10: 1.07 met
100/100: sw-packed / bare, CPU <= 1.00: 0.99 met

A goal the run cannot judge (its variants were not run) is left out.
``floors(results)`` gives the same paired median for the hand-written
floors beside a goal (``bare-packed`` against ``groupBy.count``: no host on
applyInPandasWithState costs less than it), printed under the goals.
"""

from __future__ import annotations

import statistics
from typing import Dict, List, NamedTuple, Sequence, Tuple

# variant -> (wall ms per round, CPU ms per round)
Rounds = Dict[str, Tuple[Sequence[float], Sequence[float]]]
SMALL_BATCH = 100      # rows per batch at or under which the per-batch overhead goal applies
MANY_KEYS = 10_000     # keys touched at or over which packed is held to groupBy().count()


class Goal(NamedTuple):
    case: str
    what: str
    limit: float
    value: float

    @property
    def met(self) -> bool:
        return self.value <= self.limit

    def __str__(self) -> str:
        return (f"{self.case}: {self.what} <= {self.limit:.2f}: {self.value:.2f} "
                f"{'met' if self.met else 'NOT met'}")


def check(results: Dict[Tuple[int, int, int], Rounds]) -> List[Goal]:
    goals: List[Goal] = []
    for (touched, total, rows), rounds in results.items():
        case = _case(touched, total, rows)

        def add(variant: str, base: str, limit: float, clock: int) -> None:
            if variant in rounds and base in rounds:
                name = "wall" if clock == 0 else "CPU"
                goals.append(Goal(case, f"{variant} / {base}, {name}", limit,
                                  paired_median(rounds[variant][clock], rounds[base][clock])))

        if rows <= SMALL_BATCH:  # the per-batch floor: what a small batch feels
            add("sparkwax", "bare", 1.05, 0)
            continue
        if _is_sparse(touched, total):
            continue  # see sparse()
        add("sparkwax", "bare", 1.10, 1)
        add("sparkwax-timer", "bare-timer", 1.15, 1)
        if touched <= 100:
            add("sw-packed", "bare", 1.00, 1)
        if touched >= MANY_KEYS:
            add("sw-packed", "groupBy.count", 2.50, 1)
    goals.extend(sparse(results))
    return goals


def _case(touched: int, total: int, rows: int) -> str:
    return f"{touched:,}/{total:,}" + (f"/{rows:,}" if rows < 1_000_000 else "")


def _is_sparse(touched: int, total: int) -> bool:
    """The sparse-state case (few keys touched of many held): judged by
    ``sparse()``, not by the per-host goals."""
    return touched < total and total > 10 * touched


def floors(results: Dict[Tuple[int, int, int], Rounds]) -> List[str]:
    """``bare-packed / groupBy.count`` where the packed goal is judged, and
    ``bare-again / bare`` (an A/A check) where both ran.

    >>> floors({(10_000, 10_000, 1_000_000): {"bare-packed": ([0], [1200]),
    ...                                       "groupBy.count": ([0], [400])}})
    ['10,000/10,000: bare-packed / groupBy.count, CPU: 3.00 (the floor of the packed goal)']
    """
    lines = []
    for (touched, total, rows), rounds in results.items():
        if "bare-again" in rounds and "bare" in rounds:
            clock, name = (0, "wall") if rows <= SMALL_BATCH else (1, "CPU")
            value = paired_median(rounds["bare-again"][clock], rounds["bare"][clock])
            lines.append(f"{_case(touched, total, rows)}: bare-again / bare, {name}: "
                         f"{value:.2f} (two identical queries: the noise of a ratio)")
        if touched >= MANY_KEYS and not _is_sparse(touched, total) and rows > SMALL_BATCH and \
                "bare-packed" in rounds and "groupBy.count" in rounds:
            value = paired_median(rounds["bare-packed"][1], rounds["groupBy.count"][1])
            lines.append(f"{_case(touched, total, rows)}: bare-packed / groupBy.count, CPU: "
                         f"{value:.2f} (the floor of the packed goal)")
    return lines


def paired_median(variant: Sequence[float], base: Sequence[float]) -> float:
    """The median of the per-round ratios ``variant[r] / base[r]``.

    >>> paired_median([110, 300, 90], [100, 100, 100])   # one slow round of the variant
    1.1
    """
    if len(variant) != len(base):
        raise ValueError(f"{len(variant)} rounds against {len(base)}: ratios pair rounds")
    return statistics.median(v / b for v, b in zip(variant, base))


def sparse(results: Dict[Tuple[int, int, int], Rounds]) -> List[Goal]:
    """The best host with many keys held within 2x (median wall) of the best
    host for the same batch with as many keys held as touched (two cases, so
    no pairing: each side's median batch)."""
    hosts = ("bare", "sparkwax", "sw-packed")
    goals = []
    for (touched, total, rows), rounds in results.items():
        small = results.get((touched, touched, rows))
        if total <= touched or small is None:
            continue
        mine = [statistics.median(rounds[v][0]) for v in hosts[1:] if v in rounds]
        theirs = [statistics.median(small[v][0]) for v in hosts if v in small]
        if mine and theirs:
            goals.append(Goal(f"{touched:,}/{total:,}/{rows:,}",
                              f"best sparkwax host vs best host at {touched:,} held, wall",
                              2.0, min(mine) / min(theirs)))
    return goals
