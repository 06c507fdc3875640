"""The exit code of a ``simulate`` sweep and the findings it prints (the contract: docs/cli.md).

A run that does not complete (its scheduler refused a departure, or left the queue stuck with
nothing running) is a *finding* about that scheduler: exit 1 — when the scheduler was named
(``--schedulers``). The default set (no ``--schedulers``: every built-in scheduler; plugins run
only when named) includes the COMPASS variants that read the paper's pseudocode literally
(:data:`PAPER_READINGS`), which abort by design on the built-in trace (an operator failure of the
pseudocode, docs/compass.md): their aborted runs are printed as findings and leave the exit code 0,
so plain ``simulate`` succeeds. Any other scheduler of the default set that does not complete
still exits 1.
"""
from __future__ import annotations

from enum import Enum
from typing import Iterable

from proofs_check.cli.common import EXIT_OK, EXIT_VIOLATED

__all__ = ["PAPER_READINGS", "RunKind", "classify", "sweep_exit"]

# The literal readings of COMPASS-ABS's pseudocode (arXiv:2609.18519v1): their aborts are the
# findings of docs/compass.md, not failures of a default run.
PAPER_READINGS = frozenset({"compass-literal", "compass-prop3", "compass-bare-detach"})


class RunKind(Enum):
    COMPLETE = "complete"
    EXPECTED_FINDING = "expected finding"  # a literal paper reading aborted in a default run
    FINDING = "finding"  # a run did not complete: exit 1


def classify(scheduler: str, status: str, named: bool) -> RunKind:
    """What one run's status means for the exit code (``status`` as in ``SimResult.status``)."""
    if status == "complete":
        return RunKind.COMPLETE
    if not named and scheduler in PAPER_READINGS:
        return RunKind.EXPECTED_FINDING
    return RunKind.FINDING


def sweep_exit(runs: Iterable[tuple[str, str, str]], named: bool) -> tuple[int, list[str]]:
    """The exit code and one ``finding:`` line per run that did not complete, from the runs'
    (run id, scheduler, status)."""
    lines, code = [], EXIT_OK
    for run_id, scheduler, status in runs:
        kind = classify(scheduler, status, named)
        if kind is RunKind.COMPLETE:
            continue
        if kind is RunKind.FINDING:
            code = EXIT_VIOLATED
            lines.append(f"finding: {run_id}: the run did not complete ({status}; see its note): exit 1")
        else:
            lines.append(f"finding: {run_id}: the run did not complete ({status}; see its note) — the paper's "
                         "pseudocode read literally, expected (docs/compass.md); not counted in the exit code of "
                         "the default set (name it in --schedulers to make it count)")
    return code, lines
