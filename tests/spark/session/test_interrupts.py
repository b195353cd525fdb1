"""Ctrl-C in a driver inside a Spark call prints one line, not py4j's
tracebacks (sparkwax/engine/session/interrupts.py, sparkwax._ops.failure's hook).

Before: PySpark's SIGINT handler called py4j from inside the interrupted
py4j call; a Ctrl-C during a ``collect()`` printed ``ERROR:root:
KeyboardInterrupt while sending command.`` and six tracebacks."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from kit import REPO, stop_group

APP = textwrap.dedent("""
    import sparkwax as sw
    spark = sw.local_session("local[1]", shuffle_partitions=1)
    print("go", flush=True)
    spark.range(10 ** 12).selectExpr("sum(id)").collect()   # the app's line
""")


@pytest.mark.slow
def test_ctrl_c_inside_a_spark_call_prints_one_line(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(APP)
    app = subprocess.Popen([sys.executable, str(script)], cwd=REPO, text=True,
                           env={**os.environ, "PYTHONPATH": str(REPO)},
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           start_new_session=True)
    try:
        assert app.stdout.readline() == "go\n", app.stderr.read()[-2000:]
        time.sleep(2)  # inside collect(): the job runs
        os.killpg(app.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole group
        _, err = app.communicate(timeout=120)
    finally:
        stop_group(app)
    assert "Traceback" not in err and "KeyboardInterrupt while sending" not in err, err
    said = [line for line in err.splitlines() if line.startswith("sparkwax:")]
    assert said == [f"sparkwax: interrupted (Ctrl-C) at {script}:5, inside a Spark call; "
                    "SPARKWAX_VERBOSE=1 shows the trace"], err
    assert app.returncode != 0
