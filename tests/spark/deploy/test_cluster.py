"""A real standalone cluster: a master and two workers started from the pip
package with ``bin/spark-class``, on 127.0.0.1 and ports chosen at runtime.

The executors run this venv's Python with ``-S`` (site-packages on
PYTHONPATH, so pandas/pyarrow import, but the editable install's ``.pth`` is
skipped): sparkwax is NOT importable there unless it is shipped, like on a
cluster where only pyspark's dependencies are installed.

The two commands come verbatim from docs/deploy.md (the worked examples),
with its example paths and master URL replaced by this test's:

1. plain ``spark-submit`` of examples/logic_module/app.py: the user module
   travels with ``--py-files``, sparkwax is shipped by the engine;
2. ``sparkwax submit`` of examples/cluster_app.py (logic in ``__main__``, by
   value): one worker is killed with SIGKILL mid-stream, the app finishes its
   input on the other, and its output equals the offline runner's.

Every process started here is stopped by pid (process groups of our own
sessions, then anything still running inside the cluster's folder), also when
a test fails.
"""

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest

from sparkwax.cli.commands import submit
from sparkwax.engine.deploy.zips import CACHE_ENV_KEY

from test_submit import offline_bursts, parquet_bursts, write_payments  # same folder

from kit import REPO, commits, free_port, stop_group

pytestmark = pytest.mark.slow

DOC = REPO / "docs" / "deploy.md"
SPARK_HOME = submit.spark_home()
FILES = 6
KILL_AFTER_COMMITS = 2
DOC_MASTER = "spark://127.0.0.1:7077"


def doc_command(marker: str) -> list:
    """The shell command of the ```console block after ``<!-- marker -->``."""
    text = DOC.read_text()
    start = text.index(f"<!-- {marker} -->")
    block = text[text.index("```console", start) + len("```console"):]
    block = block[:block.index("```")]
    commands = [shlex.split(line[2:]) for line in
                block.replace("\\\n", " ").splitlines() if line.startswith("$ ")]
    return [words for words in commands if not words[0].startswith("export")][-1]


class Cluster:
    def __init__(self, root: Path):
        self.root = root
        self.processes = {}
        self.master_port, self.webui_port = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.master_port}"
        self.env = {**os.environ, "SPARK_HOME": SPARK_HOME, "SPARK_LOCAL_IP": "127.0.0.1",
                    "SPARK_LOG_DIR": str(root / "logs")}
        (root / "logs").mkdir(parents=True)

    def spawn(self, name: str, args: list, **options) -> subprocess.Popen:
        log = open(self.root / "logs" / f"{name}.out", "w")
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, **options)
        log.close()
        self.processes[name] = process
        return process

    def start(self, workers: int = 2, timeout: float = 180) -> None:
        spark_class = os.path.join(SPARK_HOME, "bin", "spark-class")
        self.spawn("master", [spark_class, "org.apache.spark.deploy.master.Master",
                              "--host", "127.0.0.1", "--port", str(self.master_port),
                              "--webui-port", str(self.webui_port)], env=self.env)
        for number in range(1, workers + 1):
            work = self.root / f"worker-{number}"
            work.mkdir()
            self.spawn(f"worker-{number}", [
                spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                "--cores", "1", "--memory", "1g", "--webui-port", "0",
                "--work-dir", str(work), self.url],
                env={**self.env, "SPARK_WORKER_DIR": str(work)}, cwd=str(work))
        deadline = time.monotonic() + timeout
        while self.alive_workers() < workers:
            dead = [n for n, p in self.processes.items() if p.poll() is not None]
            assert not dead, f"{dead} exited while starting\n{self.logs()}"
            assert time.monotonic() < deadline, f"workers did not register\n{self.logs()}"
            time.sleep(0.5)

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/",
                                        timeout=5) as answer:
                return int(json.load(answer)["aliveworkers"])
        except (OSError, ValueError, KeyError):
            return 0

    def kill_worker(self, name: str) -> int:
        """SIGKILL the worker's JVM (spark-class execs java: the pid is the JVM)."""
        pid = self.processes[name].pid
        os.kill(pid, signal.SIGKILL)
        self.processes[name].wait(timeout=30)
        return pid

    def logs(self, lines: int = 15) -> str:
        parts = []
        for path in sorted((self.root / "logs").glob("*.out")):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(parts)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)  # our own session: JVM + children
                except ProcessLookupError:
                    pass
        for process in self.processes.values():
            process.wait(timeout=60)
        deadline = time.monotonic() + 30
        while self.leftovers() and time.monotonic() < deadline:
            for pid in self.leftovers():  # executors/pyspark daemons in our work dirs
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)

    def leftovers(self) -> list:
        """Processes running inside the cluster's folder (only ours can be)."""
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                try:
                    cwd = os.readlink(f"/proc/{entry}/cwd")
                except OSError:
                    continue
                if cwd == str(self.root) or cwd.startswith(str(self.root) + os.sep):
                    found.append(int(entry))
        return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("standalone"))
    try:
        started = time.monotonic()
        cluster.start()
        print(f"cluster up in {time.monotonic() - started:.0f} s at {cluster.url}")
        yield cluster
    finally:
        cluster.stop()
    assert not cluster.leftovers()


@pytest.fixture(scope="module")
def executor_python(tmp_path_factory) -> str:
    """This venv's interpreter without site processing: sparkwax is not importable."""
    paths = os.pathsep.join(dict.fromkeys([sysconfig.get_paths()["purelib"],
                                           sysconfig.get_paths()["platlib"]]))
    script = tmp_path_factory.mktemp("python") / "python-without-sparkwax"
    script.write_text("#!/bin/sh\n"
                      f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{paths}" '
                      f'exec {shlex.quote(sys.executable)} -S "$@"\n')
    script.chmod(0o755)
    check = subprocess.run([str(script), "-c", "import pandas, pyarrow, pyspark; import sparkwax"],
                           capture_output=True, text=True, cwd=str(script.parent), timeout=60)
    assert "No module named 'sparkwax'" in check.stderr, check.stderr
    return str(script)


def run_logged(command, log: Path, env) -> subprocess.Popen:
    with open(log, "w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env,
                                   cwd=str(REPO), start_new_session=True)
    return process


def test_plain_spark_submit_ships_sparkwax_and_the_py_files_module(cluster, executor_python,
                                                                   tmp_path):
    folder = tmp_path / "readings"
    folder.mkdir()
    for batch, rows in enumerate([[("s1", 1.0), ("s2", 5.0), ("s1", 2.0)],
                                  [("s1", 3.0), ("s2", 4.0), ("s1", 1.0)]]):
        path = folder / f"batch-{batch}.json"
        path.write_text("".join(json.dumps({"sensor": s, "seq": batch * 10 + i, "value": v}) + "\n"
                                for i, (s, v) in enumerate(rows)))
        os.utime(path, (1_600_000_000 + batch,) * 2)
    replace = {DOC_MASTER: cluster.url, "/data/readings": str(folder),
               "/data/streaks": str(tmp_path / "out"), "/data/streaks-ck": str(tmp_path / "ck"),
               "spark.pyspark.python=/opt/venv/bin/python": f"spark.pyspark.python={executor_python}",
               "spark.pyspark.driver.python=/opt/venv/bin/python":
                   f"spark.pyspark.driver.python={sys.executable}",
               "$SPARK_HOME/bin/spark-submit": os.path.join(SPARK_HOME, "bin", "spark-submit")}
    command = [replace.get(word, word) for word in doc_command("test_cluster: spark-submit")]
    assert command[0].endswith("spark-submit") and "--py-files" in command
    env = {**cluster.env, CACHE_ENV_KEY: str(tmp_path / "ship")}
    log = tmp_path / "submit.log"
    started = time.monotonic()
    process = run_logged(command + ["--where"], log, env)
    try:
        process.wait(timeout=400)
    finally:
        stop_group(process)
    output = log.read_text(errors="replace")
    if process.returncode != 0 and "No module named 'sparkwax'" in output:
        pytest.fail("the executors could not import sparkwax: the engine did not ship it (is "
                    "ensure_shipped(df.sparkSession) called when a step is planned, in "
                    f"sparkwax/engine/planning/plan.py?)\n{output[-3000:]}")
    assert process.returncode == 0, output[-5000:]
    origins = json.loads(re.search(r"^origins (.*)$", output, re.M).group(1))
    rows = json.loads(re.search(r"^rows (.*)$", output, re.M).group(1))
    print(f"plain spark-submit ran in {time.monotonic() - started:.0f} s; executors: {origins}")
    # sparkwax came from the zip the engine added (the executors' Python has none) ...
    assert re.search(r"sparkwax-[^/]+-[0-9a-f]{12}\.zip/sparkwax/__init__\.py$",
                     origins["sparkwax"]), origins
    # ... and the logic module from the executor's copy of --py-files
    assert origins["streaks"].startswith(str(cluster.root)), origins
    assert rows == [["s1", 1, 1], ["s1", 1, 3], ["s1", 2, 2], ["s1", 3, 3],
                    ["s2", 1, 1], ["s2", 1, 1]]


def test_sparkwax_submit_survives_a_worker_killed_mid_stream(cluster, executor_python,
                                                             tmp_path):
    batches = write_payments(tmp_path / "payments", FILES, "cluster")
    expected = offline_bursts(batches)
    checkpoint = tmp_path / "ck"
    replace = {DOC_MASTER: cluster.url, "/data/payments": str(tmp_path / "payments"),
               "/data/bursts": str(tmp_path / "out"), "/data/checkpoint": str(checkpoint)}
    words = [replace.get(word, word) for word in doc_command("test_cluster: sparkwax submit")]
    assert words[:2] == ["sparkwax", "submit"]
    command = [sys.executable, "-c", "from sparkwax.cli import main; raise SystemExit(main())",
               "submit", "--python", executor_python, *words[2:]]
    env = {**cluster.env, CACHE_ENV_KEY: str(tmp_path / "ship")}
    log = tmp_path / "submit.log"
    started = time.monotonic()
    process = run_logged(command, log, env)
    try:
        deadline = time.monotonic() + 300
        while commits(checkpoint) < KILL_AFTER_COMMITS:
            assert process.poll() is None, log.read_text(errors="replace")[-5000:]
            assert time.monotonic() < deadline, "no micro-batch committed"
            time.sleep(0.1)
        killed_at = commits(checkpoint)
        assert process.poll() is None, "the app ended before the kill"
        victim = cluster.kill_worker("worker-1")
        print(f"killed worker-1 (pid {victim}) after {killed_at} commits, "
              f"{time.monotonic() - started:.0f} s")
        process.wait(timeout=300)
    finally:
        stop_group(process)
    output = log.read_text(errors="replace")
    assert process.returncode == 0, output[-5000:]
    print(f"sparkwax submit ran in {time.monotonic() - started:.0f} s")
    printed = output.splitlines()[0]
    assert f"--master {cluster.url} --py-files " in printed and "sparkwax-" in printed
    assert f"done on {cluster.url}" in output
    assert "Lost executor" in output  # the driver saw the worker's executor go
    assert killed_at < commits(checkpoint) == FILES + 1  # + the trailing no-data batch
    assert parquet_bursts(tmp_path / "out") == expected
