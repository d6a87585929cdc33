"""The benchmark's variant registry: names, and any git ref's relay by `relay@REF`."""

from __future__ import annotations

import pytest

from bench.variants import TODAY, VARIANTS, variant


def test_registered_variants_resolve_by_name() -> None:
    assert variant("reference").runner == "reference"
    assert variant("today").ref == TODAY
    assert set(VARIANTS) >= {"reference", "today"}


def test_any_git_ref_runs_as_relay_at_ref() -> None:
    chosen = variant("relay@part")
    assert (chosen.runner, chosen.ref) == ("relay", "part")


@pytest.mark.parametrize("name", ["foo", "relay@", "reference@abc", "@main"])
def test_an_unknown_variant_is_refused_with_the_choices(name: str) -> None:
    with pytest.raises(ValueError, match="choose from reference, today"):
        variant(name)
