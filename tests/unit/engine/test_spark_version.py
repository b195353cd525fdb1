"""``sparkwax.engine.spark_version``: what each PySpark line can do, described
as data (no Spark: fake sessions report a version), its parsers, and that no
other module of the package compares Spark versions or calls the private
PySpark APIs that differ between lines (docs/deploy.md, "Spark versions")."""

from __future__ import annotations

import ast
import re
from typing import Dict, List

import pytest

from kit import PACKAGE
from sparkwax.engine import spark_version as sv
from sparkwax.engine.queries.catch_up import caught_up
from sparkwax.errors import ConfigError

# What each line offers, as measured on PySpark 3.5.9, 4.0.5, 4.1.4, 4.2.1 and
# 4.3.0 (docs/testing.md, "Other Spark lines").
LINES: Dict[str, Dict[str, bool]] = {
    "3.5.9": {"execution_context": False, "from_ddl": False, "no_data_batch_metrics": False, "statestore_reader": False, "state_change_feed": False,
              "transform_with_state": False, "arrow_batch_transformer": False,
              "to_arrow_schema_timezone": False, "json_progress_offsets": False},
    "4.0.5": {"execution_context": True, "from_ddl": True, "no_data_batch_metrics": True, "statestore_reader": True, "state_change_feed": True,
              "transform_with_state": True, "arrow_batch_transformer": False,
              "to_arrow_schema_timezone": False, "json_progress_offsets": False},
    "4.1.4": {"execution_context": True, "from_ddl": True, "no_data_batch_metrics": True, "statestore_reader": True, "state_change_feed": True,
              "transform_with_state": True, "arrow_batch_transformer": False,
              "to_arrow_schema_timezone": False, "json_progress_offsets": False},
    "4.2.1": {"execution_context": True, "from_ddl": True, "no_data_batch_metrics": True, "statestore_reader": True, "state_change_feed": True,
              "transform_with_state": True, "arrow_batch_transformer": True,
              "to_arrow_schema_timezone": True, "json_progress_offsets": True},
    "4.3.0": {"execution_context": True, "from_ddl": True, "no_data_batch_metrics": True, "statestore_reader": True, "state_change_feed": True,
              "transform_with_state": True, "arrow_batch_transformer": True,
              "to_arrow_schema_timezone": True, "json_progress_offsets": True},
}


class FakeSession:
    """What spark_version reads of a session: its version, and spark.streams."""

    def __init__(self, version: str):
        self.version = version
        self.touched: List[str] = []
        self.read = self

    @property
    def streams(self):
        self.touched.append("streams")
        return object()

    def format(self, name):
        self.touched.append(f"format:{name}")
        return name


@pytest.mark.parametrize("version", sorted(LINES))
def test_each_line_has_what_it_has(version):
    parsed = sv.parse_version(version)
    assert {name: sv.has(parsed, name) for name in sv.SINCE} == LINES[version]
    assert sv.supported(parsed)
    assert sv.progress_offsets_format(parsed) == (
        "json" if LINES[version]["json_progress_offsets"] else "repr")


class FakeExecution:
    """A JVM StreamExecution of one line through py4j: 4.0+ answer
    getLatestExecutionContext, 3.5 currentBatchId; a missing method raises."""

    def __init__(self, modern: bool, batch: int):
        self.modern, self.batch = modern, batch

    def getLatestExecutionContext(self):  # noqa: N802 (the JVM's name)
        if not self.modern:
            raise AttributeError("py4j: Method getLatestExecutionContext([]) does not exist")
        return type("Context", (), {"batchId": lambda _self: self.batch})()

    def currentBatchId(self):  # noqa: N802
        if self.modern:
            raise AttributeError("py4j: Method currentBatchId([]) does not exist")
        return self.batch


@pytest.mark.parametrize("client", ["3.5.9", "4.3.0"])
@pytest.mark.parametrize("modern", [False, True])
def test_the_running_batch_id_is_read_on_every_line(monkeypatch, client, modern):
    # the stop between batches read 4.0's form only: on 3.5 it never found a
    # safe point and stopped after its 60 s wait, interrupting a batch
    monkeypatch.setattr(sv, "client_version", lambda: sv.parse_version(client))
    assert sv.running_batch_id(FakeExecution(modern, 7)) == 7


def test_every_capability_is_described_for_every_line():
    assert all(set(line) == set(sv.SINCE) for line in LINES.values())


@pytest.mark.parametrize("text, expected", [
    ("3.5.9", (3, 5, 9)), ("4.3.0", (4, 3, 0)), ("4.2.0.dev1", (4, 2, 0)),
    ("3.5.2-SNAPSHOT", (3, 5, 2)), ("4.1", (4, 1, 0)), (" 4.0.5 ", (4, 0, 5)),
])
def test_parse_version(text, expected):
    assert sv.parse_version(text) == expected


def test_unsupported_lines():
    assert not sv.supported((3, 4, 4)) and not sv.supported((4, 4, 0))


def test_the_session_version_is_the_sessions_not_the_clients():
    # a Spark Connect client of one release in front of a server of another
    assert sv.session_version(FakeSession("3.5.9")) == (3, 5, 9)
    assert sv.has_arrow_batch_transformer(FakeSession("4.1.4")) is False
    assert sv.has_arrow_batch_transformer(FakeSession("4.2.1")) is True
    assert sv.has_statestore_reader(FakeSession("3.5.9")) is False
    assert sv.has_transform_with_state(FakeSession("4.0.0")) is True


@pytest.mark.parametrize("text, expected", [
    ('{"logOffset": 0}', {"logOffset": 0}),                  # 4.2+: JSON
    ("{'logOffset': 0}", {"logOffset": 0}),                  # 4.0/4.1: Python repr
    ("None", None), ("null", None), ("", None),
    ("{'topic': {'0': 5, '1': 7}}", {"topic": {"0": 5, "1": 7}}),
    ('{"topic":{"0":5}}', {"topic": {"0": 5}}),
    ("{'flag': True, 'n': None}", {"flag": True, "n": None}),
    ("12", 12),
    ("not an offset", "not an offset"),                     # kept as it is
    ({"logOffset": 3}, {"logOffset": 3}), (None, None), (7, 7),
])
def test_progress_offset(text, expected):
    assert sv.progress_offset(text) == expected


def progress(start, end, latest):
    return {"batchId": 5, "numInputRows": 0, "durationMs": {"addBatch": 5},
            "sources": [{"startOffset": start, "endOffset": end, "latestOffset": latest}]}


@pytest.mark.parametrize("report, expected", [
    (progress("{'logOffset': 2}", "{'logOffset': 2}", "None"), True),     # 4.0/4.1 caught up
    (progress("{'logOffset': 1}", "{'logOffset': 2}", "None"), False),
    (progress("{'logOffset': 2}", "{'logOffset': 2}", "{'logOffset': 3}"), False),
    (progress('{"logOffset":2}', '{"logOffset":2}', None), True),         # 4.2+
    (progress("{'logOffset': 2}", '{"logOffset": 2}', None), True),      # mixed: equal values
])
def test_caught_up_reads_every_lines_offsets(report, expected):
    assert caught_up(report) is expected


def test_the_state_reader_is_refused_by_name_before_4_0():
    session = FakeSession("3.5.9")
    with pytest.raises(ConfigError) as refused:
        sv.statestore_reader(session, "sparkwax state show")
    message = str(refused.value)
    assert "sparkwax state show needs Spark 4.0 or newer" in message
    assert "3.5.9" in message and "checkpoint" in message
    assert session.touched == []


def test_the_state_reader_touches_streams_first_on_every_line():
    """apache/spark#58211 was seen on 4.1.4 and 4.2 (issue 51): the
    workaround is harmless, so it runs wherever the reader does."""
    for version in ("4.0.5", "4.1.4", "4.2.1", "4.3.0"):
        session = FakeSession(version)
        assert sv.statestore_reader(session, "sw.read_state") == "statestore"
        assert session.touched == ["streams", "format:statestore"], version


def test_the_coordinator_bug_is_named_as_sparks():
    error = RuntimeError("org.apache.spark.rpc.RpcEndpointNotFoundException: Cannot find "
                         "endpoint: spark://StateStoreCoordinator@host:1234")
    assert sv.coordinator_bug(error)
    assert not sv.coordinator_bug(RuntimeError("CANNOT_LOAD_STATE_STORE"))
    message = sv.coordinator_message(FakeSession("4.2.1"), "sparkwax state show")
    assert "apache/spark#58211" in message and "not at fault" in message
    assert "restore" not in message and "start over" not in message


# -- no version test and no private API of a line outside the module ---------

HOME = "engine/spark_version.py"
PRIVATE = {"fromDDL", "ArrowBatchTransformer", "to_arrow_schema", "_parse_datatype_string",
           "getLatestExecutionContext", "currentBatchId", "_python_includes",
           # PySpark's private py4j handles (spark_version.jvm, java_query, ...)
           "_jvm", "_jsc", "_jsparkSession", "_jdf", "_jsq", "_gateway", "_sc", "_plan",
           "_active_spark_context", "_instantiatedSession"}
SESSIONS = {"spark", "session", "sc", "sparkContext", "spark_session", "sparkSession"}


def spark_release(node: ast.AST) -> bool:
    """A literal that names a Spark release: ``"3.5"``, ``"4.2.1"``, ``(4, 2)``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(re.match(r"[34]\.\d", node.value))
    if isinstance(node, ast.Tuple) and len(node.elts) >= 2:
        first = node.elts[0]
        return (all(isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts)
                and isinstance(first, ast.Constant) and first.value in (3, 4))
    return False


def outside_findings() -> List[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative == HOME:
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            where = f"{relative}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Attribute):
                owner = node.value
                owner_name = (owner.id if isinstance(owner, ast.Name)
                              else owner.attr if isinstance(owner, ast.Attribute) else "")
                if node.attr in PRIVATE:
                    found.append(f"{where}: .{node.attr}")
                if node.attr == "version" and owner_name in SESSIONS:
                    found.append(f"{where}: {owner_name}.version")
                if node.attr == "__version__" and owner_name == "pyspark":
                    found.append(f"{where}: pyspark.__version__")
            elif isinstance(node, ast.Constant) and node.value in PRIVATE:
                found.append(f"{where}: {node.value!r} (getattr)")
            elif isinstance(node, ast.ImportFrom):
                names = {alias.name for alias in node.names}
                if names & (PRIVATE | {"__version__"}) and (node.module or "").startswith("pyspark"):
                    found.append(f"{where}: from {node.module} import {sorted(names)}")
                elif (node.module or "").startswith("pyspark.sql.conversion"):
                    found.append(f"{where}: from {node.module}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "format" and node.args \
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value == "statestore":
                found.append(f"{where}: .format(\"statestore\") (use statestore_reader)")
            elif isinstance(node, ast.Compare):
                text = ast.unparse(node)
                if "version" in text.lower() and any(map(spark_release, [node.left,
                                                                          *node.comparators])):
                    found.append(f"{where}: {text}")
    return found


def test_no_spark_version_check_outside_the_module():
    assert outside_findings() == []


def test_the_grep_finds_what_it_forbids(tmp_path, monkeypatch):
    bad = tmp_path / "sparkwax"
    (bad / "engine").mkdir(parents=True)
    (bad / "engine" / "x.py").write_text(
        "import pyspark\n"
        "from pyspark.sql.conversion import ArrowBatchTransformer\n"
        "from pyspark.sql.pandas.types import to_arrow_schema\n"
        "old = pyspark.__version__ < '4.0'\n"
        "new = spark.version >= '4.2'\n"
        "t = T.StructType.fromDDL('a int')\n"
        "r = spark.read.format('statestore')\n"
        "v = version_tuple >= (4, 2)\n"
        "b = jvm.getLatestExecutionContext().batchId()\n"
        "i = getattr(sc, '_python_includes', None)\n"
        "j = spark.sparkContext._jvm.java.lang.Runtime\n"
        "q = getattr(query, '_jsq', None)\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", bad)
    flagged = {int(finding.split(":")[1]) for finding in outside_findings()}
    assert flagged == set(range(2, 13))  # every line but the plain import


class JavaQuery:
    def streamingQuery(self):  # noqa: N802
        return "the StreamExecution"


def test_the_py4j_handles_are_read_here():
    """What the accessors read of a classic session, DataFrame and query."""
    java = object()
    context = type("Context", (), {"_jvm": java, "_jsc": type("Jsc", (), {"sc": lambda s: "sc"})(),
                                   "_gateway": type("G", (), {"new_array": lambda s, c, n: [c] * n})()})()
    session = type("Session", (), {"sparkContext": context})()
    assert sv.jvm(session) is java and sv.java_spark_context(session) == "sc"
    assert sv.java_array(session, "Option", 2) == ["Option", "Option"]
    query = type("Query", (), {"_jsq": JavaQuery()})()
    assert sv.java_query(query).streamingQuery() == "the StreamExecution"
    assert sv.java_query(object()) is None   # a Connect query: no JVM handle


def test_the_driver_workers_own_lines_are_dropped_there_only(monkeypatch, capsys):
    """pyspark's driver-side transformWithState worker prints its progress
    (the UDF, the state server's port) to stdout, which the JVM copies to
    its stderr: in that worker only, and unless verbose, those lines go."""
    import sys
    import types

    from sparkwax.engine import spark_version

    worker = types.ModuleType("__main__")
    worker.__spec__ = types.SimpleNamespace(name=spark_version.DRIVER_WORKER)
    worker.main = lambda: None
    monkeypatch.setitem(sys.modules, "__main__", worker)
    assert not spark_version.quiet_driver_worker({"SPARKWAX_VERBOSE": "1"})
    assert not spark_version.quiet_driver_worker({"SPARKWAX_SPARK_LOG_LEVEL": "info"})
    assert not hasattr(worker, "print")
    assert spark_version.quiet_driver_worker({})
    worker.print("Streaming TransformWithStateInPandas Python worker received parameters.\n")
    worker.print("the app's own line")
    assert capsys.readouterr().out == "the app's own line\n"
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))  # an executor's
    assert not spark_version.quiet_driver_worker({})
