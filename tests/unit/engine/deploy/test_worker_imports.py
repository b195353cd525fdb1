"""What a Python worker imports when it unpickles a step (see
docs/performance.md, "Start-up"): the per-key and packed hosts bring none of
the driver's side of the engine, and the packed host's ``mapInArrow``
packing brings no pandas. Run in a subprocess: this process never imports
pyspark (test_no_pyspark)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import pytest

from kit import REPO
DRIVER_SIDE = ["sparkwax.engine.planning.plan", "sparkwax.engine.queries.start", "sparkwax.engine.queries.progress",
               "sparkwax.engine.checkpoints.finish", "sparkwax.engine.checkpoints.state", "sparkwax.engine.checkpoints.batch_history",
               "sparkwax.engine.session.local_session", "sparkwax.engine.deploy.shipping", "sparkwax.engine.checkpoints.storage"]


def loaded_after(statement: str) -> list:
    program = textwrap.dedent(f"""
        import json, sys
        {statement}
        print(json.dumps(sorted(sys.modules)))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env=env, cwd=str(REPO))
    if done.returncode:
        if "No module named 'pyspark'" in done.stderr or "No module named 'pandas'" in done.stderr:
            pytest.skip("needs pyspark and pandas")
        raise AssertionError(done.stderr)
    return json.loads(done.stdout)


@pytest.mark.parametrize("module", ["sparkwax.engine.hosts.host", "sparkwax.engine.hosts.packed"])
def test_a_host_imports_no_driver_side_module(module):
    loaded = loaded_after(f"import {module}")
    assert module in loaded
    assert [name for name in DRIVER_SIDE if name in loaded] == []


def test_packing_rows_imports_no_pandas():
    loaded = loaded_after(textwrap.dedent("""
        import numpy as np, pyarrow as pa
        from sparkwax.engine.hosts.prepack import PAYLOAD, pack_rows, read_payload

        def column(values):
            values = np.asarray(values, dtype=np.int64)
            return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])

        batch = pa.RecordBatch.from_arrays([column([5, 6, 7, 8]), column([1, 0, 1, 0])],
                                           names=["k", "b"])
        (out,) = pack_rows("b", 2)(iter([batch]))
        assert out.column("b").to_pylist() == [0, 1]
        assert [read_payload(p).column("k").to_pylist()
                for p in out.column(PAYLOAD).to_pylist()] == [[6, 8], [5, 7]]
    """).replace("\n", "\n        "))
    assert "sparkwax.engine.hosts.prepack" in loaded
    assert "pandas" not in loaded


def test_the_engine_names_are_the_functions():
    loaded = loaded_after(textwrap.dedent("""
        import sparkwax.engine.queries.start, sparkwax.engine.checkpoints.finish
        import sparkwax as sw, sparkwax.engine as engine
        from sparkwax.engine import finish, start
        assert start is engine.start is sw.start and callable(start), start
        assert finish is engine.finish is sw.finish and callable(finish), finish
        assert sorted(engine.__all__) == sorted(n for n in engine.__all__ if hasattr(engine, n))
    """).replace("\n", "\n        "))
    assert "sparkwax.engine.queries.start" in loaded
