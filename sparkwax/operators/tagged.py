"""Values from several inputs in one logic (``Tagged``, ``tag``): a step's
sides are step semantics, kept in the core's ``sparkwax.sides``."""

from ..sides import Tagged, side_names, tag

__all__ = ["Tagged", "side_names", "tag"]
