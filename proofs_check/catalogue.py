"""The claim catalogue of `verify`: every claim family, in report order, and how to run and replay each.

Families (each an adapter onto ``proofs_check.core``): flat COMPASS state claims
(``gpu.flat_claims``), Φ★ formula claims over count vectors (``gpu.count_claims``), RingStitch
claims (``rack.ring_claims``) and hierarchical COMPASS claims (``gpu.hier_claims``). The catalogue
is the one place that knows them all; the two domains never import each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from heuristics.gpu.compass import Variant
from proofs_check.core import interrupt, sampler
from proofs_check.core.budget import Budget
from proofs_check.core.claim import ClaimDoc, matches
from proofs_check.core.engine import SERIAL, Engine
from proofs_check.core.model import Expect
from proofs_check.core.search import Progress
from proofs_check.core.trace import Record, RecordError
from proofs_check.core.verdict import ClaimResult, Verdict
from proofs_check.gpu import hier_claims, policy_claims
from proofs_check.gpu.count_claims import COUNT_CLAIMS, COUNTS, check_counts, replay_counts
from proofs_check.gpu.flat_claims import FLAT, FLAT_CLAIMS, Bounds, FlatClaim, PolicyFactory, replay_flat, run_flat, sample_flat
from proofs_check.gpu.hier_claims import HIER_CATALOGUE, HierBounds
from proofs_check.rack.ring_claims import CHECKS as RING_CHECKS
from proofs_check.rack.ring_claims import RING_CLAIMS, replay_ring

DOCS: dict[str, ClaimDoc] = {d.id: d for d in (*(c.doc for c in FLAT_CLAIMS), *(c.doc for c in COUNT_CLAIMS),
                                               *RING_CLAIMS, *(c.doc for c in HIER_CATALOGUE))}
ORDER = {cid: i for i, cid in enumerate(DOCS)}
# The policy.* family and measure.sif (any scheduler, `verify --policy`): resolvable,
# runnable and replayable, but not in DOCS / `--all`, since they need a scheduler to check.
POLICY_DOCS: dict[str, ClaimDoc] = dict(policy_claims.DOCS)
ALL_DOCS: dict[str, ClaimDoc] = {**DOCS, **POLICY_DOCS}
ORDER.update({cid: len(DOCS) + i for i, cid in enumerate(POLICY_DOCS)})
THEOREMS: dict[int, tuple[str, ...]] = {1: ("thm1.slotted", "thm1.pool", "thm1.sif"), **hier_claims.THEOREMS}
# The claims each COMPASS variant makes (``verify --all --variant V`` checks exactly these): the
# paper's for literal and prop3, and the repaired variant's invariants (its docstring).
VARIANT_CLAIMS: dict[str, tuple[str, ...]] = {
    "literal": ("thm1", "prop1", "lemA2"),
    "prop3": ("prop3",),
    "repaired": ("thm1", "prop1", "lemA2", "migr"),
}


def resolve(selectors: list[str]) -> list[str]:
    """Claim ids named by id or by a prefix before '.' ('thm1' → its parts), in catalogue order;
    ValueError naming the first unknown selector."""
    out: list[str] = []
    for sel in selectors:
        found = [cid for cid in ALL_DOCS if matches(cid, sel)]
        if not found:
            raise ValueError(f"unknown claim id {sel!r}; see `verify --list`")
        out += [cid for cid in found if cid not in out]
    return sorted(out, key=ORDER.__getitem__)


def not_every_n(ids: list[str]) -> list[str]:
    """The claims ``--max-nodes all`` cannot cover: the count, RingStitch and hierarchical families
    are not explorations over N flat nodes (docs/verify.md, "Every N: the cutoff")."""
    return [c for c in ids if c not in FLAT and not policy_claims.owns(c)]


def known(claim_id: str) -> bool:
    return claim_id in ALL_DOCS


@dataclass(frozen=True)
class RunOptions:
    """Everything a run needs beyond the claim ids (the CLI builds it from its flags)."""

    bounds: Bounds = Bounds()
    hier: HierBounds = HierBounds()
    variant: str | Variant | None = None  # overrides each flat claim's own COMPASS variant
    factory: PolicyFactory | None = None  # any flat policy (tests, mutants) instead of COMPASS
    engine: Engine = SERIAL
    deadline: float | None = None
    progress: Progress | None = None
    seed: int = 0
    random: int = 0  # Hypothesis-drawn sequences per flat claim, on N ≤ random_nodes
    random_nodes: int = 64
    announce: Callable[[str], None] = field(default=print)  # the bounds lines of the report
    policy: policy_claims.PolicyTarget | None = None  # the scheduler the policy.* claims check
    policy_params: policy_claims.PolicyParams | None = None  # their k, m, admission mode, demands


def explorations(ids: list[str], opts: RunOptions) -> int:
    """How many state-space explorations checking ``ids`` runs (a time budget is split among them)."""
    flat = {(opts.variant if opts.variant is not None else FLAT[c].variant, FLAT[c].demands, FLAT[c].wcc_trajectory)
            for c in ids if c in FLAT}
    hier = [c for c in hier_claims.resolve_hier([c for c in ids if hier_claims.owns(c)])] if any(
        hier_claims.owns(c) for c in ids) else []
    groups = {c.wcc for c in hier if c.id != "k1-reduces"}
    return max(1, len(flat) + len(groups) * len(opts.hier.panels) + any(c.id == "k1-reduces" for c in hier))


def run(ids: list[str], opts: RunOptions) -> list[ClaimResult]:
    """Check the claims ``ids`` (from :func:`resolve`); results in catalogue order. After an
    interrupt (SIGINT/SIGTERM) the claims not yet checked are inconclusive ("interrupted")."""
    if isinstance(opts.deadline, Budget):
        opts.deadline.parts = explorations(ids, opts)
    results: list[ClaimResult] = []
    flat = [FLAT[c] for c in ids if c in FLAT]
    if flat:
        results += _within_memory([c for c in ids if c in FLAT], lambda: _flat(flat, opts))
    for c in ids:
        if c in COUNTS or c in RING_CHECKS:
            try:
                with interrupt.armed():
                    results += _within_memory([c], lambda: [check_counts(COUNTS[c], opts.bounds.max_nodes,
                                                                         opts.deadline, opts.progress)]
                                              if c in COUNTS else
                                              RING_CHECKS[c](seed=opts.seed, progress=opts.progress,
                                                             deadline=opts.deadline))
            except interrupt.Interrupted:
                results.append(ClaimResult(c, Verdict.INCONCLUSIVE, "interrupted before this check finished"))
    hier = [c for c in ids if hier_claims.owns(c)]
    if hier:
        opts.announce(hier_claims.bounds_text(opts.hier))
        results += _within_memory(hier, lambda: hier_claims.run_hier_claims(
            hier_claims.resolve_hier(hier), opts.hier, opts.deadline, opts.progress, opts.engine))
    policy = [c for c in ids if policy_claims.owns(c)]
    if policy:
        results += _within_memory(policy, lambda: _policy(policy, opts))
    return sorted(results, key=lambda r: (ORDER[r.claim_id.split("[")[0]], r.claim_id))


OUT_OF_MEMORY = "out of memory before this check finished (inconclusive; lower the bounds or give it more memory)"


def _within_memory(ids: list[str], check: Callable[[], list[ClaimResult]]) -> list[ClaimResult]:
    """``check()``'s results; when memory runs out in it (outside a search level, which keeps its
    own report), every claim of ``ids`` is inconclusive (:data:`OUT_OF_MEMORY`) and the run goes on."""
    try:
        return check()
    except MemoryError:
        return [ClaimResult(c, Verdict.INCONCLUSIVE, OUT_OF_MEMORY) for c in ids]


def _flat(flat: list[FlatClaim], opts: RunOptions) -> list[ClaimResult]:
    """The flat state claims, explored, with ``--random`` merged in."""
    results = run_flat(flat, opts.bounds, opts.variant, opts.factory, opts.engine, opts.deadline, opts.progress)
    if opts.random:  # after a signal the sampling stops at once: the claim is then inconclusive
        results = [_sampled(r, opts) if r.claim_id in FLAT else r for r in results]
    return results


def _policy(ids: list[str], opts: RunOptions) -> list[ClaimResult]:
    """The policy.* claims (and measure.sif) on ``opts.policy``, with ``--random`` merged in."""
    if opts.policy is None:
        raise ValueError("the policy.* claims check a scheduler: give --policy NAME (see --list-policies)")
    params = opts.policy_params or policy_claims.PolicyParams(migrating=opts.policy.migrating)
    opts.announce(policy_claims.bounds_text(opts.policy, opts.bounds, params))
    out = policy_claims.run_policy_claims(ids, opts.policy, opts.bounds, params, opts.engine, opts.deadline,
                                          opts.progress)
    if opts.random and not interrupt.requested():
        out = [policy_claims.sampled(r, opts.policy, params, opts.random, opts.seed, opts.random_nodes, opts.progress,
                                     opts.bounds.ties == "all", opts.deadline) for r in out]
    return out


def _sampled(r: ClaimResult, opts: RunOptions) -> ClaimResult:
    """Merge ``--random`` sampling into an exhaustive flat result: sampling can only add a
    counterexample (violated) or a reachability witness (holds)."""
    c = FLAT[r.claim_id]
    reachable = c.prop.expect is Expect.REACHABLE
    if r.verdict is Verdict.VIOLATED or (reachable and r.verdict is Verdict.HOLDS):  # nothing to add: said so
        return replace(r, message=f"{r.message}; not sampled: the exhaustive search already decided it")
    if opts.progress is not None:
        opts.progress(f"[{c.id}] sampling {opts.random} sequences, N ≤ {opts.random_nodes}, seed {opts.seed}")
    rec, runs = sample_flat(c, opts.random, opts.seed, opts.random_nodes, opts.variant, opts.factory,
                            opts.bounds.ties == "all", opts.deadline)
    stopped = sampler.last_stop["reason"]
    stats = {**r.stats, "sampling": {"sequences": runs, "max_nodes": opts.random_nodes, "seed": opts.seed,
                                     "found": rec is not None, **({"stopped": stopped} if stopped else {})}}
    bounds = {**r.bounds, "sampling": f"{opts.random} sequences, N ≤ {opts.random_nodes}, seed {opts.seed}"}
    if rec is None:
        cut = f" (sampling stopped: {stopped}, after {runs} of {opts.random} sequences)" if stopped else ""
        # sampling cut short by --time-limit or a signal: the check asked for was not finished (exit 3)
        verdict = Verdict.INCONCLUSIVE if stopped and r.verdict is Verdict.HOLDS else r.verdict
        return replace(r, verdict=verdict, stats=stats, bounds=bounds,
                       message=r.message + f"; no counterexample in {runs} sampled sequences (N ≤ {opts.random_nodes})"
                       + cut)
    if reachable:
        return replace(r, verdict=Verdict.HOLDS, bounds=bounds, stats={**stats, "witness": rec},
                       message=f"reached by sampling at N={rec['n_nodes']} after {len(rec['events'])} events")
    return replace(r, verdict=Verdict.VIOLATED, bounds=bounds, stats=stats, counterexample=rec,
                   message=f"violated (found by sampling, shrunk) at N={rec['n_nodes']} after {len(rec['events'])} events")


def replay(rec: Record, factory: PolicyFactory | None = None) -> tuple[ClaimResult, list[str]]:
    """Re-run one saved record (validated by ``core.trace``) with the family that wrote it."""
    cid, kind = rec["claim"], rec["kind"]
    try:
        if kind == "counts":
            return replay_counts(COUNTS[cid], rec)
        if kind.startswith("ring-"):
            return replay_ring(rec)
        if policy_claims.owns(cid):
            return policy_claims.replay_record(rec)
        if hier_claims.owns(cid):
            return hier_claims.replay_record(rec)
        return replay_flat(FLAT[cid], rec, factory)
    except (KeyError, ValueError) as e:
        raise RecordError(f"malformed {kind} record for {cid}: {e}") from None
