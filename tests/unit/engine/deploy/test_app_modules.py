"""``sparkwax submit`` finds the app's own modules and ships them; an import
found nowhere stops it before spark-submit starts (no JVM here).

The finder reads imports with ``ast`` only: the apps written below are never
run, so their imports of missing modules cost nothing."""

import os
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from sparkwax.cli.commands import submit
from sparkwax.engine.deploy import app_modules, shipping, zips
from sparkwax.engine.session import log_levels as logs
from sparkwax.engine.deploy.app_modules import find_app_modules


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(zips.CACHE_ENV_KEY, str(tmp_path / "cache"))
    monkeypatch.delenv(logs.ENV_KEY, raising=False)


def write(folder: Path, files: dict) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def project(tmp_path: Path) -> Path:
    """A project (pyproject.toml) with an app folder, a sibling module, a
    package with relative imports, a module at the project root, and
    imports that are optional or resolve elsewhere."""
    root = tmp_path / "proj"
    write(root, {
        "pyproject.toml": "[project]\nname = 'fraudapp'\n",
        "shared.py": "import json\n",
        "app/app.py": """
            import os, json
            from typing import TYPE_CHECKING
            import pandas                       # installed: not shipped
            import sparkwax as sw               # shipped as sparkwax's own zip
            from rules import Limit             # sibling module
            import fraud.scoring                # package, submodule
            from shared import *                # at the project root
            try:
                import ujson                    # optional: never an error
            except ImportError:
                ujson = None
            if TYPE_CHECKING:
                import mypy_extensions_not_here  # type checkers only
            def later():
                import lazy_helper              # inside a function: still found
            """,
        "app/rules.py": "from fraud import weights\nclass Limit: pass\n",
        "app/lazy_helper.py": "",
        "app/fraud/__init__.py": "from .scoring import score\n",
        "app/fraud/scoring.py": "from . import weights\nfrom ..shared_up import x  # beyond the top\n",
        "app/fraud/weights.py": "W = 1\n",
        "app/unused.py": "import not_imported_by_anyone\n",
    })
    return root


def test_finds_local_modules_transitively_and_nothing_else(tmp_path):
    root = project(tmp_path)
    found = find_app_modules(str(root / "app" / "app.py"))
    assert found.modules == ["fraud", "fraud.scoring", "fraud.weights", "lazy_helper",
                             "rules", "shared"]
    assert [name for _, name in found.files] == [
        "fraud/__init__.py", "fraud/scoring.py", "fraud/weights.py", "lazy_helper.py",
        "rules.py", "shared.py"]
    assert found.unresolved == []
    assert found.roots == [str(root / "app"), str(root)]


def test_an_import_found_nowhere_names_the_module_and_the_line(tmp_path):
    root = project(tmp_path)
    write(root, {"app/fraud/weights.py": "import os\n\nimport fraud_tables  # a typo\n"})
    found = find_app_modules(str(root / "app" / "app.py"))
    assert [(u.module, os.path.relpath(u.path, root), u.line) for u in found.unresolved] == [
        ("fraud_tables", os.path.join("app", "fraud", "weights.py"), 3)]


def test_the_zip_holds_the_modules_under_their_import_names(tmp_path):
    root = project(tmp_path)
    found = find_app_modules(str(root / "app" / "app.py"))
    path = app_modules.build_app_zip(found)
    assert app_modules.is_app_zip(path) and not shipping._is_sparkwax_zip(path)
    assert zipfile.ZipFile(path).namelist() == [name for _, name in found.files]
    assert app_modules.build_app_zip(found) == path  # same sources, same zip
    assert found.summary() == ("sparkwax: shipping app modules fraud, fraud.scoring, "
                               "fraud.weights, lazy_helper, rules, shared (6 files, 1 KB)")


def test_submit_refuses_an_unresolvable_import_before_spark_starts(tmp_path, monkeypatch,
                                                                   capsys):
    root = project(tmp_path)
    write(root, {"app/rules.py": "import json\n\nfrom fraud_rules import Limit\n"})
    started = []
    monkeypatch.setattr(submit, "run_stoppable", lambda *a, **k: started.append(a) or 0)
    monkeypatch.setattr(shipping, "build_zip", lambda *a, **k: pytest.fail("zip built"))
    monkeypatch.chdir(root)
    code = submit.main([str(root / "app" / "app.py"), "--master", "local-cluster[1,1,1024]"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and started == []
    assert lines == ["sparkwax submit: cannot resolve import 'fraud_rules' "
                     f"({os.path.join('app', 'rules.py')}:3): not in the app's folder or "
                     "project, not installed"]


def test_submit_ships_the_sibling_module_next_to_sparkwax(tmp_path, capsys, monkeypatch):
    root = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert submit.main(["--dry-run", str(root / "app" / "app.py"), "--master", "spark://h:7077",
                        "--", "--py-files", "extra.py"]) == 0
    first, command = capsys.readouterr().err.strip().splitlines()
    assert first.startswith("sparkwax: shipping app modules fraud, ") and "(6 files, " in first
    words = command.split()
    files = words[words.index("--py-files") + 1].split(",")
    assert [os.path.basename(f).split("-")[0] for f in files] == ["sparkwax", "app", "extra.py"]
    assert "rules.py" in zipfile.ZipFile(files[1]).namelist()


def test_no_ship_app_skips_the_search(tmp_path, capsys):
    root = project(tmp_path)
    write(root, {"app/rules.py": "import not_installed_anywhere\n"})
    assert submit.main(["--dry-run", str(root / "app" / "app.py"), "--no-ship-app"]) == 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "app-modules-" not in lines[0]
    assert "--conf spark.sparkwax.shipApp=false" in lines[0]  # the engine ships nothing either


def test_submit_sets_spark_logs_at_warn_without_traces_and_info_on_request(capsys, tmp_path):
    app = tmp_path / "app.py"
    app.write_text("import sparkwax\n")
    for argv, level, traces in (([], "WARN", False), (["--spark-log-level", "info"], "INFO", True),
                                (["--verbose"], "WARN", True)):
        assert submit.main(["--dry-run", str(app), *argv]) == 0
        line = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"SPARKWAX_SPARK_LOG_LEVEL={level} " in line
        option = line.split("spark.driver.defaultJavaOptions=-Dlog4j2.configurationFile=file:")[1]
        text = Path(option.split()[0].strip("'")).read_text()
        assert f"rootLogger.level = {level.lower()}\n" in text
        assert ("%m%n%ex\n" in text) == traces and ("%ex{none}" in text) == (not traces)
        assert ("TaskSetManager" in text) == (not traces)


def test_a_bad_log_level_is_refused(tmp_path, capsys):
    app = tmp_path / "app.py"
    app.write_text("")
    assert submit.main(["--dry-run", str(app), "--spark-log-level", "LOUD"]) == 2
    assert "Spark log level must be one of" in capsys.readouterr().err


def test_the_engine_ships_the_main_scripts_modules_once(tmp_path, monkeypatch):
    """What ``sw.stateful`` does for ``python app.py``, with a stand-in SparkContext."""
    root = project(tmp_path)
    added = []

    class Context:
        _python_includes = []

        def getConf(self):
            return {"spark.submit.pyFiles": ""}

        def addPyFile(self, path):
            added.append(path)

    class Session:
        _sc = Context()
        conf = {}

    main = type(sys)("__main__")
    main.__file__ = str(root / "app" / "app.py")
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.delenv(app_modules.ENV_KEY, raising=False)
    session = Session()
    path = app_modules.ship_app_modules(session)
    assert added == [path] and "rules.py" in zipfile.ZipFile(path).namelist()
    assert app_modules.ship_app_modules(session) == path and added == [path]  # once

    other = Session()
    other._sc = Context()
    monkeypatch.setenv(app_modules.ENV_KEY, "false")
    assert app_modules.ship_app_modules(other) is None and added == [path]
