"""The snapshot codec: header, round trips, and errors for every bad blob."""

from __future__ import annotations

import pickle
import threading
from collections import OrderedDict
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

import sparkwax as sw
from sparkwax import SnapshotError
from sparkwax.errors import NO_VALUE, CallbackError, NotifyAtError
from sparkwax.recovery import FORMAT_VERSION, BlobInfo, blob_info, decode, encode
from sparkwax.testing.strategies import START

from kit import UTC
from test_driver_steps import NAIVE, Keeper, assert_error, driver, raised
from test_fast_path_cases import ms
from test_two_clocks import TIME, Deadlined

STEP, KEY = "codec-step", "key-42"


def enc(value):
    return encode(value, step_id=STEP, key=KEY)


def dec(blob):
    return decode(blob, step_id=STEP, key=KEY)


@pytest.mark.parametrize("value", [
    0, -1, 2**80, 1.5, "text", b"\x00bytes", None, True, (), [], {},
    {"n": 3, "seen": [1, 2, 3]},
    (datetime(2024, 1, 1, 12, 0, 0, 1, tzinfo=UTC), datetime(2024, 1, 1)),
    datetime(2024, 6, 1, 8, tzinfo=timezone(timedelta(hours=-7))),
    {"nested": {"deep": [(1, {"x": frozenset({1, 2})}), Decimal("1.10")]}},
    OrderedDict(b=1, a=2), timedelta(minutes=5),
])
def test_round_trip(value):
    blob = enc(value)
    assert blob[:5] == b"SWX\x01P"
    back = dec(blob)
    assert back == value and type(back) is type(value)
    assert blob_info(blob) == BlobInfo(FORMAT_VERSION, "pickle", len(blob))


def test_round_trip_keeps_timezone():
    tz = timezone(timedelta(hours=5, minutes=30))
    moment = datetime(2024, 1, 1, 12, tzinfo=tz)
    assert dec(enc(moment)).utcoffset() == timedelta(hours=5, minutes=30)


def test_header_bytes_and_plain_pickle_body():
    blob = enc({"n": 3})
    assert blob[:3] == b"SWX" and blob[3] == 1 and blob[4:5] == b"P"
    assert pickle.loads(blob[5:]) == {"n": 3}
    assert blob[5:] == pickle.dumps({"n": 3}, protocol=5)


def test_lambda_uses_cloudpickle():
    offset = 10
    value = {"f": lambda x: x + offset, "n": [1, 2]}
    blob = enc(value)
    assert blob[:5] == b"SWX\x01C"
    assert blob_info(blob).serializer == "cloudpickle"
    back = dec(blob)
    assert back["f"](1) == 11 and back["n"] == [1, 2]


def test_accepts_bytearray_and_memoryview():
    blob = enc([1, 2])
    assert dec(bytearray(blob)) == [1, 2]
    assert dec(memoryview(blob)) == [1, 2]


def check(error, value_part=None):
    text = str(error)
    assert error.key == KEY and repr(KEY) in text
    assert error.step_id == STEP and repr(STEP) in text
    assert error.callback == "decode"
    if value_part is not None:
        assert value_part in text, text


@pytest.mark.parametrize("blob, words", [
    (b"garbage", "bad header"),
    (pickle.dumps({"n": 3}), "bad header"),                # a foreign pickle, no header
    (b"", "bad header"),
    (b"SWX", "bad header"),                                  # header cut short
    (b"SWX\x01", "bad header"),
    (b"swx\x01P" + pickle.dumps(1), "bad header"),
])
def test_foreign_or_short_blobs(blob, words):
    with pytest.raises(SnapshotError, match=words) as info:
        dec(blob)
    check(info.value)


@pytest.mark.parametrize("cut", [5, 6, -1])
def test_truncated_blob(cut):
    blob = enc({"n": 3, "items": list(range(20))})
    with pytest.raises(SnapshotError, match="cannot be unpickled") as info:
        dec(blob[:cut])
    check(info.value)
    assert info.value.__cause__ is not None


@pytest.mark.parametrize("version", [0, 2, 255])
def test_wrong_version_byte(version):
    blob = b"SWX" + bytes([version]) + b"P" + pickle.dumps(1)
    with pytest.raises(SnapshotError, match=f"version {version}") as info:
        dec(blob)
    check(info.value)
    assert info.value.value == version


@pytest.mark.parametrize("serializer", [b"Z", b"p", b"\x00"])
def test_wrong_serializer_byte(serializer):
    blob = b"SWX\x01" + serializer + pickle.dumps(1)
    with pytest.raises(SnapshotError, match="serializer") as info:
        dec(blob)
    check(info.value, repr(serializer))


def test_decode_none_raises_never_no_state():
    with pytest.raises(SnapshotError) as info:
        dec(None)
    check(info.value)


@pytest.mark.parametrize("blob", ["SWX\x01P", 12, [b"SWX"]])
def test_not_bytes(blob):
    with pytest.raises(SnapshotError, match="not bytes") as info:
        dec(blob)
    check(info.value)


def test_blob_info_rejects_bad_blobs_too():
    with pytest.raises(SnapshotError):
        blob_info(b"nope", step_id=STEP, key=KEY)
    assert blob_info(enc(1)).format_version == 1


def test_unpicklable_snapshot_raises_snapshot_error_naming_the_key():
    import threading

    lock = threading.Lock()
    with pytest.raises(SnapshotError) as info:
        enc({"lock": lock})
    err = info.value
    assert err.key == KEY and err.step_id == STEP and err.callback == "snapshot"
    assert repr(KEY) in str(err) and "lock" in str(err)


def test_restore_check_restores_and_commits_at_the_given_clocks():
    resume = {"timer": START, "deadline": START + timedelta(minutes=1), "clocks": None}
    stored = encode(resume, step_id="s", key="k")
    blob, timer, deadline = driver(Deadlined, time=TIME).restore_check(
        "k", stored, ms(5), ms(7))
    assert (timer, deadline) == (ms(0), ms(1))
    clocks = (START + timedelta(minutes=5), START + timedelta(minutes=7))
    assert decode(blob, step_id="s", key="k") == {**resume, "clocks": clocks}
    assert sw.now() is None  # the clock is reset
    # ProcessingTime, no deadlines, no clock given
    blob, timer, deadline = driver().restore_check("k", stored)
    assert (timer, deadline) == (ms(0), None)
    assert decode(blob, step_id="s", key="k") == {**resume, "clocks": (None, None)}


def test_restore_check_raises_what_an_activation_would():
    bad = encode({"bad": "snapshot"}, step_id="s", key="k")
    error = raised(driver().restore_check, "k", bad, 0)
    assert_error(error, CallbackError, "s", "k", "snapshot", NO_VALUE,
                 "snapshot() raised ValueError('no snapshot')")
    naive = encode({"timer": NAIVE}, step_id="s", key="k")
    error = raised(driver().restore_check, "k", naive, 0)
    assert type(error) is NotifyAtError and (error.key, error.value) == ("k", NAIVE)
    assert sw.now() is None


def test_the_drivers_decode_names_the_step_and_key():
    assert driver().decode("k", encode({"n": 1}, step_id="s", key="k")) == {"n": 1}
    with pytest.raises(SnapshotError) as caught:
        driver().decode("k", b"junk")
    assert (caught.value.step_id, caught.value.key) == ("s", "k")


def test_encode_live_names_the_step_and_key():
    logic = Keeper({"n": 1})
    assert decode(driver().encode_live("k", logic), step_id="s", key="k") == {"n": 1}
    logic.state["lock"] = threading.Lock()
    with pytest.raises(SnapshotError) as caught:
        driver().encode_live("k", logic)
    assert (caught.value.step_id, caught.value.key) == ("s", "k")
    logic.state["bad"] = "snapshot"
    error = raised(driver().encode_live, "k", logic)
    assert_error(error, CallbackError, "s", "k", "snapshot", NO_VALUE,
                 "snapshot() raised ValueError('no snapshot')")


@pytest.mark.parametrize("order", [None, [[1, 2]]])  # the plain path, the general one
def test_a_live_logics_notify_at_error(order):
    error = raised(driver().activate_live, "k", Keeper({"bad": "notify_at"}), None, [{}, {}], 0,
                   order=order)
    assert_error(error, CallbackError, "s", "k", "notify_at", NO_VALUE,
                 "notify_at() raised ValueError('no timer')")


def test_encode_snapshot_of_an_unpicklable_value_names_that_call():
    """The user called sw.encode_snapshot, not a snapshot(): the error is
    about the value given to it (issue 50); the driver's own encode still
    names snapshot(), its step and key."""
    lock = threading.Lock()
    with pytest.raises(SnapshotError) as caught:
        sw.encode_snapshot({"lock": lock})
    error = caught.value
    assert str(error).startswith("sw.encode_snapshot: the value given cannot be pickled: ")
    assert "snapshot()" not in str(error) and "lock" in str(error)
    assert (error.callback, error.key, error.value) == ("encode_snapshot", None, {"lock": lock})
    assert str(pickle.loads(pickle.dumps(error))) == str(error)  # as Spark ships it
    with pytest.raises(SnapshotError, match=r"^step 's', key 'k', snapshot: snapshot\(\) "
                                            r"returned a value that cannot be pickled"):
        encode({"lock": lock}, step_id="s", key="k")


def test_a_bad_seed_snapshot_says_it_came_from_the_seed():
    """Driver.seed (every host's seeding) names the seed; restore_check
    (``sparkwax state check``), which restores the same way, does not."""
    with pytest.raises(SnapshotError) as caught:
        driver().seed("k", b"junk", 0)
    assert str(caught.value).startswith("step 's', key 'k', decode: not a sparkwax snapshot")
    assert "raised restoring key 'k''s snapshot from the seed of step 's' (seed=)" in \
        str(caught.value)
    assert (caught.value.step_id, caught.value.key) == ("s", "k")

    def builder(resume):
        raise ValueError("no such state")

    error = raised(driver(builder).seed, "k", encode(1, step_id="s", key="k"), 0)
    assert type(error).__name__ == "BuilderError" and error.callback == "builder(resume_state)"
    assert "ValueError('no such state')" in str(error) and "from the seed of step 's'" in str(error)
    error = raised(driver().restore_check, "k", b"junk", 0)
    assert "seed" not in str(error)
