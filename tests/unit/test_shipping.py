"""The sparkwax zip the engine ships to executors, and when it ships it (no JVM).

Importing ``sparkwax.engine.shipping`` imports pyspark (the engine package
does), but nothing here starts Spark, and the built zip is imported below by
a Python that has neither pyspark nor site-packages."""

import os
import subprocess
import sys
import textwrap
import zipfile

import pytest

from sparkwax.engine import shipping
from sparkwax.errors import ConfigError


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(shipping.CACHE_ENV_KEY, str(folder))
    shipping._built.clear()
    yield folder
    shipping._built.clear()


def test_zip_holds_the_package_sources_without_bytecode(cache):
    path = shipping.build_zip()
    names = zipfile.ZipFile(path).namelist()
    assert os.path.dirname(path) == str(cache)
    assert os.path.basename(path).startswith(f"sparkwax-{__import__('sparkwax').__version__}-")
    assert "sparkwax/__init__.py" in names and "sparkwax/engine/shipping.py" in names
    assert "sparkwax/testing/reference.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".pyo"))]
    assert names == sorted(names) and all(n.startswith("sparkwax/") for n in names)
    on_disk = {os.path.relpath(os.path.join(folder, f), os.path.dirname(shipping.package_dir()))
               for folder, _, files in os.walk(shipping.package_dir()) if "__pycache__" not in folder
               for f in files if f.endswith(".py")}
    assert on_disk <= set(names)


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
    first = shipping.build_zip(str(package))
    assert os.path.basename(first).startswith("sparkwax-9.9-")
    assert zipfile.ZipFile(first).namelist() == ["sparkwax/__init__.py"]
    (package / "logic.py").write_text("X = 1\n")
    second = shipping.build_zip(str(package))
    assert second != first
    assert zipfile.ZipFile(second).namelist() == ["sparkwax/__init__.py", "sparkwax/logic.py"]


def test_not_a_package_is_a_clear_error(cache, tmp_path):
    with pytest.raises(ConfigError, match="not a package directory"):
        shipping.build_zip(str(tmp_path))


def test_the_zip_alone_makes_sparkwax_importable_without_pyspark(cache, tmp_path):
    path = shipping.build_zip()
    program = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {path!r})
        import sparkwax, sparkwax.testing
        from sparkwax.testing import Batch, Eof, run
        from sparkwax.testing.reference import Counter
        assert sparkwax.__file__.startswith({path!r}), sparkwax.__file__
        assert "pyspark" not in sys.modules
        try:
            import pyspark
        except ImportError:
            pass
        else:
            raise AssertionError("pyspark should not be importable here")
        print(run(Counter, [Batch([("a", 1), ("a", 2)]), Eof()]).by_key)
    """)
    # -S: no site-packages (no pyspark, no editable install of sparkwax); cwd away from the repo
    done = subprocess.run([sys.executable, "-S", "-c", program], capture_output=True, text=True,
                          cwd=str(tmp_path), env={"PATH": os.environ.get("PATH", "")}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'a': [1, 2]}"


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
    from sparkwax.engine.shipping import ship_decision

    assert ship_decision("local[2]", None, None, connect=True)[0] is True
    assert ship_decision("local[2]", None, None)[0] is False
    assert ship_decision(None, "false", None, connect=True) == (False, "spark.sparkwax.ship=false")
    assert ship_decision(None, None, "never", connect=True)[0] is False
