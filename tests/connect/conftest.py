"""A real Spark Connect server for the tests in this folder, and a client session.

The server is the pip package's ``sbin/start-connect-server.sh`` (4.3; 4.0
to 4.2 ship the server's jar without the script: ``spark-submit --class``
of the class the script starts; 3.5 ships neither, so the tests skip) (master
local[2], loopback only, a free port), run in the foreground in its own
process group and stopped by that id. Its Python workers run an interpreter
that has pandas, pyarrow and pyspark but not sparkwax (``-S``: no site hooks,
so no editable install; the working directory is a bare temp folder), so a
step only works because the client ships sparkwax as a session artifact.
"""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from kit import free_port

settings.register_profile("spark", max_examples=4, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck))


def pytest_collection_modifyitems(items):
    """Mark the tests, and pickle their modules' classes by value (the server's
    workers cannot import test modules)."""
    from pyspark import cloudpickle

    import kit

    cloudpickle.register_pickle_by_value(kit)   # its logics and helpers, likewise
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.spark)
            module = getattr(item, "module", None)
            if module is not None:
                cloudpickle.register_pickle_by_value(module)


def python_without_sparkwax(folder: Path) -> Path:
    """A wrapper running this venv's Python with its site-packages on the path
    but no site hooks (so not the editable sparkwax install)."""
    import pandas

    site_packages = Path(pandas.__file__).resolve().parents[1]
    wrapper = folder / "python-without-sparkwax"
    wrapper.write_text("#!/bin/sh\n"
                       f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site_packages}" '
                       f'exec {sys.executable} -S "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory):
    """``sc://127.0.0.1:<port>`` of a server started for this test session."""
    import pyspark

    folder = tmp_path_factory.mktemp("connect-server")
    python = python_without_sparkwax(folder)
    check = subprocess.run([str(python), "-c", "import pandas, pyarrow, pyspark, sparkwax"],
                           cwd=folder, capture_output=True, text=True)
    assert "No module named 'sparkwax'" in check.stderr, check.stderr
    spark_home = Path(pyspark.__file__).parent
    script = spark_home / "sbin" / "start-connect-server.sh"
    if script.exists():  # 4.3's pip package
        command = [str(script)]
    elif list((spark_home / "jars").glob("spark-connect_*.jar")):  # 4.0 to 4.2: the jar only
        command = [str(spark_home / "bin" / "spark-submit"), "--class",
                   "org.apache.spark.sql.connect.service.SparkConnectServer",
                   "--name", "Spark Connect server"]
    else:  # pyspark 3.5's pip package: the server jar is on Maven only
        pytest.skip(f"pyspark {pyspark.__version__}'s pip package has no Spark Connect server "
                    "(3.5: start-connect-server.sh --packages org.apache.spark:spark-connect_2.12 "
                    "fetches it from Maven; docs/deploy.md, \"Spark versions\")")
    port = free_port()
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("PYSPARK_", "SPARK_")) and name != "PYTHONPATH"}
    env.update(SPARK_HOME=str(spark_home), SPARK_NO_DAEMONIZE="1", PYSPARK_PYTHON=str(python),
               SPARK_LOG_DIR=str(folder / "logs"), SPARK_PID_DIR=str(folder),
               PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}")
    log = open(folder / "server.log", "w")
    server = subprocess.Popen(
        [*command, "--master", "local[2]",
         "--conf", f"spark.connect.grpc.binding.port={port}",
         "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.streaming.pollingDelay=10ms",
         "--conf", "spark.sql.streaming.noDataProgressEventInterval=10ms"],
        cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, (folder / "server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the Connect server did not start in 180 s"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)  # its own process group: script + JVM
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=30)
        log.close()


@pytest.fixture(scope="session")
def remote(connect_url):
    """The client session, made the way users make it."""
    import sparkwax as sw

    session = sw.local_session(remote=connect_url)
    assert session.conf.get("spark.sql.shuffle.partitions") == "2"  # the server's local[2]
    yield session
    session.stop()
