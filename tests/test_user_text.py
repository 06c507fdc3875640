"""User-facing text speaks of the papers (COMPASS-ABS arXiv:2609.18519, RingStitch
arXiv:2609.37627), never of this project's issues or internal file names (issue 26 item 3)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from proofs_check.catalogue import ALL_DOCS
from proofs_check.cli import admit, ringsim, sifopt, verify

ROOT = Path(__file__).resolve().parent.parent
INTERNAL = re.compile(r"\bissue \d+|\bseeds?/0\d\d|\bseed 00\d")


def test_the_claim_catalogue_cites_no_issue_or_seed_file():
    """What `verify --list` and every report print about the claims (the policy.* claims too)."""
    bad = [(d.id, d.ref) for d in ALL_DOCS.values() if INTERNAL.search(d.text())]
    assert not bad


def test_the_readme_cites_both_papers_and_no_issue_or_seed_file():
    text = (ROOT / "README.md").read_text()
    assert "arXiv:2609.18519v1" in text and "arXiv:2609.37627v1" in text
    assert not INTERNAL.findall(text)


def test_no_docs_page_cites_an_issue_or_a_seed_file():
    bad = {p.name: INTERNAL.findall(p.read_text()) for p in sorted((ROOT / "docs").glob("*.md"))}
    assert not {name: found for name, found in bad.items() if found}


def test_no_help_text_cites_an_issue_or_a_seed_file():
    """Every command's --help (flags, description, the epilog from its module docstring)."""
    import io
    from contextlib import redirect_stdout

    from proofs_check.cli import plots, simulate

    texts = {prog: build().format_help() for prog, build in
             (("verify", verify.build_parser), ("sifopt", sifopt.build_parser), ("admit", admit.build_parser))}
    for prog, module in (("simulate", simulate), ("simulate-plot", plots), ("ringsim", ringsim)):
        out = io.StringIO()
        with redirect_stdout(out), pytest.raises(SystemExit) as done:
            module.main(["--help"])
        assert done.value.code == 0 and "--version" in out.getvalue()
        texts[prog] = out.getvalue()
    assert not {prog: INTERNAL.findall(text) for prog, text in texts.items() if INTERNAL.findall(text)}
