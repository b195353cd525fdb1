"""Checkpoint paths are URIs handled by Spark: string rules, error mapping, and
a guard that no module touching checkpoints uses Python's file functions."""

import re
from pathlib import Path

import pytest

from sparkwax.errors import ConfigError
from sparkwax.engine.checkpoints.format.paths import join_path, scheme_of

from kit import REPO

# Every module that reads or writes next to a checkpoint or a sink.
CHECKPOINT_MODULES = ["sparkwax/engine/checkpoints/snapshots.py", "sparkwax/engine/checkpoints/finish.py",
                      "sparkwax/engine/queries/start.py",
                      "sparkwax/engine/checkpoints/storage.py", "sparkwax/cli/commands/state.py",
                      "sparkwax/engine/checkpoints/format/paths.py", "sparkwax/engine/checkpoints/batch_history.py",
                      "sparkwax/engine/checkpoints/format/metadata_logs.py", "sparkwax/testing/checkpoint_replay.py",
                      "sparkwax/cli/commands/replay.py", "sparkwax/engine/checkpoints/diagnose.py",
                      "sparkwax/engine/queries/query.py", "sparkwax/engine/checkpoints/format/files.py",
                      "sparkwax/engine/checkpoints/state/rescale.py", "sparkwax/engine/checkpoints/state/reshard.py",
                      "sparkwax/engine/checkpoints/state/batch_logs.py", "sparkwax/cli/commands/state_rescale.py",
                      "sparkwax/cli/reader.py"]


@pytest.mark.parametrize("path, scheme", [
    ("hdfs://nn:8020/ck", "hdfs"), ("s3a://bucket/ck", "s3a"), ("dbfs:/ck", "dbfs"),
    ("file:///tmp/ck", "file"), ("viewfs://cluster/data", "viewfs"), ("/data/ck", ""),
    ("relative/ck", ""), ("C:/data/ck", ""),
])
def test_scheme_of(path, scheme):
    assert scheme_of(path) == scheme


def test_join_path_keeps_the_uri():
    assert join_path("s3a://bucket/ck/", "offsets") == "s3a://bucket/ck/offsets"
    assert join_path("/data/ck", "commits") == "/data/ck/commits"


@pytest.mark.parametrize("message, scheme, hint", [
    ('org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme "gs"',
     "gs", "gcs-connector"),
    ("java.lang.RuntimeException: java.lang.ClassNotFoundException: Class "
     "org.apache.hadoop.fs.s3a.S3AFileSystem not found", "s3a", "hadoop-aws"),
    ('No FileSystem for scheme "dbfs"', "dbfs", "Databricks"),
    ('No FileSystem for scheme "weird"', "weird", "fs.weird.impl"),
])
def test_a_missing_file_system_becomes_a_config_error_naming_the_scheme(message, scheme, hint):
    from sparkwax.engine.checkpoints.storage import filesystem_error

    error = filesystem_error(f"{scheme}://somewhere/ck", RuntimeError(message))
    assert isinstance(error, ConfigError)
    assert f"scheme {scheme!r}" in str(error) and hint in str(error)


def test_other_errors_are_left_alone():
    from sparkwax.engine.checkpoints.storage import filesystem_error

    assert filesystem_error("hdfs://nn/ck", RuntimeError("Permission denied")) is None


@pytest.mark.parametrize("module", CHECKPOINT_MODULES)
def test_no_python_file_calls_where_checkpoints_are_handled(module):
    source = "\n".join(line for line in (REPO / module).read_text().splitlines()
                       if not line.rstrip().endswith("# local disk only"))
    found = re.findall(r"\b(os\.(?:path|listdir|makedirs|remove|replace|walk|stat)\w*|"
                       r"(?<![\w.])open\(|shutil\.\w+|(?<![\w.])Path\()", source)
    assert found == [], f"{module} touches files with Python: {found}"


def test_state_tools_refuse_a_local_non_checkpoint_before_starting_spark(tmp_path, monkeypatch,
                                                                          capsys):
    import argparse

    import sparkwax.engine.session.local_session as session
    from sparkwax.cli.commands.state import state_command

    def no_jvm(*args, **kwargs):
        raise AssertionError("a JVM was started")

    monkeypatch.setattr(session, "local_session", no_jvm)
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    for action in (["show"], ["clear", "--yes"]):
        for path in (str(tmp_path), f"file://{tmp_path}"):
            parser = argparse.ArgumentParser()
            handler = state_command(parser)
            assert handler(parser.parse_args([*action[:1], path, *action[1:]])) == 2
            assert "is not a streaming checkpoint" in capsys.readouterr().err
