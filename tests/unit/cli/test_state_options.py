"""Bad numbers given to ``sparkwax state`` are argparse's usage errors,
named, before any JVM starts (``--partitions 0`` was refused only after a
6-7 s Spark start); ``rescale`` without ``--partitions`` likewise."""

import argparse

import pytest

from sparkwax.cli.commands.state import state_command


@pytest.fixture
def no_jvm(monkeypatch):
    import sparkwax.engine.session.local_session as session

    def refuse(*args, **kwargs):
        raise AssertionError("a JVM was started")

    monkeypatch.setattr(session, "local_session", refuse)


def _run(argv):
    parser = argparse.ArgumentParser(prog="sparkwax state")
    handler = state_command(parser)
    return handler(parser.parse_args(argv))


@pytest.mark.parametrize("argv, option, lowest", [
    (["rescale", "CK", "--partitions", "0"], "--partitions", 1),
    (["rescale", "CK", "--partitions", "-3"], "--partitions", 1),
    (["rescale", "CK", "--partitions", "two"], "--partitions", 1),
    (["rescale", "CK", "--partitions", "4", "--buckets", "0"], "--buckets", 1),
    (["show", "CK", "--limit", "-1"], "--limit", 0),
    (["show", "CK", "--operator", "-1"], "--operator", 0),
    (["check", "CK", "app.py:L", "--operator", "-2"], "--operator", 0),
    (["check", "CK", "app.py:L", "--examples", "0"], "--examples", 1),
    (["check", "CK", "app.py:L", "--max-state-bytes", "0"], "--max-state-bytes", 1),
])
def test_a_bad_number_is_a_usage_error_naming_the_option(no_jvm, capsys, argv, option, lowest):
    with pytest.raises(SystemExit) as ended:
        _run(argv)
    assert ended.value.code == 2
    err = capsys.readouterr().err
    value = argv[argv.index(option) + 1]
    assert f"argument {option}: must be a whole number of at least {lowest}, got {value!r}" \
        in err, err


def test_rescale_without_partitions_is_refused_before_spark(no_jvm, capsys):
    assert _run(["rescale", "CK"]) == 2
    assert capsys.readouterr().err.strip() == (
        "sparkwax state: --partitions N is required (or --finish)")


def test_good_numbers_still_parse():
    parser = argparse.ArgumentParser()
    state_command(parser)
    args = parser.parse_args(["show", "CK", "--limit", "0", "--operator", "1"])
    assert (args.limit, args.operator) == (0, 1)
    args = parser.parse_args(["rescale", "CK", "--partitions", "5", "--buckets", "20"])
    assert (args.partitions, args.buckets) == (5, 20)
