"""Tools on a checkpoint's state: ``state_dataframe`` (``sw.read_state``: the
state as a DataFrame, decoded on the executors) and ``check_state`` (does
every stored snapshot restore through a new logic)."""

from .restore_check import CheckResult, check_state
from .frame import state_dataframe
from .frame import state_dataframe as read_state

__all__ = ["CheckResult", "check_state", "read_state", "state_dataframe"]
