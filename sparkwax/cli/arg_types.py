"""Number options checked by argparse, before any JVM starts: a bad value is
argparse's usage error (exit 2), naming the option and the value.

>>> positive_int("3"), non_negative_int("0")
(3, 0)
>>> positive_int("0")
Traceback (most recent call last):
    ...
argparse.ArgumentTypeError: must be a whole number of at least 1, got '0'
>>> non_negative_int("-1")
Traceback (most recent call last):
    ...
argparse.ArgumentTypeError: must be a whole number of at least 0, got '-1'
"""

from __future__ import annotations

import argparse
from typing import Callable


def at_least(lowest: int) -> Callable[[str], int]:
    """An argparse ``type=`` for whole numbers of at least ``lowest``."""
    def parse(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            number = lowest - 1
        if number < lowest:
            raise argparse.ArgumentTypeError(
                f"must be a whole number of at least {lowest}, got {text!r}")
        return number

    parse.__name__ = f"at_least_{lowest}"  # argparse names the type in some messages
    return parse


positive_int = at_least(1)
non_negative_int = at_least(0)

__all__ = ["at_least", "non_negative_int", "positive_int"]
