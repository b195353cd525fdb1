"""The operators' building blocks, from the core's ``sparkwax.builders``
(kept under this name so operator modules import them from one place)."""

from ..builders import (Duration, Field, FieldSpec, OperatorBuilder, TimeOf, as_timedelta,
                        aware, epoch_us, field_getter, identity, later, optional_timedelta,
                        time_getter, two_tuple)

__all__ = ["Duration", "Field", "FieldSpec", "OperatorBuilder", "TimeOf", "as_timedelta",
           "aware", "epoch_us", "field_getter", "identity", "later", "optional_timedelta",
           "time_getter", "two_tuple"]
