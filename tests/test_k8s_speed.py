"""The mixed-capacity Φ★ certificate (oracle.gpu.mixed_certificate) that makes audits of mixed
clusters fast (issue 24, item 3): whenever it answers, the answer is the exact Φ★ (checked
against the exhaustive search and the ILP), and an audit gives the same figures with it and
without it. Speed itself is measured in benchmarks/bench_k8s_audit.py, not asserted here."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from oracle.gpu.mixed_certificate import certified_mixed_phi_star, lower_bound, subset_sums
from oracle.gpu.mixed_phi import MixedProblem, mixed_bruteforce, phi_star_mixed
from proofs_check.gpu import audit_tally
from proofs_check.gpu.audit import audit_path, parse_bound


def random_case(rng: random.Random, max_nodes: int) -> tuple[list[int], list[int]]:
    caps = [rng.choice([8, 4, 2, 1]) for _ in range(rng.randint(1, max_nodes))]
    counts = [0] * max(caps)
    free = caps[:]
    for _ in range(rng.randint(0, 3 * len(caps))):
        g = rng.randint(1, max(caps))
        fits = [n for n in range(len(caps)) if free[n] >= g]
        if fits:
            n = rng.choice(fits)
            free[n] -= g
            counts[g - 1] += 1
    return caps, counts


def test_subset_sums_and_bound() -> None:
    assert subset_sums([8, 4, 4]) == {0, 4, 8, 12, 16}
    assert lower_bound([8, 4], [0, 0, 1]) == 1 and lower_bound([8, 4], [0, 0, 0, 3]) == 0


def test_certificate_is_exact_against_bruteforce() -> None:
    rng = random.Random(24)
    answered = 0
    for _ in range(300):
        caps, counts = random_case(rng, 5)
        got = certified_mixed_phi_star(caps, counts)
        if got is not None:
            answered += 1
            assert got == mixed_bruteforce(MixedProblem.of(caps, counts)).objective, (caps, counts)
    assert answered > 200  # it settles most cases


def test_certificate_is_exact_against_the_ilp_on_larger_clusters() -> None:
    rng = random.Random(7)
    for _ in range(40):
        caps, counts = random_case(rng, 24)
        got = certified_mixed_phi_star(caps, counts)
        if got is not None:
            assert got == phi_star_mixed(caps, counts).proven_value("Φ★"), (caps, counts)


def test_mixed_audit_same_with_and_without_certificate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    caps = [8] * 6 + [4] * 4 + [2] * 2
    free, running, rows = caps[:], {}, ["time,event,pod,node,gpus"]
    for k in range(300):
        g = rng.choice([1, 1, 1, 2, 4, 8])
        fits = [n for n in range(len(caps)) if free[n] >= g]
        if fits and (sum(free) > 20 or not running):
            n = rng.choice(fits)
            free[n] -= g
            running[f"p{k}"] = (n, g)
            rows.append(f"{k},bind,p{k},n{n},{g}")
        else:
            pod = rng.choice(sorted(running))
            n, g = running.pop(pod)
            free[n] += g
            rows.append(f"{k},delete,{pod},,")
    log, nodes = tmp_path / "b.csv", tmp_path / "nodes.csv"
    log.write_text("\n".join(rows) + "\n")
    nodes.write_text("node,gpus\n" + "".join(f"n{i},{c}\n" for i, c in enumerate(caps)))

    def run() -> list[tuple[str, str, object]]:
        audit_tally.clear_memo()
        results, _ = audit_path(str(log), parse_bound("1"), "auto", str(nodes))
        return [(r.claim_id, r.verdict.value, r.stats.get("worst SIF")) for r in results]

    fast = run()
    monkeypatch.setattr(audit_tally, "certified_mixed_phi_star", lambda caps, counts: None)
    assert run() == fast


def test_long_audits_print_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    log, nodes = tmp_path / "b.csv", tmp_path / "nodes.csv"
    log.write_text("time,event,pod,node,gpus\n" + "".join(f"{k},bind,p{k},n0,1\n{k},delete,p{k},,\n" for k in range(1000)))
    nodes.write_text("node,gpus\nn0,8\nn1,4\n")
    monkeypatch.setattr(audit_tally, "PROGRESS_SECONDS", 0.0)
    from proofs_check.gpu.audit import K8sAuditOptions
    audit_path(str(log), parse_bound("1"), "auto", str(nodes), K8sAuditOptions(progress=True))
    err = capsys.readouterr().err
    assert "2,000 lines checked" in err
    audit_path(str(log), parse_bound("1"), "auto", str(nodes), K8sAuditOptions(progress=False))
    assert capsys.readouterr().err == ""
