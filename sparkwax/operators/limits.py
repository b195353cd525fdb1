"""``with_state_limit``/``StateTooLarge``: cap a key's state (the core's
``sparkwax.limits``: a step's ``max_state_bytes=`` is applied by the driver)."""

from ..limits import StateLimitBuilder, StateTooLarge, with_state_limit

__all__ = ["StateLimitBuilder", "StateTooLarge", "with_state_limit"]
