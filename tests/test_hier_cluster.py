"""Domain-aware cluster model: instance classes, the validity checker, and both exact floors
cross-checked against brute force that does not use the decomposition."""
from __future__ import annotations

from collections import Counter
from functools import lru_cache

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from heuristics.gpu.cluster import Instance, Job
from heuristics.gpu.hier_cluster import (
    DOMAIN,
    MULTI,
    SUB_PANEL,
    UNIT,
    HierPlacement,
    Span,
    Topology,
    flatten,
    gpu_phi_star,
    hier_violations,
    instance_class,
    panel_counts,
    panel_phi_star,
    partial_panels,
)
from oracle.gpu.patterns import witness_violations
from oracle.gpu.phi_star import phi_star_bruteforce
from oracle.result import Status


def test_instance_classes():
    assert [instance_class(g, 9) for g in (1, 7, 8, 16, 64, 72)] == [SUB_PANEL, SUB_PANEL, UNIT, MULTI, MULTI, DOMAIN]
    assert instance_class(8, 1) == UNIT  # K = 1: the unit and the domain-filling instance coincide
    assert instance_class(16, 2) == DOMAIN
    for g, k in ((0, 9), (9, 9), (12, 9), (80, 9), (16, 1)):
        with pytest.raises(ValueError, match=f"g={g}"):
            instance_class(g, k)


def _hp(k, d, panels, spans=()):
    t = Topology(d, k)
    full = [()] * t.n_panels
    for i, insts in panels.items():
        full[i] = tuple(insts)
    return HierPlacement(t, tuple(full), tuple(spans))


def test_valid_placement_and_flatten():
    hp = _hp(3, 2, {0: [Instance(1, 4), Instance(2, 1)], 5: [Instance(3, 8)]}, [Span(4, 16, (3, 4))])
    jobs = [Job(1, 4, 1), Job(2, 1, 1), Job(3, 8, 1), Job(4, 16, 1)]
    assert hier_violations(hp, jobs) == []
    flat = flatten(hp)
    assert [flat.used(n) for n in range(6)] == [5, 0, 0, 8, 8, 8]
    assert partial_panels(hp) == 1


@pytest.mark.parametrize("spans,panels,needle", [
    ([Span(4, 16, (2, 3))], {}, "more than one NVLink domain"),
    ([Span(4, 24, (0, 1))], {}, "needs 3 distinct panels"),
    ([Span(4, 16, (0, 0))], {}, "needs 2 distinct panels"),
    ([Span(4, 16, (0, 1))], {0: [Instance(5, 1)]}, "panel 0: 9 GPUs used"),
    ([Span(4, 56, tuple(range(7)))], {}, "not a legal demand"),
    ([], {0: [Instance(5, 6), Instance(6, 3)]}, "panel 0: 9 GPUs used"),
])
def test_violations_named(spans, panels, needle):
    hp = _hp(3, 2, panels, spans)
    assert any(needle in v for v in hier_violations(hp)), hier_violations(hp)


def test_job_accounting():
    hp = _hp(2, 1, {0: [Instance(1, 2)]}, [])
    assert "job 1: 1 instances placed, job has w=2" in hier_violations(hp, [Job(1, 2, 2)])
    assert "job 9: running but not placed" in hier_violations(hp, [Job(1, 2, 1), Job(9, 1, 1)])


# --------------------------------------------------------------------------- floors vs brute force
def _brute_gpu_phi(sub: tuple[int, ...], multi: Counter, t: Topology) -> int | None:
    """Min partial panels over explicit panel assignments: multi-panel items take p empty panels of
    one domain, sub-panel items any panel with room. Memoised on the sorted domain load profiles."""
    items = sorted((p for p, m in multi.items() for _ in range(m)), reverse=True)
    subs = sorted((g for g, c in enumerate(sub, 1) for _ in range(c)), reverse=True)

    @lru_cache(maxsize=None)
    def best(i: int, doms: tuple[tuple[int, ...], ...]) -> float:
        if i < len(items):
            p, out = items[i], float("inf")
            for d, loads in enumerate(doms):
                if loads.count(0) >= p:
                    rest = list(loads)
                    for _ in range(p):
                        rest.remove(0)
                    nd = list(doms)
                    nd[d] = tuple(sorted(rest + [8] * p))
                    out = min(out, best(i + 1, tuple(sorted(nd))))
            return out
        j = i - len(items)
        if j == len(subs):
            return sum(1 for loads in doms for x in loads if 0 < x < 8)
        g, out = subs[j], float("inf")
        for d, loads in enumerate(doms):
            for x in set(loads):
                if x + g <= 8:
                    rest = list(loads)
                    rest.remove(x)
                    nd = list(doms)
                    nd[d] = tuple(sorted(rest + [x + g]))
                    out = min(out, best(i + 1, tuple(sorted(nd))))
        return out

    v = best(0, tuple((0,) * t.panels_per_domain for _ in range(t.n_domains)))
    return None if v == float("inf") else int(v)


@settings(max_examples=60, deadline=None)
@given(k=st.sampled_from([1, 2, 3, 4]), d=st.integers(1, 2), data=st.data())
def test_gpu_phi_star_matches_explicit_brute_force(k, d, data):
    t = Topology(d, k)
    sub = tuple(data.draw(st.integers(0, 2)) for _ in range(8))
    multi = Counter({p: data.draw(st.integers(0, 1)) for p in range(2, k + 1)})
    if sum(sub) > 5:
        sub = sub[:4] + (0,) * 4
    cert = gpu_phi_star(sub, +multi, t)
    want = _brute_gpu_phi(sub, multi, t)
    if want is None:
        assert cert.status is Status.INFEASIBLE
    else:
        assert (cert.status, cert.objective) == (Status.OPTIMAL, want)
        flat_counts = list(sub)
        flat_counts[7] += sum(p * m for p, m in multi.items())
        assert witness_violations(cert.witness, tuple(flat_counts), t.n_panels) == []


@settings(max_examples=60, deadline=None)
@given(k=st.sampled_from([2, 3, 5, 9]), d=st.integers(1, 3), data=st.data())
def test_panel_phi_star_matches_brute_force(k, d, data):
    units = data.draw(st.integers(0, 4))
    multi = Counter({p: data.draw(st.integers(0, 2)) for p in data.draw(st.sets(st.integers(2, k), max_size=2))})
    counts = panel_counts(units, multi, k)
    cert = panel_phi_star(counts, Topology(d, k))
    brute = phi_star_bruteforce(counts, d, k)
    assert (cert.status, cert.objective) == (brute.status, brute.objective)


def test_gpu_phi_star_intra_domain_infeasible():
    # two 2-panel instances cannot share a 3-panel domain although 6 panels exist in total
    assert gpu_phi_star((0,) * 8, Counter({2: 3}), Topology(2, 3)).status is Status.INFEASIBLE
    assert gpu_phi_star((0,) * 8, Counter({2: 2}), Topology(2, 3)).is_optimal
