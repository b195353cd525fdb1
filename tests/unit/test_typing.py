"""The package type-checks (mypy over ``sparkwax/`` is clean with setup.cfg's
``[mypy]`` section), and type checkers see the Spark entry points that
``sparkwax/__init__.py`` loads lazily (through ``TYPE_CHECKING`` imports), so
a wrong keyword to ``sw.stateful`` is an error in the user's editor."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")

REPO = Path(__file__).resolve().parents[2]


def mypy(*args: str) -> subprocess.CompletedProcess:
    """``python -m mypy ARGS`` from the repository (so setup.cfg's [mypy] applies
    and its .mypy_cache makes reruns fast)."""
    env = dict(os.environ, MYPYPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def test_package_is_clean():
    done = mypy("sparkwax")
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Success: no issues found" in done.stdout, output


def test_py_typed_marker_ships():
    assert (REPO / "sparkwax" / "py.typed").is_file()
    assert "sparkwax = py.typed" in (REPO / "setup.cfg").read_text()


USER_CODE = textwrap.dedent("""
    from pyspark.sql import DataFrame

    import sparkwax as sw
    from sparkwax import (StatefulLogic, finish, local_session, start, stateful,
                          stateful_batch)


    class Counter(StatefulLogic[int, int, int]):
        def __init__(self, resume: int | None = None) -> None:
            self.n = resume or 0

        def on_item(self, value: int) -> tuple[list[int], bool]:
            self.n += 1
            return [self.n], sw.RETAIN

        def snapshot(self) -> int:
            return self.n


    def good(df: DataFrame) -> DataFrame:
        return sw.stateful(df, key="k", builder=Counter, output_schema="n long")


    def bad(df: DataFrame) -> DataFrame:
        return sw.stateful(df, key="k", builder=Counter, output_schema="n long",
                           no_such_option=1)


    def bad_result(df: DataFrame) -> int:
        return stateful_batch(df, key="k", builder=Counter, output_schema="n long")
""")


def test_entry_points_are_visible_to_type_checkers(tmp_path: Path):
    snippet = tmp_path / "user_code.py"
    snippet.write_text(USER_CODE)
    # --no-implicit-reexport (part of --strict): names imported from sparkwax must
    # be exported explicitly (the `x as x` imports and an __all__ mypy can read).
    # Only the snippet's errors count: sparkwax's own modules are checked with
    # the project's settings by test_package_is_clean.
    done = mypy("--no-implicit-reexport", "--cache-dir", ".mypy_cache/user_code", str(snippet))
    output = done.stdout + done.stderr
    # By file name: mypy's cache may replay an identical snippet's errors under
    # the path of an earlier run's tmp_path.
    errors = [line for line in done.stdout.splitlines()
              if Path(line.split(":")[0]).name == snippet.name and ": error:" in line]
    # Only the two deliberate mistakes: if sw.stateful were the module's
    # __getattr__ (Any), mypy would accept both.
    assert len(errors) == 2, output
    assert 'Unexpected keyword argument "no_such_option" for "stateful"' in errors[0], output
    assert "Incompatible return value type" in errors[1], output


def test_entry_points_stay_lazy_at_run_time():
    program = ("import sys, sparkwax; print('stateful' in dir(sparkwax), "
               "any(m.split('.')[0] == 'pyspark' for m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.split() == ["True", "False"], done.stdout + done.stderr
