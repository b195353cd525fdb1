"""The sparkwax zip the engine ships to executors, and when it ships it (no JVM).

Importing ``sparkwax.engine.deploy.shipping`` imports pyspark (the engine package
does), but nothing here starts Spark, and the built zip is imported below by
a Python that has neither pyspark nor site-packages. The zip holds the
runtime only (core, engine, operators); what a step takes from
``sparkwax.testing`` or ``sparkwax.cli`` travels by value."""

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from sparkwax.engine.deploy import shipping, zips
from sparkwax.errors import ConfigError
from kit import REPO

PACKAGE = os.path.dirname(os.path.abspath(__import__("sparkwax").__file__))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(zips.CACHE_ENV_KEY, str(folder))
    shipping._built.clear()
    yield folder
    shipping._built.clear()


@pytest.fixture
def registry():
    """PySpark's by-value registry, restored after the test (it is
    process-wide: later tests pickle by reference again)."""
    from pyspark import cloudpickle

    before = cloudpickle.cloudpickle.list_registry_pickle_by_value()
    yield
    for name in cloudpickle.cloudpickle.list_registry_pickle_by_value() - before:
        cloudpickle.unregister_pickle_by_value(sys.modules[name])


def test_zip_holds_the_runtime_sources_without_bytecode(cache):
    path = shipping.build_zip()
    names = zipfile.ZipFile(path).namelist()
    assert os.path.dirname(path) == str(cache)
    assert os.path.basename(path).startswith(f"sparkwax-{__import__('sparkwax').__version__}-")
    assert "sparkwax/__init__.py" in names and "sparkwax/engine/deploy/shipping.py" in names
    assert "sparkwax/operators/__init__.py" in names and "sparkwax/logic.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".pyo"))]
    assert names == sorted(names) and all(n.startswith("sparkwax/") for n in names)
    on_disk = {os.path.relpath(os.path.join(folder, f), os.path.dirname(PACKAGE))
               for folder, _, files in os.walk(PACKAGE) if "__pycache__" not in folder
               for f in files if f.endswith(".py")}
    runtime = {n for n in on_disk if not n.startswith(("sparkwax/cli/", "sparkwax/testing/"))}
    assert runtime <= set(names)
    assert on_disk - runtime  # the left-out packages exist, with sources of their own


def test_zip_has_no_command_line_and_no_test_tooling(cache):
    names = zipfile.ZipFile(shipping.build_zip()).namelist()
    assert shipping.UNSHIPPED == ("cli", "testing")
    assert [n for n in names if n.startswith(("sparkwax/cli/", "sparkwax/testing/"))] == []


def test_zip_is_built_once_and_is_deterministic(cache, tmp_path):
    first = shipping.build_zip()
    mtime = os.path.getmtime(first)
    assert shipping.build_zip() == first and os.path.getmtime(first) == mtime
    other = shipping.build_zip(target_dir=str(tmp_path))
    assert os.path.basename(other) == os.path.basename(first)
    with open(first, "rb") as a, open(other, "rb") as b:
        assert a.read() == b.read()


def test_a_changed_source_gives_a_new_zip(cache, tmp_path):
    package = tmp_path / "src" / "sparkwax"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "9.9"\n')
    (package / ".hidden.py").write_text("secret = 1\n")
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    for unshipped in ("cli/__init__.py", "cli/demo/logics.py", "testing/reference.py"):
        (package / unshipped).parent.mkdir(parents=True, exist_ok=True)
        (package / unshipped).write_text("X = 1\n")
    (package / "engine" / "testing").mkdir(parents=True)  # only the top-level ones are left out
    (package / "engine" / "testing" / "t.py").write_text("X = 1\n")
    first = shipping.build_zip(str(package))
    assert os.path.basename(first).startswith("sparkwax-9.9-")
    assert zipfile.ZipFile(first).namelist() == ["sparkwax/__init__.py",
                                                 "sparkwax/engine/testing/t.py"]
    (package / "logic.py").write_text("X = 1\n")
    second = shipping.build_zip(str(package))
    assert second != first
    assert zipfile.ZipFile(second).namelist() == ["sparkwax/__init__.py",
                                                  "sparkwax/engine/testing/t.py",
                                                  "sparkwax/logic.py"]


def test_not_a_package_is_a_clear_error(cache, tmp_path):
    with pytest.raises(ConfigError, match="not a package directory"):
        shipping.build_zip(str(tmp_path))


def test_the_zip_alone_makes_sparkwax_importable_without_pyspark(cache, tmp_path):
    path = shipping.build_zip()
    program = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {path!r})
        import sparkwax, sparkwax.operators
        from sparkwax import RETAIN, StatefulLogic
        from sparkwax.operators import stateful_map
        assert sparkwax.__file__.startswith({path!r}), sparkwax.__file__
        assert "pyspark" not in sys.modules
        try:
            import pyspark
        except ImportError:
            pass
        else:
            raise AssertionError("pyspark should not be importable here")
        for name in ("sparkwax.testing", "sparkwax.cli"):
            try:
                __import__(name)
            except ModuleNotFoundError as error:
                print(error.name)
    """)
    # -S: no site-packages (no pyspark, no editable install of sparkwax); cwd away from the repo
    done = subprocess.run([sys.executable, "-S", "-c", program], capture_output=True, text=True,
                          cwd=str(tmp_path), env={"PATH": os.environ.get("PATH", "")}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["sparkwax.testing", "sparkwax.cli"]


def test_testing_and_demo_logics_travel_by_value_to_a_worker_with_the_zip(cache, tmp_path,
                                                                         registry):
    """What an executor does with a step from sparkwax.testing or the demo: the
    zip on its path, pyspark installed, sparkwax not."""
    import pandas
    from pyspark import cloudpickle

    from sparkwax.cli.demo.logics import UserSession
    from sparkwax.testing.reference import Counter

    shipping.pickle_unshipped_by_value()  # what ensure_shipped does when it ships
    path = shipping.build_zip()
    blob = tmp_path / "builders.pickle"
    blob.write_bytes(cloudpickle.dumps((Counter, UserSession)))
    program = textwrap.dedent(f"""
        import pickle, sys
        sys.path.insert(0, {path!r})
        Counter, UserSession = pickle.loads(open({str(blob)!r}, "rb").read())
        import sparkwax
        assert sparkwax.__file__.startswith({path!r}), sparkwax.__file__
        logic = Counter(None)
        print([logic.on_item(v)[0] for v in "ab"], issubclass(UserSession, sparkwax.StatefulLogic))
        print(sorted(m for m in sys.modules if m.startswith(("sparkwax.testing", "sparkwax.cli"))))
    """)
    site_packages = str(Path(pandas.__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-S", "-c", program], capture_output=True, text=True,
                          cwd=str(tmp_path), timeout=60,
                          env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": site_packages})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[[1], [2]] True", "[]"]


def test_only_the_unshipped_packages_are_registered(registry):
    from pyspark import cloudpickle

    import sparkwax.cli  # noqa: F401  (only imported packages are registered)
    from sparkwax.testing.reference import Counter

    by_reference = len(cloudpickle.dumps(Counter))
    shipping.pickle_unshipped_by_value()
    registered = cloudpickle.cloudpickle.list_registry_pickle_by_value()
    assert {"sparkwax.testing", "sparkwax.cli"} <= registered
    assert not registered & {"sparkwax", "sparkwax.engine", "sparkwax.operators", "sparkwax.logic"}
    assert by_reference < len(cloudpickle.dumps(Counter)) / 10  # by value: the class itself


class _FakeContext:
    def __init__(self, master, py_files=""):
        self.master, self.added, self._py_files = master, [], py_files
        self._python_includes = []

    def getConf(self):
        return {"spark.submit.pyFiles": self._py_files}

    def addPyFile(self, path):
        self.added.append(path)


class _FakeSession:
    def __init__(self, sc, ship=None):
        self._sc, self.conf = sc, {shipping.CONF_KEY: ship} if ship else {}


@pytest.mark.parametrize("master, ship, py_files, shipped, by_value", [
    ("spark://h:7077", None, "", True, True),               # shipped now
    ("local[2]", None, "", False, False),                    # workers run the driver's sparkwax
    ("spark://h:7077", "false", "", False, False),           # installed on the cluster
    ("spark://h:7077", None, "/x/sparkwax-0.1.0-abc.zip", False, True),  # sparkwax submit
])
def test_unshipped_packages_go_by_value_where_executors_use_a_zip(
        cache, registry, monkeypatch, master, ship, py_files, shipped, by_value):
    from pyspark import cloudpickle

    import sparkwax.testing  # noqa: F401

    monkeypatch.delenv(shipping.ENV_KEY, raising=False)
    sc = _FakeContext(master, py_files)
    path = shipping.ensure_shipped(_FakeSession(sc, ship))
    assert (path is not None) is shipped and sc.added == ([path] if shipped else [])
    registered = "sparkwax.testing" in cloudpickle.cloudpickle.list_registry_pickle_by_value()
    assert registered is by_value
    assert shipping.ensure_shipped(_FakeSession(sc, ship)) == path and len(sc.added) <= 1


@pytest.mark.parametrize("master, expected", [
    ("local", False), ("local[2]", False), ("local[*]", False), ("local[4,2]", False),
    ("local-cluster[2,1,1024]", True), ("spark://127.0.0.1:7077", True), ("yarn", True),
    ("k8s://https://kube:6443", True), (None, True),
])
def test_auto_ships_unless_the_master_is_local(master, expected):
    ship, reason = shipping.ship_decision(master, None, None)
    assert ship is expected and str(master) in reason


def test_settings_force_or_refuse_shipping_and_the_conf_wins():
    assert shipping.ship_decision("local[2]", "true", None)[0] is True
    assert shipping.ship_decision("yarn", "false", None) == (False, "spark.sparkwax.ship=false")
    assert shipping.ship_decision("yarn", None, "0") == (False, "SPARKWAX_SHIP=false")
    assert shipping.ship_decision("yarn", "true", "false")[0] is True
    assert shipping.ship_decision("yarn", " ", "off")[0] is False
    assert shipping.ship_decision("yarn", "AUTO", None)[0] is True
    with pytest.raises(ConfigError, match="spark.sparkwax.ship must be auto, true or false"):
        shipping.ship_decision("yarn", "maybe", None)


def test_a_zip_already_in_the_py_files_is_not_shipped_again():
    ship, reason = shipping.ship_decision(
        "spark://h:7077", "true", None, ["streaks.py", "sparkwax-0.1.0-abc.zip"])
    assert not ship and "already" in reason
    assert shipping.ship_decision("spark://h:7077", None, None, ["other.zip"])[0] is True


def test_module_entry_point_prints_the_zip_path(cache, tmp_path, capsys):
    assert shipping.main(["--dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.strip()
    assert os.path.dirname(printed) == str(tmp_path) and zipfile.is_zipfile(printed)


def test_spark_connect_ships_by_default_whatever_the_master():
    from sparkwax.engine.deploy.shipping import ship_decision

    assert ship_decision("local[2]", None, None, connect=True)[0] is True
    assert ship_decision("local[2]", None, None)[0] is False
    assert ship_decision(None, "false", None, connect=True) == (False, "spark.sparkwax.ship=false")
    assert ship_decision(None, None, "never", connect=True)[0] is False


def test_the_version_has_one_source():
    """``sparkwax.__version__``: setup.cfg reads it (``attr:``), the zip's name too."""
    import configparser

    import sparkwax

    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg")
    assert setup["metadata"]["version"] == "attr: sparkwax.__version__"
    assert "version" not in (REPO / "pyproject.toml").read_text()
    assert shipping._version(shipping.package_dir()) == sparkwax.__version__
