"""Rules the project set for its own code, each held by a test so that it
does not come undone once the issue that set it closes (docs/testing.md,
"Rules held by tests"):

- no two modules of the package share a name (``__init__.py`` aside): a
  name says where a thing lives (two ``seeding.py`` came back once);
- no module is over ``MAX_LINES`` lines unless ``LONG_MODULES`` lists it
  with its reason, and a listed one is still that long (the list does not
  rot: a module split below the limit leaves it);
- docs/performance.md is a current summary of at most ``PERFORMANCE_LINES``
  lines: dated logs and before/after runs go to docs/performance-history.md
  (it was back at 797 lines once its issue closed at 699).
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, List

from kit import PACKAGE, REPO

MAX_LINES = 400
PERFORMANCE_LINES = 700

LONG_MODULES: Dict[str, str] = {  # path under sparkwax/ -> why it stays one module
    "schema/sql_types.py": "Spark SQL's types as sparkwax checks them, one class per type "
                           "with its value and column checks: one table, read as one",
    "testing/checkpoint_replay.py": "the batches Spark ran rebuilt from a checkpoint and "
                                    "compared with the sink batch by batch; its checkpoint "
                                    "reading moves with issue 51's one reading",
    "operators/windows/core.py": "WindowLogic and the window operators built on it: each "
                                 "operator is a few lines over the one logic",
    "testing/runner.py": "the Runner class, one offline micro-batch engine (RunResult and "
                         "run_bounded were split out)",
    "cli/demo/app.py": "the demo's one program: its generator, steps and report in the "
                       "order it prints them",
    "engine/checkpoints/snapshots.py": "the stored snapshots through Spark's statestore "
                                       "reader, decoded for every host and layout; moves "
                                       "with issue 51's one reading of a checkpoint",
    "engine/checkpoints/state/rescale.py": "the rescale's journaled stages, kept in one "
                                           "module so that each is undone in order",
    "engine/spark_version.py": "the one module that knows what differs between Spark lines "
                               "and holds every private PySpark/JVM API, so that a new "
                               "line touches one file (test_spark_version greps the rest)",
    "engine/queries/progress.py": "the progress printer, its follower thread and the "
                                  "signal stop (issue 52 splits the signals out)",
}


def modules() -> List[str]:
    return sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                  if "__pycache__" not in path.parts)


def lines_of(module: str) -> int:
    return len((PACKAGE / module).read_text().splitlines())


def test_no_two_modules_share_a_name():
    names = Counter(module.rsplit("/", 1)[-1] for module in modules())
    assert sorted(name for name, n in names.items() if n > 1 and name != "__init__.py") == []


def test_a_module_over_the_limit_is_listed_with_its_reason():
    long = {module: lines_of(module) for module in modules() if lines_of(module) > MAX_LINES}
    unlisted = {module: n for module, n in long.items() if module not in LONG_MODULES}
    assert unlisted == {}, f"split these, or list each in LONG_MODULES with its reason: {unlisted}"


def test_each_listed_module_is_still_long_and_still_there():
    stale = [module for module in LONG_MODULES
             if not (PACKAGE / module).is_file() or lines_of(module) <= MAX_LINES]
    assert stale == [], f"no longer over {MAX_LINES} lines (or gone): drop from LONG_MODULES"
    assert all(len(reason) > 20 for reason in LONG_MODULES.values())


def test_the_performance_page_is_a_summary():
    lines = len((REPO / "docs" / "performance.md").read_text().splitlines())
    assert lines <= PERFORMANCE_LINES, (
        f"docs/performance.md has {lines} lines: move dated runs and before/after tables "
        f"to docs/performance-history.md and leave a summary with the command")
