"""The verifier is itself tested: deliberately broken COMPASS variants (mutants) must be reported
as violating a claim that the unbroken base variant satisfies at the same small bounds, and a
correct toy policy (an optimal repacker) must be reported as holding Theorem 1's SIF bound.

Candidate mutants that the explorer could NOT tell from the base at small bounds (kept out of the
list, noted in docs/verify.md): filler drawn from the fullest pool node, a 1-GPU instance sent to
the emptiest partial pool node, first-fit slot hosts, compact classes in the order w2, w4, pool —
each is repaired or masked by the Compact pass at these bounds.
"""
from dataclasses import replace
from functools import lru_cache

import pytest

from heuristics.gpu.abs_space import slot_width
from heuristics.gpu.cluster import Instance, Job, Placement, empty_placement
from heuristics.gpu.compass import VARIANTS
from heuristics.gpu.policy import EventResult
from oracle.gpu.phi_star import phi_star
from proofs_check.core.verdict import Verdict
from proofs_check.gpu.flat_claims import FLAT as CLAIMS
from proofs_check.gpu.flat_claims import Bounds, run_flat

L, P = VARIANTS["literal"], VARIANTS["prop3"]
POOL_ONLY = replace(CLAIMS["thm1.pool"], demands=(1,))
SPECIAL = {"pool-only": POOL_ONLY}

SMALL = Bounds(max_nodes=3, depth=5, max_jobs=3, max_w=2)
POOLB = Bounds(max_nodes=2, depth=5, max_jobs=3, max_w=6)  # enough 1-GPU instances to fill a pool node
P3B = Bounds(max_nodes=3, depth=5, max_jobs=4, max_w=3)


def _w(g_from: int, to: int):
    def width(g: int) -> int:
        return to if g == g_from else slot_width(g)
    return width


# (mutant, its base, claim it must break, bounds, what the counterexample must show)
MUTANTS = [
    (replace(L, name="m-no-compact", compact_on_arrival=False, compact_on_departure=False), L,
     CLAIMS["prop3.arrival"], SMALL, None),
    (replace(L, name="m-no-compact-on-departure", compact_on_departure=False), L, POOL_ONLY, POOLB, None),
    (replace(L, name="m-no-pool-pass", compact_classes=("w4", "w2")), L, POOL_ONLY, POOLB, None),
    (replace(L, name="m-no-w4-pass", compact_classes=("pool", "w2")), L, CLAIMS["prop3.arrival"], SMALL, None),
    (replace(L, name="m-width-g2-is-4", width=_w(2, 4)), L, CLAIMS["prop1.abs"], SMALL, "violated conditions"),
    (replace(L, name="m-width-g3-is-8", width=_w(3, 8)), L, CLAIMS["prop1.abs"], SMALL, "violated conditions"),
    (replace(L, name="m-width-g3-is-8-lem", width=_w(3, 8)), L, CLAIMS["lemA2"], SMALL, "unsaturated FUF slots"),
    (replace(L, name="m-no-filler-draw", filler_source="none"), L, CLAIMS["lemA2"], SMALL, "unsaturated FUF slots"),
    (replace(L, name="m-no-replacement-filler", replace_departed_filler=False), L, CLAIMS["lemA2"], SMALL,
     "unsaturated FUF slots"),
    (replace(P, name="m-prop3-worst-fit", slot_host="worst-fit"), P, CLAIMS["prop3.arrival"], P3B, None),
    (replace(P, name="m-prop3-no-compact-on-departure", compact_on_departure=False), P,
     CLAIMS["prop3.arrival"], SMALL, None),
]


@lru_cache(maxsize=None)
def base_verdict(base_name: str, claim_id: str, bounds: Bounds) -> Verdict:
    claim = SPECIAL.get(claim_id) or CLAIMS[claim_id]
    return run_flat([claim], bounds, variant=VARIANTS[base_name])[0].verdict


@pytest.mark.parametrize("mutant,base,claim,bounds,shows", MUTANTS, ids=[m[0].name for m in MUTANTS])
def test_mutant_is_caught(mutant, base, claim, bounds, shows):
    key = next((k for k, c in SPECIAL.items() if c is claim), claim.id)
    assert base_verdict(base.name, key, bounds) == Verdict.HOLDS  # the claim is not broken by the base
    r = run_flat([claim], bounds, variant=mutant)[0]
    assert r.verdict == Verdict.VIOLATED, r.message
    ce = r.counterexample
    assert ce["events"] and len(ce["shown"]) == len(ce["events"])
    if shows is not None:
        assert shows in ce["numbers"]


# ----------------------------------------------------------------------------- a correct toy policy
class OptimalRepacker:
    """After every event, repack all running instances into a packing with Φ★ partial nodes
    (the oracle's witness); refuse an arrival that does not fit in N nodes. SIF is 0 always."""

    name = "optimal-repacker"

    def __init__(self, n_nodes: int, capacity: int = 8, p: Placement | None = None):
        self.n_nodes, self.capacity = n_nodes, capacity
        self.p = p if p is not None else empty_placement(n_nodes, capacity)

    def running(self) -> dict[int, Job]:
        shape: dict[int, list[int]] = {}
        for node in self.p.nodes:
            for i in node:
                shape.setdefault(i.job, [i.g, 0])[1] += 1
        return {j: Job(j, g, w) for j, (g, w) in shape.items()}

    def _repack(self, insts: list[Instance]) -> bool:
        counts = tuple(sum(1 for i in insts if i.g == g) for g in range(1, self.capacity + 1))
        cert = phi_star(counts, self.n_nodes, self.capacity)
        if not cert.is_optimal:
            return False
        pool = sorted(insts, key=lambda i: (-i.g, i.job))
        nodes = []
        for demands, mult in cert.witness:
            for _ in range(mult):
                node = []
                for g in demands:
                    k = next(k for k, i in enumerate(pool) if i.g == g)
                    node.append(pool.pop(k))
                nodes.append(tuple(node))
        nodes += [()] * (self.n_nodes - len(nodes))
        self.p = Placement(self.capacity, tuple(nodes))
        return True

    def arrive(self, job: Job) -> EventResult:
        insts = [i for node in self.p.nodes for i in node] + [Instance(job.id, job.g)] * job.w
        return EventResult.applied() if self._repack(insts) else EventResult.refused("does not fit")

    def depart(self, job_id: int) -> EventResult:
        assert self._repack([i for node in self.p.nodes for i in node if i.job != job_id])
        return EventResult.applied()

    def placement(self) -> Placement:
        return self.p

    def state_key(self) -> Placement:
        return self.p

    def clone(self) -> "OptimalRepacker":
        return OptimalRepacker(self.n_nodes, self.capacity, self.p)

    def with_state(self, key: Placement) -> "OptimalRepacker":
        return OptimalRepacker(len(key.nodes), key.capacity, key)


def test_optimal_repacker_holds_thm1_sif():
    b = Bounds(max_nodes=3, depth=5, max_jobs=3, max_w=2)
    r = run_flat([CLAIMS["thm1.sif"]], b, factory=lambda n: OptimalRepacker(n))[0]
    assert r.verdict == Verdict.HOLDS, r.message
    assert sum(s["distinct"] for s in r.stats["sizes"]) > 50


def test_literal_compass_breaks_thm1_sif_at_the_same_bounds():
    """The same check is not blind: the literal COMPASS fails it where the repacker passes."""
    b = Bounds(max_nodes=3, depth=5, max_jobs=3, max_w=2)
    assert run_flat([CLAIMS["thm1.sif"]], b)[0].verdict == Verdict.VIOLATED
