"""``sparkwax.engine.checkpoints.state.asked``: the operator and batch a
state tool is asked for, checked against the checkpoint's files, on a
local folder through a small store (no Spark)."""

import json
import os

import pytest

from sparkwax.engine.checkpoints.state.asked import (require_committed_batch,
                                                     require_step_state)
from sparkwax.engine.checkpoints.storage import FileEntry
from sparkwax.errors import ConfigError


class Folders:
    """The three store calls the checks make, on the local disk;
    ``files_only``: list as Spark Connect's store does (files, no folders)."""

    def __init__(self, files_only=False):
        self.files_only = files_only

    def exists(self, path):
        return os.path.exists(path)

    def list(self, path):
        if not os.path.isdir(path):
            return []
        found = [FileEntry(name, os.path.join(path, name), 0, os.path.isdir(
            os.path.join(path, name))) for name in sorted(os.listdir(path))]
        return [e for e in found if not (self.files_only and e.is_dir)]

    def read_text(self, path):
        return open(path).read() if os.path.exists(path) else None


def _checkpoint(root, commits=(0, 1), operators=("applyInPandasWithState",)):
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for number in commits:
        (root / "commits" / str(number)).write_text("v1\n{}\n")
    for number, name in enumerate(operators):
        meta = root / "state" / str(number) / "_metadata"
        meta.mkdir(parents=True)
        (meta / "metadata").write_text("v1\n" + json.dumps(
            {"operatorInfo": {"operatorId": number, "operatorName": name}}) + "\n")
    return str(root)


def test_batches(tmp_path):
    ck = _checkpoint(tmp_path, commits=(3, 4, 5))
    assert require_committed_batch(Folders(), ck, 4) == 4
    assert require_committed_batch(Folders(), ck, None) is None
    with pytest.raises(ConfigError, match=r"batch_id=6 is past the last committed micro-batch "
                                          r"of .* \(5\): give one from 3 to 5"):
        require_committed_batch(Folders(), ck, 6)
    for bad in (-1, True, "2", 2.0):
        with pytest.raises(ConfigError, match="batch_id= takes a committed micro-batch's id"):
            require_committed_batch(Folders(), ck, bad)


def test_no_commit_yet(tmp_path):
    ck = _checkpoint(tmp_path, commits=())
    for batch in (None, 0):
        with pytest.raises(ConfigError, match="no micro-batch of its query has committed yet"):
            require_committed_batch(Folders(), ck, batch)


def test_operators(tmp_path):
    ck = _checkpoint(tmp_path / "a", operators=("applyInPandasWithState", "stateStoreSave"))
    assert require_step_state(Folders(), ck, 0) == 0
    with pytest.raises(ConfigError, match=r"no state for operator 2: its stateful operators "
                                          r"are 0, 1 \(give --operator"):
        require_step_state(Folders(), ck, 2)
    with pytest.raises(ConfigError, match=r"operator 1 is not a sparkwax step's state: it holds "
                                          r"the state of a streaming aggregation"):
        require_step_state(Folders(), ck, 1)
    with pytest.raises(ConfigError, match="operator_id= takes a stateful operator's id"):
        require_step_state(Folders(), ck, -1)
    dedupe = _checkpoint(tmp_path / "b", operators=("dedupe",))
    with pytest.raises(ConfigError, match=r"dropDuplicates \(Spark's 'dedupe' operator\)"):
        require_step_state(Folders(), dedupe, 0)
    unknown = _checkpoint(tmp_path / "c", operators=("somethingNew",))
    with pytest.raises(ConfigError, match=r"the state of Spark's 'somethingNew' operator;"):
        require_step_state(Folders(), unknown, 0)


def test_no_state_and_what_cannot_be_told(tmp_path):
    stateless = _checkpoint(tmp_path / "a", operators=())
    with pytest.raises(ConfigError, match=r"holds no state \(no state/ folder\)"):
        require_step_state(Folders(), stateless, 0)
    ck = _checkpoint(tmp_path / "b")
    assert require_step_state(Folders(files_only=True), ck, 3) == 3  # Connect: Spark says
    os.remove(os.path.join(ck, "state", "0", "_metadata", "metadata"))
    assert require_step_state(Folders(), ck, 0) == 0  # no metadata file: Spark says
