"""CPU time of a process tree from /proc (Linux): the JVM, the pyspark daemon
and its Python workers. Steadier than wall time on a shared machine.

Used by spark_engine.py and packed_designs.py. Not collected by pytest.
"""

from __future__ import annotations

import os
from typing import Dict, Tuple

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def tree_cpu(root) -> Dict[int, Tuple[float, float]]:
    """pid -> (own CPU seconds, CPU seconds of its reaped children) for ``root``
    and its living descendants; {} without /proc or a root."""
    if root is None or not os.path.isdir("/proc"):
        return {}
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
        table[int(name)] = (int(fields[1]), (utime + stime) / _TICKS,
                            (cutime + cstime) / _TICKS)
    children: Dict[int, list] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            out[pid] = table[pid][1:]
        todo.extend(children.get(pid, ()))
    return out
