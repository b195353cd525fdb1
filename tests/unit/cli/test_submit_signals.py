"""``sparkwax submit`` turns Ctrl-C/SIGTERM into a graceful stop of its child.

Real processes and real signals, no Spark: the child stands in for
spark-submit and logs what reaches it. The launcher runs in its own process
group, like a shell's foreground job, so ``killpg`` on it is what a
terminal's Ctrl-C does."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

CHILD = textwrap.dedent("""
    import os, signal, sys, time
    log, mode = open(sys.argv[1], "a", buffering=1), sys.argv[2]
    with open(sys.argv[1] + ".pid", "w") as pid_file:  # the test stops it by its id
        pid_file.write(str(os.getpid()))
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    term = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    log.write(f"start ignored={ignored} term_default={term} "
              f"own_group={os.getpgrp() == os.getpid()}\\n")

    def on(number, frame):
        log.write(signal.Signals(number).name + "\\n")
        if mode == "exit 3 on SIGINT" and number == signal.SIGINT:
            sys.exit(3)
        if mode == "die on SIGTERM" and number == signal.SIGTERM:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    if mode != "no handlers":
        signal.signal(signal.SIGINT, on)
        signal.signal(signal.SIGTERM, on)
    log.write("ready\\n")
    while True:
        time.sleep(0.02)
""")

LAUNCHER = ("import os, sys; from sparkwax.cli.commands.submit import run_stoppable; "
            "sys.exit(run_stoppable(sys.argv[1:], dict(os.environ)))")


@pytest.fixture(autouse=True)
def _no_child_left(tmp_path: Path):
    """The child runs in its own session (as spark-submit does), out of reach
    of the launcher's group: after each test, stop it by its own id if a
    failed test left it running."""
    yield
    pid_file = tmp_path / "child.log.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass


def _launch(tmp_path: Path, mode: str):
    child, log = tmp_path / "child.py", tmp_path / "child.log"
    child.write_text(CHILD)
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, sys.executable, str(child),
                                 str(log), mode],
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    _wait_for(log, "ready", launcher)
    return launcher, log


def _wait_for(log: Path, line: str, launcher, count: int = 1) -> None:
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_text().splitlines().count(line) >= count):
        assert launcher.poll() is None, launcher.stderr.read()
        assert time.monotonic() < deadline, f"{line!r} never reached the child"
        time.sleep(0.02)


def _finish(launcher) -> str:
    try:
        return launcher.communicate(timeout=60)[1]
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait(timeout=60)


def test_ctrl_c_reaches_the_child_once_as_sigint_and_its_exit_code_comes_back(tmp_path):
    launcher, log = _launch(tmp_path, "exit 3 on SIGINT")
    os.killpg(launcher.pid, signal.SIGINT)  # the terminal's Ctrl-C: the foreground group
    err = _finish(launcher)
    assert launcher.returncode == 3
    assert log.read_text().splitlines() == [
        "start ignored=True term_default=True own_group=True", "ready", "SIGINT"]
    said = [line for line in err.splitlines() if line.startswith("sparkwax submit")]
    assert said == ["sparkwax submit: SIGINT: asked the app to stop after the current "
                    "micro-batch (again to stop at once)"]


def test_a_second_signal_sends_sigterm_and_a_death_by_signal_exits_128_plus_n(tmp_path):
    launcher, log = _launch(tmp_path, "die on SIGTERM")
    launcher.send_signal(signal.SIGTERM)
    _wait_for(log, "SIGINT", launcher)
    launcher.send_signal(signal.SIGTERM)
    err = _finish(launcher)
    assert log.read_text().splitlines()[2:] == ["SIGINT", "SIGTERM"]
    assert launcher.returncode == 128 + signal.SIGTERM
    assert "sparkwax submit: SIGTERM again: stopping spark-submit now" in err


def test_an_app_without_handlers_ignores_the_first_signal_and_ends_at_the_second(tmp_path):
    launcher, log = _launch(tmp_path, "no handlers")
    launcher.send_signal(signal.SIGINT)
    time.sleep(1.0)
    assert launcher.poll() is None, "the JVM-style child ignores the first SIGINT"
    launcher.send_signal(signal.SIGINT)
    _finish(launcher)
    assert launcher.returncode == 128 + signal.SIGTERM


def test_a_third_signal_kills_the_whole_group(tmp_path):
    launcher, log = _launch(tmp_path, "log only")
    for seen in ("SIGINT", "SIGTERM"):
        launcher.send_signal(signal.SIGINT)
        _wait_for(log, seen, launcher)
    launcher.send_signal(signal.SIGINT)
    _finish(launcher)
    assert launcher.returncode == 128 + signal.SIGKILL


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_the_handlers_before_the_run_come_back(number):
    from sparkwax.cli.commands.submit import run_stoppable

    before = signal.getsignal(number)
    assert run_stoppable([sys.executable, "-c", "raise SystemExit(5)"], dict(os.environ)) == 5
    assert signal.getsignal(number) == before
