"""plan.py picks the function Spark runs per group from one table: every
host option, streaming or bounded, with one or both timer kinds."""

from sparkwax.engine.hosts.host import BoundedHost, StreamingHost
from sparkwax.engine.hosts.packed import PackedBoundedHost, PackedHost
from sparkwax.engine.hosts.two_clocks import TwoClockHost, TwoClockPackedHost
from sparkwax.engine.planning.plan import HOST_CLASSES
from sparkwax.step import HOSTS


def test_every_host_option_has_its_host_classes():
    streaming = {(host, two) for host, is_streaming, two in HOST_CLASSES if is_streaming}
    bounded = {host for host, is_streaming, two in HOST_CLASSES if not is_streaming and not two}
    assert streaming == {(host, two) for host in HOSTS for two in (False, True)}
    assert bounded == set(HOSTS) and len(HOST_CLASSES) == 3 * len(HOSTS)
    assert HOST_CLASSES["per_key", True, True] is TwoClockHost
    assert HOST_CLASSES["packed", True, True] is TwoClockPackedHost
    assert [HOST_CLASSES[host, True, False] for host in ("per_key", "packed")] == \
        [StreamingHost, PackedHost]
    assert [HOST_CLASSES[host, False, False] for host in ("per_key", "packed")] == \
        [BoundedHost, PackedBoundedHost]
