"""User-facing text speaks of the papers (COMPASS-ABS arXiv:2609.18519, RingStitch
arXiv:2609.37627), never of this project's issues or internal file names (issue 26 item 3)."""
from __future__ import annotations

import re
from pathlib import Path

from proofs_check.catalogue import DOCS

ROOT = Path(__file__).resolve().parent.parent
INTERNAL = re.compile(r"\bissue \d+|\bseeds?/0\d\d|\bseed 00\d")


def test_the_claim_catalogue_cites_no_issue_or_seed_file():
    """What `verify --list` and every report print about the paper's claims. (The policy.* docs,
    `proofs_check/gpu/policy_claims.py`, still say "issue 14": owned by the verify --policy work.)"""
    bad = [(d.id, d.ref) for d in DOCS.values() if INTERNAL.search(d.text())]
    assert not bad


def test_the_readme_cites_both_papers_and_no_issue_or_seed_file():
    text = (ROOT / "README.md").read_text()
    assert "arXiv:2609.18519v1" in text and "arXiv:2609.37627v1" in text
    assert not INTERNAL.findall(text)
