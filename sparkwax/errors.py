"""The exception hierarchy: everything sparkwax raises derives from SparkwaxError.

Errors about one key's logic carry the step id, the key, the callback and the
offending value, both as attributes and in the message:

>>> err = ReturnValueError("counts", "alice", "on_item", 42, "expected a 2-tuple")
>>> str(err)
"step 'counts', key 'alice', on_item: expected a 2-tuple (got 42)"
>>> isinstance(err, SparkwaxError)
True
"""

from __future__ import annotations

import os
import pickle
import reprlib
import sys
from typing import Callable, Dict, Optional, Sequence, Tuple, Type, TypeVar

_short = reprlib.Repr()
_short.maxstring = 120
_short.maxother = 120
_short.maxlist = 8
_short.maxdict = 8


def short_repr(value: object) -> str:
    """repr() cut to a readable length, for error messages."""
    try:
        return _short.repr(value)
    except Exception:  # a broken __repr__ must not hide the real error
        return f"<{type(value).__name__} with a failing __repr__>"


NO_VALUE = object()  # a LogicError about no particular value


class SparkwaxError(Exception):
    """Root of every exception sparkwax raises."""


class LogicError(SparkwaxError):
    """Something went wrong in one step for one key.

    Attributes: ``step_id``, ``key``, ``callback`` (the method or phase, such as
    ``"on_item"`` or ``"snapshot"``), ``value`` (the offending value, if any)
    and ``reason``.
    """

    def __init__(self, step_id: str, key: object, callback: str, value: object = NO_VALUE,
                 reason: str = "") -> None:
        self.step_id = step_id
        self.key = key
        self.callback = callback
        self.value = None if value is NO_VALUE else value
        self.reason = reason
        where = f"step {step_id!r}, key {short_repr(key)}, {callback}"
        shown = "" if value is NO_VALUE else f" (got {short_repr(value)})"
        super().__init__(f"{where}: {reason}{shown}")

    def __reduce__(self) -> Tuple[Callable[[Type[LogicError], Dict[str, object], str], LogicError],
                                  Tuple[Type[LogicError], Dict[str, object], str]]:
        # keep attributes when Spark ships the error around
        attrs = dict(self.__dict__)
        for name in ("key", "value"):
            try:
                pickle.dumps(attrs[name])
            except Exception:  # e.g. the unpicklable snapshot this error is about
                attrs[name] = short_repr(attrs[name])
        return (_rebuild, (type(self), attrs, str(self)))


_E = TypeVar("_E", bound=LogicError)


def _rebuild(cls: Type[_E], attrs: Dict[str, object], message: str) -> _E:
    err = cls.__new__(cls)
    err.__dict__.update(attrs)
    Exception.__init__(err, message)
    return err


class CallbackError(LogicError, RuntimeError):
    """A user callback (on_item, on_notify, ...) raised; the cause is chained.
    Also a ``RuntimeError``, as Bytewax's run errors are, so a ported
    ``except RuntimeError`` around a run still catches it."""


class BuilderError(LogicError):
    """The builder raised, or returned something that is not a logic object."""

    @classmethod
    def sampling(cls, step_id: str, builder: str, why: str, error: BaseException
                 ) -> "BuilderError":
        """The builder raised when sparkwax called it with ``resume_state=None``
        at plan time to sample the logic (``why``: what it looks at); no key
        is involved, so the message names none (``key`` is None)."""
        made = cls(step_id, None, "builder(None) at plan time", NO_VALUE, "")
        made.reason = (f"the builder {builder} raised {short_repr(error)} when sparkwax "
                       f"called it with resume_state=None to sample the logic ({why}); "
                       f"no key was involved. A builder must accept resume_state=None: "
                       f"that is how every new key's logic is built")
        Exception.__init__(made, f"step {step_id!r}: {made.reason}")
        return made


class ReturnValueError(LogicError):
    """A callback returned something other than ``(emits, discard)``."""


class NotifyAtError(LogicError):
    """``notify_at()`` returned something other than None or an aware datetime."""


class SnapshotError(LogicError):
    """A snapshot could not be encoded, or stored bytes could not be decoded."""


class InputError(LogicError):
    """A bad input row: a null key, a missing or naive event time..."""


class SchemaError(LogicError):
    """An emitted value does not fit the step's output schema (on every host:
    see ``sparkwax.schema``). ``field`` is the path of the field that does not
    fit (``"items[2].price"``), None when the whole emit has the wrong shape;
    ``value`` is the offending value (the nested one for a nested field)."""

    def __init__(self, step_id: str, key: object, callback: str, value: object = NO_VALUE,
                 reason: str = "", field: Optional[str] = None) -> None:
        self.field = field
        super().__init__(step_id, key, callback, value, reason)


class ConfigError(SparkwaxError):
    """A bad argument to a sparkwax function (time mode, order_by, schema...)."""


class CheckpointError(ConfigError):
    """A checkpoint that cannot be read: a damaged file in it (a steps file,
    a commit or offset log entry, a state store file). The message names the
    file and the ways out. Attributes: ``checkpoint``, ``path`` (the damaged
    file, or None when it could not be pinned down), ``step_id`` (the step
    whose state it is, or None) and ``files`` (every damaged file found)."""

    def __init__(self, message: str, *, checkpoint: str, path: Optional[str] = None,
                 step_id: Optional[str] = None, files: Sequence[str] = ()) -> None:
        self.checkpoint = checkpoint
        self.path = path
        self.step_id = step_id
        self.files = list(files) or ([path] if path else [])
        super().__init__(message)

    def __reduce__(self) -> Tuple[Callable[..., CheckpointError], Tuple[object, ...]]:
        return (_checkpoint_error, (str(self), self.checkpoint, self.path, self.step_id,
                                    tuple(self.files)))


def _checkpoint_error(message: str, checkpoint: str, path: Optional[str],
                      step_id: Optional[str], files: Sequence[str]) -> CheckpointError:
    return CheckpointError(message, checkpoint=checkpoint, path=path, step_id=step_id,
                           files=files)


class RescaleError(ConfigError):
    """A checkpoint that cannot be rescaled (``sparkwax state rescale``): a
    query running on it, several stateful steps, no committed batch, a Spark
    Connect session... The message says why and what to do; the checkpoint
    is unchanged."""


class CheckpointInUseError(ConfigError):
    """A checkpoint another query holds: ``sw.start`` refused it (its liveness
    record is live, or another start took it at the same moment), or Spark
    stopped this query because another one wrote the same checkpoint. The
    checkpoint is not damaged: stop the other query first."""


class LostStateWarning(UserWarning):
    """A logic rebuilt from its snapshot disagrees with the one that committed
    it (its ``notify_at()`` differs): state kept outside ``snapshot()`` is
    lost at every activation, on Spark and offline. Warned once per step."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def outside_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` made by the caller of this
    function that names the first frame outside the sparkwax package: the
    user's line (a ``run(...)``, a ``driver.activate(...)``), however many
    sparkwax frames lie between (Python 3.12's ``skip_file_prefixes``).

    >>> outside_stacklevel()  # called from outside the package: the caller itself
    1
    """
    frame = sys._getframe(1)  # the function that warns: stacklevel 1
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level
