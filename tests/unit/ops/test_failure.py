"""A failed app's short block (``sparkwax._ops.failure``), from Spark's exception
text as the driver gets it (no JVM: the texts are Spark's, copied)."""

import os
import subprocess
import sys
import textwrap

from sparkwax.errors import CallbackError, ConfigError
from sparkwax._ops.failure import FILE_ENV, VERBOSE_ENV, failure_block

from kit import REPO


WORKER = ("[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback "
          "(most recent call last):\n  File \"/x/sparkwax/_driver.py\", line 545, in _items\n"
          "    raise CallbackError(self.step_id, key, \"on_item\", value,\n"
          "sparkwax.errors.CallbackError: step 'ratio', key 'b', on_item: on_item raised "
          "ZeroDivisionError('division by zero') on this value (got {'n': 0})\n SQLSTATE: 38000")
QUERY = ("[STREAM_FAILED] Query [id = 1cb6, runId = 9abc] terminated with exception: "
         + WORKER + "\n=== Streaming Query ===\nIdentifier: [id = 1cb6]\n" + "Logical Plan:\n"
         + "x" * 3000)


class StreamingQueryException(Exception):
    """Stands in for pyspark's (the block looks at the module and the text)."""


StreamingQueryException.__module__ = "pyspark.errors.exceptions.captured"


def test_a_task_error_reads_as_class_step_key_callback_message_where_and_what_to_do():
    block = failure_block(StreamingQueryException(QUERY)).splitlines()
    assert block == [
        "sparkwax: the app failed: CallbackError",
        "  step 'ratio', key 'b', callback on_item",
        "  message: on_item raised ZeroDivisionError('division by zero') on this value "
        "(got {'n': 0})",
        "  where: a task on an executor",
        "  to do: fix on_item of the logic; reproduce it offline with sparkwax.testing.run on "
        "this key's items",
        "  (Spark's full trace: rerun with --verbose or SPARKWAX_VERBOSE=1)"]
    assert len("\n".join(block)) < 600 < len(QUERY)


def test_the_batch_comes_from_the_error_or_spark_text():
    rebuilt = CallbackError("ratio", "b", "on_item", reason="raised")
    rebuilt.batch_id = 7
    try:
        raise rebuilt from StreamingQueryException(QUERY)
    except CallbackError as error:
        assert "  where: a task on an executor, micro-batch 7" in failure_block(error)
    text = QUERY.replace("terminated", "[batchId = 3] terminated")
    assert "micro-batch 3" in failure_block(StreamingQueryException(text))


def test_a_driver_side_error_and_a_foreign_task_error():
    block = failure_block(ConfigError("start needs path= for the 'parquet' sink"))
    assert "  where: the driver" in block and "ConfigError" in block
    changed = ConfigError("checkpoint /ck was written by a different query:\n  - step 'a' was "
                          "added\nRestore the old settings, or start over")
    assert failure_block(changed).splitlines()[1:4] == [
        "  message: checkpoint /ck was written by a different query:",
        "    - step 'a' was added", "    Restore the old settings, or start over"]
    missing = QUERY.replace(WORKER.split("\n")[-2], "ModuleNotFoundError: No module named 'fraud'")
    block = failure_block(StreamingQueryException(missing)).splitlines()
    assert block[:2] == ["sparkwax: the app failed: ModuleNotFoundError",
                         "  message: No module named 'fraud'"]
    assert "ship the module" in block[3]
    assert failure_block(ValueError("a bug in the driver's own code")) is None


PRE_INIT = (
    "[STREAM_FAILED] Query [id = d684, runId = da1d] terminated with exception: "
    "[STREAMING_PYTHON_RUNNER_INITIALIZATION_FAILURE] Streaming Runner initialization failed, "
    "returned -2. Cause: Traceback (most recent call last):\n  File \"/x/pyspark.zip/pyspark/sql/"
    "streaming/transform_with_state_driver_worker.py\", line 62, in main\n  File \"/x/pyspark."
    "zip/pyspark/serializers.py\", line 483, in loads\n    return cloudpickle.loads(obj, "
    "encoding=encoding)\nModuleNotFoundError: No module named 'flow_logic'\n SQLSTATE: XXKST "
    "SQLSTATE: XXKST\n=== Streaming Query ===\nIdentifier: [id = d684, runId = da1d]\n")


def test_an_import_failure_names_the_process_that_failed():
    """Spark's pre-init worker on the driver (a re-keyed or seeded step) or a task."""
    block = failure_block(StreamingQueryException(PRE_INIT)).splitlines()
    assert block[:4] == [
        "sparkwax: the app failed: ModuleNotFoundError",
        "  message: No module named 'flow_logic'",
        "  where: the driver, in Spark's pre-init Python worker of a re-keyed or seeded step "
        "(transformWithStateInPandas)",
        "  to do: ship the module with the app (sparkwax submit does; see docs/deploy.md), or "
        "install it in the driver's Python: sparkwax puts the job's --py-files and addPyFile "
        "files on this worker's path"]
    missing = QUERY.replace(WORKER.split("\n")[-2], "ModuleNotFoundError: No module named 'fraud'")
    block = failure_block(StreamingQueryException(missing)).splitlines()
    assert block[2:4] == [
        "  where: a task on an executor",
        "  to do: ship the module with the app (sparkwax submit does; see docs/deploy.md), or "
        "install it in the executors' Python"]


APP = textwrap.dedent("""
    import sparkwax
    from sparkwax._ops.failure import install_hook

    class StreamingQueryException(Exception):
        pass

    StreamingQueryException.__module__ = "pyspark.errors.exceptions.captured"
    install_hook()
    if {driver!r}:
        raise sparkwax.ConfigError("a bad setting")
    raise StreamingQueryException({text!r})
""")


def run_app(tmp_path, env, driver=False):
    script = tmp_path / "app.py"
    script.write_text(APP.format(text=QUERY, driver=driver))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO), **env})


def test_the_hook_prints_only_the_block_or_hands_it_to_submit(tmp_path):
    env = {k: "" for k in (FILE_ENV, VERBOSE_ENV)}
    done = run_app(tmp_path, env)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == "sparkwax: the app failed: CallbackError"
    assert "Traceback" not in done.stderr and "Logical Plan" not in done.stderr

    verbose = run_app(tmp_path, {**env, VERBOSE_ENV: "1"})
    assert "Traceback" in verbose.stderr and "Logical Plan" in verbose.stderr
    assert verbose.stderr.rstrip().endswith("SPARKWAX_VERBOSE=1)")  # the block comes last

    driver = run_app(tmp_path, env, driver=True).stderr.splitlines()
    assert driver[0] == "sparkwax: the app failed: ConfigError"
    line = (tmp_path / "app.py").read_text().splitlines().index(
        '    raise sparkwax.ConfigError("a bad setting")') + 1
    assert f"  where: the driver, at {tmp_path / 'app.py'}:{line}" in driver

    handed = tmp_path / "block.txt"
    done = run_app(tmp_path, {**env, FILE_ENV: str(handed)})
    assert done.returncode == 1 and done.stderr == ""
    assert handed.read_text().startswith("sparkwax: the app failed: CallbackError\n")


def _trace_of(error_from):
    try:
        error_from()
    except BaseException as error:  # noqa: BLE001 (the test raises KeyboardInterrupt)
        return error, error.__traceback__
    raise AssertionError("nothing raised")


def test_a_ctrl_c_inside_a_spark_call_is_one_line_and_any_other_is_python_s():
    from sparkwax._ops.failure import _interrupted, interrupted_line

    namespace = {}
    exec(compile("def send_command():\n    raise KeyboardInterrupt()\n",
                 "/venv/site-packages/py4j/java_gateway.py", "exec"), namespace)
    error, trace = _trace_of(namespace["send_command"])
    assert _interrupted(error)
    assert interrupted_line(trace) == (
        f"sparkwax: interrupted (Ctrl-C) at {__file__}:{_trace_of.__code__.co_firstlineno + 2}, "
        "inside a Spark call; SPARKWAX_VERBOSE=1 shows the trace")

    def plain():
        raise KeyboardInterrupt()

    assert interrupted_line(_trace_of(plain)[1]) is None  # no Spark frame: Python's traceback

    class Py4JNetworkError(Exception):
        """Stands in for py4j's (the hook looks at the module)."""

    Py4JNetworkError.__module__ = "py4j.protocol"

    def cleanup_fails(kind):  # py4j's clean-up call after the interrupt breaks the connection
        def run():
            try:
                namespace["send_command"]()
            except KeyboardInterrupt:
                raise kind("Answer from Java side is empty")
        return run

    assert _interrupted(_trace_of(cleanup_fails(Py4JNetworkError))[0])
    assert not _interrupted(_trace_of(cleanup_fails(ConfigError))[0])  # its own report
    assert not _interrupted(ValueError("no"))
