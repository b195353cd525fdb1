"""The one table renderer: plain text, columns padded to their widest cell.

The command line (``sparkwax state show``) and the reports of the testing
tools (``replay``) draw their tables with it, on a terminal and in a pipe
alike (no optional dependency, the same text for people and scripts).

>>> print(format_table(["key", "n"], [["a", "1"], ["bb", "22"]]))
key | n
----+---
a   | 1
bb  | 22
"""

from __future__ import annotations

from typing import Any, Sequence


def format_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """``header`` and ``rows`` (cells shown with ``str``) as aligned text: a
    header line, a rule, one line per row; trailing spaces trimmed."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells if i < len(row)) for i in range(len(cells[0]))]

    def line(row: Sequence[str]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule] + [line(row) for row in cells[1:]])


__all__ = ["format_table"]
