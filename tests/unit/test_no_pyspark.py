"""``import sparkwax`` and ``sparkwax.testing`` work without pyspark or hypothesis,
and never import pyspark themselves (docs/semantics.md "Architecture": the layers and what each may import)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kit import REPO


BLOCKER = textwrap.dedent("""
    import builtins
    builtins.__dict__.setdefault("_blocked_imports", []).append(__name__)
    raise ImportError("{name} is blocked for this test")
""")

PROGRAM = textwrap.dedent("""
    import builtins, json, sys
    import sparkwax, sparkwax.testing

    def check_logic_outcome():
        try:
            return callable(sparkwax.testing.check_logic)
        except ImportError as error:
            return type(error).__name__
    from sparkwax.testing import Batch, Crash, Eof, run, run_bounded
    from sparkwax.testing.reference import Counter, SessionTracker, TransitionRecorder
    result = run(Counter, [Batch([("a", 1), ("b", 2), ("a", 3)]), Crash(), Batch([("a", 4)]),
                           Eof()], output_schema="n tinyint NOT NULL")
    bounded = run_bounded(Counter, [("a", 1), ("a", 2)])
    print(json.dumps({
        "by_key": result.by_key, "snapshots": result.snapshots,
        "bounded": bounded.by_key,
        "pyspark_loaded": sorted(m for m in sys.modules if m.split(".")[0] == "pyspark"),
        "hypothesis_loaded": sorted(m for m in sys.modules
                                    if m.split(".")[0] == "hypothesis"),
        "py4j_loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("py4j", "pyarrow")),
        "numpy_loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "pandas")),
        "blocked_attempts": list(getattr(builtins, "_blocked_imports", [])),
        "check_logic": check_logic_outcome(),
        "pyspark_after_check_logic": sorted(m for m in sys.modules
                                            if m.split(".")[0] == "pyspark"),
    }))
""")


def run_program(tmp_path: Path, block: bool) -> dict:
    import json

    env = dict(os.environ)
    paths = [str(REPO)]
    if block:
        for name in ("pyspark", "hypothesis"):
            package = tmp_path / "blocked" / name
            package.mkdir(parents=True)
            (package / "__init__.py").write_text(BLOCKER.format(name=name))
        paths.insert(0, str(tmp_path / "blocked"))
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("PYSPARK_PYTHON", None)
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("block", [True, False], ids=["blocked", "installed"])
def test_import_and_run_without_pyspark(tmp_path, block):
    out = run_program(tmp_path, block)
    assert out["by_key"] == {"a": [1, 2, 3], "b": [1]}
    assert out["snapshots"] == {"a": 3, "b": 1}
    assert out["bounded"] == {"a": [1, 2]}
    assert out["pyspark_loaded"] == []
    assert out["hypothesis_loaded"] == []
    assert out["py4j_loaded"] == []
    assert out["numpy_loaded"] == []  # the output checker (output_schema=) is pure Python
    assert out["blocked_attempts"] == []
    # check_logic needs hypothesis: a clear ImportError without it, and no pyspark with it
    assert out["check_logic"] == ("ImportError" if block else True)
    assert out["pyspark_after_check_logic"] == []


def test_blocker_really_blocks(tmp_path):
    """Guard for the test above: the blocked packages do fail to import."""
    blocked = tmp_path / "blocked" / "pyspark"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text(BLOCKER.format(name="pyspark"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "blocked"))
    done = subprocess.run([sys.executable, "-c", "import pyspark"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "blocked for this test" in done.stderr


def test_star_import_and_the_spark_entry_points_without_pyspark(tmp_path):
    """``__all__`` is the same with or without pyspark: a star import works, and
    a Spark entry point says what is missing when called."""
    blocked = tmp_path / "blocked" / "pyspark"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text(BLOCKER.format(name="pyspark"))
    program = textwrap.dedent("""
        from sparkwax import *
        import sparkwax
        print("stateful" in dir(sparkwax), "stateful" in sparkwax.__all__, callable(stateful))
        try:
            stateful(None, key="k", builder=None, output_schema="n long")
        except ConfigError as error:
            print("ConfigError:", error)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "blocked"), str(REPO)]))
    done = subprocess.run([sys.executable, "-c", program], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.strip().splitlines()
    assert first == "True True True"
    assert second.startswith("ConfigError: sparkwax.stateful needs pyspark") and \
        "blocked for this test" in second
