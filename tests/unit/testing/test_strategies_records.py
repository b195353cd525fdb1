"""records, event_types and tagged_items: the shapes they promise."""

from hypothesis import given, settings
from hypothesis import strategies as st

from sparkwax.sides import Tagged
from sparkwax.testing.strategies import event_types, records, tagged_items

TYPES = {"view": {"page": st.sampled_from(["/", "/cart"])},
         "purchase": {"amount": st.integers(1, 9), "card": st.text(max_size=3)}}


@settings(max_examples=50)
@given(records(fields={"amount": st.integers(1, 9), "country": st.sampled_from(["FR"])},
               keys=st.sampled_from(["x", "y"]), column="at"))
def test_records_carry_every_field_and_an_aware_time(items):
    for key, value in items:
        assert key in ("x", "y") and set(value) == {"at", "amount", "country"}
        assert value["at"].tzinfo is not None and 1 <= value["amount"] <= 9


@settings(max_examples=50)
@given(event_types(types=TYPES, type_column="kind"))
def test_event_types_share_one_schema_with_none_for_other_types_fields(items):
    for _, value in items:
        assert set(value) == {"ts", "kind", "page", "amount", "card"}
        own = set(TYPES[value["kind"]])
        assert all(value[name] is None for name in {"page", "amount", "card"} - own)
        assert all(value[name] is not None for name in own)


@settings(max_examples=50)
@given(event_types(types=TYPES, one_schema=False))
def test_event_types_without_one_schema_keep_only_their_fields(items):
    for _, value in items:
        assert set(value) == {"ts", "type"} | set(TYPES[value["type"]])


@settings(max_examples=50)
@given(tagged_items(sides={"orders": {"amount": st.integers(1, 9)},
                           "payments": {"paid": st.integers(1, 9)}}))
def test_tagged_items_are_tagged_records_of_their_side(items):
    for _, item in items:
        assert isinstance(item, Tagged)
        assert set(item.value) == {"ts", "amount" if item.side == "orders" else "paid"}
        assert item["ts"] == item.value["ts"]


def test_every_type_and_side_is_drawn():
    seen_types, seen_sides = set(), set()

    @settings(max_examples=100)
    @given(event_types(types=TYPES), tagged_items(sides={0: {}, 1: {}}))
    def collect(typed, tagged):
        seen_types.update(v["type"] for _, v in typed)
        seen_sides.update(t.side for _, t in tagged)

    collect()
    assert seen_types == {"view", "purchase"} and seen_sides == {0, 1}
