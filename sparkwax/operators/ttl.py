"""``with_ttl``/``Ttl``: drop a key's state after it was idle (the core's
``sparkwax.expiry``: a step's ``ttl=`` is step semantics the driver applies)."""

from ..expiry import Ttl, TtlLogic, with_ttl

__all__ = ["Ttl", "TtlLogic", "with_ttl"]
