"""A folder that is not a checkpoint but holds checkpoints (``sparkwax demo``'s
``checkpoints/``, with ``sessions/`` and ``alerts/``): every state tool names
them, through ``require_checkpoint``; the CLI before a JVM starts."""

import argparse

import pytest

from sparkwax.cli.reader import LocalFolders
from sparkwax.engine.checkpoints.snapshots import require_checkpoint
from sparkwax.errors import ConfigError


def _queries_folder(root):
    for name in ("sessions", "alerts"):
        (root / name / "offsets").mkdir(parents=True)
    (root / "notes").mkdir()  # a folder that is no checkpoint: left out
    return root


def test_the_error_names_the_checkpoints_a_folder_holds(tmp_path):
    folder = _queries_folder(tmp_path / "checkpoints")
    with pytest.raises(ConfigError) as raised:
        require_checkpoint(LocalFolders(), str(folder))
    assert str(raised.value) == (
        f"{str(folder)!r} is not a streaming checkpoint; it holds the checkpoints of 2 "
        f"queries: {folder}/alerts, {folder}/sessions (give one of them)")
    with pytest.raises(ConfigError, match=f"1 query: {tmp_path}/out/checkpoints/sessions "):
        (tmp_path / "out" / "checkpoints" / "sessions" / "offsets").mkdir(parents=True)
        require_checkpoint(LocalFolders(), str(tmp_path / "out"))  # two levels down
    with pytest.raises(ConfigError, match=r"is not a streaming checkpoint \(no offsets/"):
        require_checkpoint(LocalFolders(), str(tmp_path / "checkpoints" / "notes"))
    require_checkpoint(LocalFolders(), str(folder / "sessions"))  # a checkpoint: no error


def test_every_state_command_names_them_before_starting_spark(tmp_path, monkeypatch, capsys):
    import sparkwax.engine.session.local_session as session
    from sparkwax.cli.commands.state import state_command

    def no_jvm(*args, **kwargs):
        raise AssertionError("a JVM was started")

    monkeypatch.setattr(session, "local_session", no_jvm)
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    folder = _queries_folder(tmp_path)
    for path in (str(folder), f"file://{folder}"):
        for action in (["show", path], ["clear", path, "--yes"],
                       ["rescale", path, "--partitions", "3"], ["check", path, "m:Logic"]):
            parser = argparse.ArgumentParser()
            handler = state_command(parser)
            if action[0] == "check":  # it loads the logic first: a module that exists
                monkeypatch.setattr("sparkwax.cli.commands.replay.load_object", lambda *a: object)
            assert handler(parser.parse_args(action)) == 2, action
            err = capsys.readouterr().err
            assert (f"{path!r} is not a streaming checkpoint; it holds the checkpoints of 2 "
                    f"queries: {path}/alerts, {path}/sessions") in err, (action, err)
