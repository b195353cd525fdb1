"""local_session sizes a new local session's driver memory from the machine (only
when nobody set it), and max_snapshot_bytes derives the largest state row a
step may store from the memory of the JVM that runs its tasks. No JVM here: the
session builder is a recording fake."""

from __future__ import annotations

import pytest

from sparkwax.engine.session import local_session as session
from sparkwax.engine.session.local_session import driver_memory_for, local_session, machine_memory_bytes
from sparkwax.engine.deploy.session_confs import max_snapshot_bytes, parse_bytes


class FakeBuilder:
    def __init__(self):
        self.settings = {}

    def appName(self, name):
        return self

    def master(self, master):
        self.settings["master"] = master
        return self

    def config(self, name, value):
        self.settings[name] = value
        return self

    def getOrCreate(self):
        return FakeSpark({})


class FakeConf:
    def __init__(self, values):
        self.values = values

    def get(self, name, default=None):
        return self.values.get(name, default)

    def set(self, name, value):
        self.values[name] = value


class FakeSpark:
    def __init__(self, values):
        self.conf = FakeConf(values)
        self.sparkContext = self

    def setLogLevel(self, level):
        pass


@pytest.fixture
def builder(monkeypatch):
    from pyspark.sql import SparkSession

    from pyspark import SparkContext

    fake = FakeBuilder()
    monkeypatch.setattr(SparkSession, "builder", fake, raising=False)
    # the suite's Spark tests run first in one process: their JVM would make
    # every session here an "already running" one
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    for name in ("SPARK_DRIVER_MEMORY", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "SPARK_HOME",
                 "PYSPARK_GATEWAY_PORT", "SPARK_REMOTE"):
        monkeypatch.delenv(name, raising=False)
    return fake


def test_a_new_local_session_gets_a_share_of_the_machine(builder):
    local_session("local[2]")
    assert builder.settings["spark.driver.memory"] == driver_memory_for(machine_memory_bytes())
    assert 1024 <= int(builder.settings["spark.driver.memory"][:-1]) <= 8192


@pytest.mark.parametrize("how", ["conf", "env", "submit_args", "defaults"])
def test_a_driver_memory_set_anywhere_wins(builder, monkeypatch, tmp_path, how):
    conf = None
    if how == "conf":
        conf = {"spark.driver.memory": "3g"}
    elif how == "env":
        monkeypatch.setenv("SPARK_DRIVER_MEMORY", "3g")
    elif how == "submit_args":
        monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-memory 3g pyspark-shell")
    else:
        (tmp_path / "spark-defaults.conf").write_text("spark.driver.memory   3g\n")
        monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    local_session("local[2]", conf=conf)
    assert builder.settings.get("spark.driver.memory") == ("3g" if how == "conf" else None)


def test_a_cluster_master_or_a_running_jvm_is_left_alone(builder, monkeypatch):
    local_session("spark://master:7077")
    assert "spark.driver.memory" not in builder.settings
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_active_spark_context", object())
    local_session("local[2]")
    assert "spark.driver.memory" not in builder.settings


def test_the_sizing_rule():
    assert driver_memory_for(4 << 30) == "1024m"      # a quarter, at least Spark's 1 GB
    assert driver_memory_for(16 << 30) == "4096m"
    assert driver_memory_for(256 << 30) == "8192m"    # at most 8 GB
    assert parse_bytes("6026m") == 6026 << 20
    with pytest.raises(session.ConfigError, match="not a size"):
        parse_bytes("lots")


@pytest.mark.parametrize("values, limit", [
    ({"spark.master": "local[2]", "spark.driver.memory": "1g"}, 32 << 20),
    ({"spark.master": "local[2]"}, 32 << 20),                       # Spark's 1 GB default
    ({"spark.master": "local[1]", "spark.driver.memory": "8g"}, 512 << 20),
    ({"spark.master": "local[64]", "spark.driver.memory": "1g"}, 8 << 20),   # the floor
    ({"spark.master": "spark://m:7077", "spark.executor.memory": "4g",
      "spark.executor.cores": "2"}, 128 << 20),
    ({"spark.master": "local[2]", "spark.sparkwax.maxSnapshotBytes": "4k"}, 4096),
    ({"spark.master": "local[2]", "spark.sparkwax.maxSnapshotBytes": "0"}, None),
])
def test_max_snapshot_bytes(values, limit):
    assert max_snapshot_bytes(FakeSpark(values)) == limit
