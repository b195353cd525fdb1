"""A carried step function runs in a Python that cannot import sparkwax: it
brings the package's zip with it (what Spark Connect streaming needs)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = """
import pickle, sys
carried = pickle.loads(sys.stdin.buffer.read())
print(carried("a", [1, 2]))
import sparkwax
print(sparkwax.__file__)
"""


def _bare_python(tmp_path):
    """This interpreter without site hooks (so without the editable sparkwax),
    with site-packages on the path for pyspark's cloudpickle."""
    import pandas

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(Path(pandas.__file__).resolve().parents[1])
    env["TMPDIR"] = str(tmp_path)
    return [sys.executable, "-S", "-c"], env


def test_a_carried_function_brings_sparkwax_along(tmp_path):
    from pyspark import cloudpickle

    from sparkwax.engine.deploy.carrier import carry
    from sparkwax.engine.deploy.shipping import build_zip, pickle_unshipped_by_value
    from sparkwax.testing.reference import Counter

    def step(key, values):  # by value; Counter too (sparkwax.testing is not in the zip),
        logic = Counter(None)  # its base class by reference to the zip's sparkwax.logic
        return {key: [logic.on_item(v)[0][0] for v in values]}

    command, env = _bare_python(tmp_path)
    bare = subprocess.run(command + ["import sparkwax"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert "No module named 'sparkwax'" in bare.stderr

    path = build_zip()
    before = cloudpickle.cloudpickle.list_registry_pickle_by_value()
    pickle_unshipped_by_value()  # what ship_function does before it carries a step
    try:
        carried = carry(step, zip_bytes=Path(path).read_bytes(), zip_name=os.path.basename(path))
    finally:
        for name in cloudpickle.cloudpickle.list_registry_pickle_by_value() - before:
            cloudpickle.unregister_pickle_by_value(sys.modules[name])
    child = subprocess.run(command + [CHILD], cwd=tmp_path, env=env, capture_output=True,
                           input=cloudpickle.dumps(carried))
    out = child.stdout.decode().splitlines()
    assert child.returncode == 0, child.stderr.decode()[-2000:]
    assert out[0] == "{'a': [1, 2]}"
    assert out[1].startswith(str(tmp_path / "sparkwax-carried" / os.path.basename(path)))


def test_carry_keeps_the_arity_pyspark_inspects():
    import inspect

    from sparkwax.engine.deploy.carrier import carry

    for function in (lambda a: a, lambda a, b: a, lambda a, b, c: a):
        carried = carry(function, zip_bytes=b"", zip_name="x.zip")
        assert len(inspect.signature(carried).parameters) == \
            len(inspect.signature(function).parameters)
    with pytest.raises(TypeError, match="1 to 3 arguments"):
        carry(lambda: None, zip_bytes=b"", zip_name="x.zip")
