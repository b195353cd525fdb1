"""``engine/deploy/driver_workers.py``: the job's Python files (as the driver
holds them) on the ``PYTHONPATH`` of the workers of the functions created
next, the Python worker Spark starts on the driver for a re-keyed or seeded
step included (no JVM: a fake SparkContext, SparkFiles' root a folder)."""

from __future__ import annotations

import os

import pytest

from sparkwax.engine import spark_version
from sparkwax.engine.deploy.driver_workers import share_python_files


class _Context:
    def __init__(self, includes=None, environment=None, py_files=""):
        if includes is not None:
            self._python_includes = list(includes)
        self.environment = {"PYTHONHASHSEED": "0"} if environment is None else environment
        self._conf = {"spark.submit.pyFiles": py_files}


class _Session:
    def __init__(self, sc):
        self._sc = sc


@pytest.fixture
def root(tmp_path, monkeypatch):
    """SparkFiles' root: where addPyFile and --py-files put the driver's copies."""
    from pyspark import SparkFiles

    folder = tmp_path / "userFiles"
    folder.mkdir()
    for name in ("app-modules-1a2b.zip", "sparkwax-0.1.0-3c4d.zip"):
        (folder / name).write_bytes(b"PK")
    monkeypatch.setattr(SparkFiles, "getRootDirectory", classmethod(lambda cls: str(folder)))
    return folder


def test_the_driver_copies_join_the_workers_pythonpath_once_after_the_users(root):
    sc = _Context(["app-modules-1a2b.zip", "sparkwax-0.1.0-3c4d.zip", "gone.zip"],
                  {"PYTHONHASHSEED": "0", "PYTHONPATH": "/opt/libs"})
    added = share_python_files(_Session(sc))
    assert added == [str(root / "app-modules-1a2b.zip"), str(root / "sparkwax-0.1.0-3c4d.zip")]
    assert sc.environment["PYTHONPATH"] == os.pathsep.join(["/opt/libs", *added])
    assert share_python_files(_Session(sc)) == []  # nothing new: unchanged
    assert sc.environment["PYTHONPATH"].count("app-modules-1a2b.zip") == 1
    sc._python_includes.append("app-modules-1a2b.zip")  # pyspark may list a name twice
    assert share_python_files(_Session(sc)) == []


def test_nothing_to_share_leaves_the_environment_alone(root):
    sc = _Context([])
    assert share_python_files(_Session(sc)) == [] and sc.environment == {"PYTHONHASHSEED": "0"}
    assert share_python_files(object()) == []  # Spark Connect: no SparkContext here


def test_without_pysparks_private_list_the_submitted_py_files_are_read(root):
    sc = _Context(None, py_files="/home/me/app-modules-1a2b.zip,hdfs:///libs/sparkwax-0.1.0-3c4d.zip")
    assert spark_version.python_includes(sc) == ["app-modules-1a2b.zip", "sparkwax-0.1.0-3c4d.zip"]
    assert len(share_python_files(_Session(sc))) == 2


def test_a_context_without_an_environment_dict_gets_nothing(root):
    sc = _Context(["app-modules-1a2b.zip"])
    sc.environment = None
    assert spark_version.worker_environment(sc) is None
    assert share_python_files(_Session(sc)) == []
