"""The paper's own ways of computing Φ★ (COMPASS-ABS Appendix C), kept apart from the exact oracle
so that they can be checked against it rather than trusted.

* :func:`wcc_holds` — the Workload Composition Condition (9)/(18): n1 ≥ n3 + 3·n5 + 2·n6 + n7.
* :func:`closed_form_phi` — eq. (21): Φ★ = 1[T mod G ≠ 0] with T = Σ g·n_g (claimed under WCC).
* :func:`algorithm2` — Algorithm 2 (variant ``literal``): combining stage (lines 3–6),
  Best-Fit-Decreasing (line 7 / 11), closed-form return under WCC (line 8), residual ILP when
  WCC fails (lines 10–13).

Ambiguities of the text and the reading implemented
---------------------------------------------------
A1. *Node limit N.* Eq. (21) and Algorithm 2 take only the counts (Algorithm 2's "Input: active
    instance counts n_g(t)"); §3's Φ★ is a min over "feasible packings", and a packing of the
    cluster has at most N nodes. Reading: eq. (21) ignores N (as written); Best-Fit-Decreasing
    opens bins as needed, ignoring N; under WCC line 8 returns 1[T mod G ≠ 0] whatever N is. The
    result records ``nodes_used`` and ``fits`` (nodes_used ≤ N) so a caller sees when the paper's
    answer describes a packing the cluster cannot hold.
A2. *The residual ILP's bin space M* (line 12, "into one bin of P0 or into a new bin where M is
    the bin index space"). Reading: M is the cluster's node set, i.e. the bins of P0 plus
    N − |P0| empty nodes (no limit when ``n_nodes`` is None). If P0 already uses more than N
    bins, or U cannot be placed within N nodes, the result has status 'infeasible'.
A3. *What the residual ILP may change.* Reading (C.3: "places the residual FUF instances on top
    of the resulting state"): P0 is frozen; the ILP only chooses, for each instance of U, an
    existing bin of P0 with enough room or a new bin; it minimises ν(P0 ⊕ x), the partial nodes
    of the whole packing (P0's partial bins included).
A4. *Line 10, "greedily perform lines 3–6 until the 1-GPU pool is exhausted".* Reading: lines 3–6
    run over every FUF instance in the paper's order (all 5s, then 6s, 7s, leftover 3s); each
    instance takes the first option of its line that the remaining supply allows, otherwise it
    joins U. Pairings that need no 1-GPU instance (5+3, 6+2) therefore still happen after the 1s
    run out. (The other reading — stop the whole stage at the moment the pool empties — would
    leave, e.g., a 6 unpaired next to an idle 2.)
A5. *Line 3, "else with I=2 + I=1".* Needs one 2 and one 1 both available; a 5 with a 2 but no 1
    falls through to "three I=1", and joins U when that fails too.
A6. *Which items BFD places* (line 11, "the paired items"). Reading (C.3: "we first place all
    power-of-two items"): every item except U — composites, original 2/4/8 instances and any
    unconsumed 1-GPU instances.
A7. *Best-Fit-Decreasing.* Items in non-increasing size (composites by their size); each goes to
    the open bin with the least remaining room that still fits it (ties: the bin opened first),
    else to a new bin. Composites move as blocks; the witness lists original instance sizes.
A8. *Line 8 under WCC* returns the formula, not the witness's partial count; ``phi`` is the
    formula and ``witness_partial`` the witness's count, so the two can be compared.
A9. *WCC is G = 8 specific* (its coefficients are the 1-GPU fillers needed by 3, 5, 6, 7 in an
    8-GPU node); :func:`wcc_holds` and :func:`algorithm2` require capacity 8.

Findings (what this implementation shows against the exact oracle) are in ``docs/findings-phi.md``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from oracle.gpu.phi_star import DEFAULT_TIME_LIMIT, PackingModel, check_counts, solve_cpsat
from oracle.result import Status

Branch = Literal["closed-form", "residual-ilp"]
Alg2Status = Literal["ok", "infeasible", "unknown"]
Bin = tuple[int, ...]  # instance demands on one node, sorted descending

G_PAPER = 8


def wcc_holds(counts: tuple[int, ...]) -> bool:
    """Workload Composition Condition (Theorem 1, eq. 9 in count form): n1 ≥ n3 + 3n5 + 2n6 + n7."""
    if len(counts) != G_PAPER:
        raise ValueError(f"WCC is defined for G = 8 (got {len(counts)} counts)")
    n1, _, n3, _, n5, n6, n7, _ = counts
    return n1 >= n3 + 3 * n5 + 2 * n6 + n7


def total_demand(counts: tuple[int, ...]) -> int:
    """T(t) = Σ g·n_g (eq. 20)."""
    return sum(g * n for g, n in enumerate(counts, start=1))


def closed_form_phi(counts: tuple[int, ...], capacity: int = G_PAPER) -> int:
    """Eq. (21): Φ★ = 0 if T mod G = 0 else 1. Stated by the paper under WCC; ignores N (A1)."""
    check_counts(counts, None, capacity)
    return int(total_demand(counts) % capacity != 0)


@dataclass(frozen=True)
class Alg2Result:
    """What Algorithm 2 returns, plus what is needed to audit it.

    ``phi`` is the value the algorithm reports (None unless status is 'ok'); ``packing`` the
    witness P★ as node contents; ``residual`` the unpaired FUF instances U (sizes).
    """

    status: Alg2Status
    phi: int | None
    packing: tuple[Bin, ...]
    branch: Branch
    residual: tuple[int, ...]
    n_nodes: int | None

    @property
    def nodes_used(self) -> int:
        return len(self.packing)

    @property
    def fits(self) -> bool:
        return self.n_nodes is None or self.nodes_used <= self.n_nodes

    @property
    def witness_partial(self) -> int:
        return sum(1 for b in self.packing if 0 < sum(b) < G_PAPER)


def combine(counts: tuple[int, ...]) -> tuple[list[Bin], tuple[int, ...]]:
    """Lines 3–6 (and line 10, reading A4/A5): returns (items as blocks of original sizes, U).

    Every item is a block: a composite (5+3, 5+2+1, 5+1+1+1, 6+2, 6+1+1, 7+1, 3+1) or a single
    unpaired instance. U lists the FUF instances that found no partner.
    """
    left = list(counts)
    blocks: list[Bin] = []
    unpaired: list[int] = []

    def take(partners: tuple[int, ...]) -> bool:
        need = [0] * G_PAPER
        for g in partners:
            need[g - 1] += 1
        if all(left[g] >= need[g] for g in range(G_PAPER)):
            for g in range(G_PAPER):
                left[g] -= need[g]
            return True
        return False

    # (FUF size, its partner options in the paper's priority order), lines 3, 4, 5, 6
    lines = ((5, ((3,), (2, 1), (1, 1, 1))), (6, ((2,), (1, 1))), (7, ((1,),)), (3, ((1,),)))
    for g, options in lines:
        while left[g - 1] > 0:
            left[g - 1] -= 1
            partner = next((p for p in options if take(p)), None)
            if partner is None:
                unpaired.append(g)
            else:
                blocks.append((g, *partner))
    blocks.extend((g,) for g in range(G_PAPER, 0, -1) for _ in range(left[g - 1]))
    return blocks, tuple(unpaired)


def best_fit_decreasing(blocks: list[Bin], capacity: int = G_PAPER) -> list[list[int]]:
    """BFD over blocks (A7); returns the bins as lists of original instance sizes."""
    bins: list[list[int]] = []
    for block in sorted(blocks, key=sum, reverse=True):
        size = sum(block)
        fitting = [i for i, b in enumerate(bins) if sum(b) + size <= capacity]
        if fitting:
            bins[min(fitting, key=lambda i: (capacity - sum(bins[i]), i))].extend(block)
        else:
            bins.append(list(block))
    return bins


def _canonical(bins: list[list[int]]) -> tuple[Bin, ...]:
    return tuple(tuple(sorted(b, reverse=True)) for b in bins)


def _residual_ilp(p0: list[list[int]], unpaired: tuple[int, ...], n_nodes: int | None,
                  time_limit: float) -> tuple[Alg2Status, int | None, tuple[Bin, ...]]:
    """Line 12 (A2, A3): place U on top of the frozen P0 or into new bins, minimise ν(P0 ⊕ x).

    P0's bins of equal load are interchangeable for the ILP, so they form one preloaded class of
    the pattern model (an exact, symmetry-free form of the per-bin assignment ILP).
    """
    if n_nodes is not None and len(p0) > n_nodes:
        return "infeasible", None, ()
    loads = sorted({sum(b) for b in p0})
    preloaded = tuple((ld, sum(1 for b in p0 if sum(b) == ld)) for ld in loads)
    counts = tuple(unpaired.count(g) for g in range(1, G_PAPER + 1))
    free = None if n_nodes is None else n_nodes - len(p0)
    sol = solve_cpsat(PackingModel(counts, G_PAPER, "partial", free, preloaded), time_limit)
    if not sol.is_optimal:
        return ("infeasible" if sol.status is Status.INFEASIBLE else "unknown"), None, ()
    by_load = {ld: [b for b in p0 if sum(b) == ld] for ld in loads}
    out: list[list[int]] = []
    for col, v in sol.witness:
        extra = [g + 1 for g, c in enumerate(col.addon) for _ in range(c)]
        for _ in range(v):
            out.append((by_load[col.base].pop() if col.cls >= 0 else []) + extra)
    return "ok", sol.objective, _canonical(out)


def algorithm2(counts: tuple[int, ...], n_nodes: int | None, capacity: int = G_PAPER,
               time_limit: float = DEFAULT_TIME_LIMIT) -> Alg2Result:
    """Algorithm 2 of Appendix C, variant ``literal`` (readings A1–A9 in the module docstring)."""
    counts = check_counts(counts, n_nodes, capacity)
    if capacity != G_PAPER:
        raise ValueError(f"Algorithm 2 is stated for G = 8 (got capacity={capacity})")
    blocks, unpaired = combine(counts)
    if wcc_holds(counts):
        # Lines 3–8: U is empty here (each FUF instance needs at most its WCC share of 1s).
        packing = _canonical(best_fit_decreasing(blocks + [(g,) for g in unpaired]))
        return Alg2Result("ok", closed_form_phi(counts), packing, "closed-form", unpaired, n_nodes)
    p0 = best_fit_decreasing(blocks)
    status, phi, packing = _residual_ilp(p0, unpaired, n_nodes, time_limit)
    return Alg2Result(status, phi, packing, "residual-ilp", unpaired, n_nodes)
