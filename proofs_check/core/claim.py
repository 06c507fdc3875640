"""What the catalogue says about a claim (its documentation), shared by every claim family."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClaimDoc:
    """A claim as the catalogue documents it: its id, where the paper makes it, its premise and
    property, and how it is checked."""

    id: str
    ref: str  # where the paper makes the claim
    premise: str
    property: str
    checked: str  # what is checked and how (scheduler, event family, scan)
    # A measurement (a figure, not a pass/fail claim): a complete run is reported "measured", not
    # "holds" (its verdict stays Verdict.HOLDS, so exit codes and JSON are unchanged).
    measurement: bool = False

    def text(self) -> str:
        return (f"{self.id}\n    ref:       {self.ref}\n    premise:   {self.premise}\n"
                f"    property:  {self.property}\n    checked:   {self.checked}")


def matches(claim_id: str, selector: str) -> bool:
    """A selector names a claim by id or by a prefix before '.' ('thm1' selects 'thm1.sif')."""
    return claim_id == selector or claim_id.startswith(selector + ".")
