"""``sparkwax.engine.session.ending``: at the program's end, the session's
running queries are stopped (after their batch in flight), then the
session, in that order; nothing raises out of the exit hook."""

import pytest

from sparkwax.engine.session import ending


class Session:
    def __init__(self, queries, calls, stop_error=None):
        self.streams = type("Streams", (), {"active": queries})()
        self.calls, self.stop_error = calls, stop_error

    def stop(self):
        self.calls.append("session")
        if self.stop_error is not None:
            raise self.stop_error


@pytest.fixture
def calls(monkeypatch):
    made = []
    monkeypatch.setattr("sparkwax.engine.queries.stopping.stop_quietly",
                        lambda query, wait: made.append(("query", query, wait)))
    monkeypatch.setattr("sparkwax.engine.queries.listening.remove_all",
                        lambda: made.append("listeners"))
    return made


def test_queries_then_listeners_then_the_session(monkeypatch, calls):
    monkeypatch.setattr(ending, "running_session", lambda: Session(["q1", "q2"], calls))
    ending.stop_session_at_exit()
    wait = ending.QUERY_WAIT_SECONDS
    assert calls == [("query", "q1", wait), ("query", "q2", wait), "listeners", "session"]


@pytest.mark.parametrize("error", [RuntimeError("gateway closed"), KeyboardInterrupt()])
def test_the_hook_never_raises(monkeypatch, calls, error):
    monkeypatch.setattr(ending, "running_session", lambda: Session([], calls, error))
    ending.stop_session_at_exit()
    assert calls == ["listeners", "session"]


def test_nothing_to_do_without_a_running_session(monkeypatch, calls):
    monkeypatch.setattr(ending, "running_session", lambda: None)
    ending.stop_session_at_exit()
    assert calls == []


def test_registered_once(monkeypatch):
    registered = []
    monkeypatch.setattr(ending.atexit, "register", registered.append)
    monkeypatch.setattr(ending, "_registered", [])
    ending.stop_at_exit()
    ending.stop_at_exit()
    assert registered == [ending.stop_session_at_exit]
