"""The goals of issue 24, checked on one run of ``spark_engine.py``.

``check(results)`` takes the best batch of every variant per case,
``{(touched, total, rows): {variant: (wall_ms, cpu_ms)}}``, and returns one
``Goal`` per goal that the run has the variants for:

>>> run = {(100, 100, 1_000_000): {"bare": (800, 1400), "sparkwax": (840, 1500),
...                                "sw-packed": (820, 1390)}}
>>> for goal in check(run):
...     print(goal)
100/100: sparkwax / bare, CPU <= 1.10: 1.07 met
100/100: sw-packed / bare, CPU <= 1.00: 0.99 met

A goal the run cannot judge (its variants were not run) is left out.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Tuple

Best = Dict[str, Tuple[float, float]]  # variant -> (wall ms, CPU ms) of its best batch
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


def check(results: Dict[Tuple[int, int, int], Best]) -> List[Goal]:
    goals: List[Goal] = []
    for (touched, total, rows), best in results.items():
        case = f"{touched:,}/{total:,}" + (f"/{rows:,}" if rows < 1_000_000 else "")

        def add(variant: str, base: str, limit: float, clock: int) -> None:
            if variant in best and base in best:
                name = "wall" if clock == 0 else "CPU"
                goals.append(Goal(case, f"{variant} / {base}, {name}", limit,
                                  best[variant][clock] / best[base][clock]))

        if rows <= SMALL_BATCH:  # the per-batch floor: what a small batch feels
            add("sparkwax", "bare", 1.05, 0)
            continue
        if touched < total and total > 10 * touched:
            continue  # the sparse case: see sparse()
        add("sparkwax", "bare", 1.10, 1)
        add("sparkwax-timer", "bare-timer", 1.15, 1)
        if touched <= 100:
            add("sw-packed", "bare", 1.00, 1)
        if touched >= MANY_KEYS:
            add("sw-packed", "groupBy.count", 2.50, 1)
    goals.extend(sparse(results))
    return goals


def sparse(results: Dict[Tuple[int, int, int], Best]) -> List[Goal]:
    """The best host with many keys held within 2x (wall) of the best host
    for the same batch with as many keys held as touched."""
    hosts = ("bare", "sparkwax", "sw-packed")
    goals = []
    for (touched, total, rows), best in results.items():
        small = results.get((touched, touched, rows))
        if total <= touched or small is None:
            continue
        mine = [best[v][0] for v in hosts[1:] if v in best]
        theirs = [small[v][0] for v in hosts if v in small]
        if mine and theirs:
            goals.append(Goal(f"{touched:,}/{total:,}/{rows:,}",
                              f"best sparkwax host vs best host at {touched:,} held, wall",
                              2.0, min(mine) / min(theirs)))
    return goals
