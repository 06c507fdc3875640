"""The built-in generated trace: deterministic, shipped byte-identical, shaped like GFS."""
from __future__ import annotations

from collections import Counter

from heuristics.gpu.trace_gen import (
    BUILTIN_JOBS, BUILTIN_PATH, generate_jobs, load_builtin, render_simple_csv, write_simple_csv,
)
from heuristics.gpu.trace_loaders import load_simple_csv


def test_regenerating_gives_the_shipped_file_byte_for_byte():
    assert render_simple_csv(generate_jobs()).encode("utf-8") == BUILTIN_PATH.read_bytes()


def test_builtin_loads_to_the_generated_jobs():
    t = load_builtin()
    assert t.jobs == generate_jobs()
    assert len(t) == BUILTIN_JOBS and t.report.dropped == {} and t.jobs[0].submit == 0.0


def test_seed_matters_and_is_reproducible():
    a, b = generate_jobs(200, 0.2, seed=1), generate_jobs(200, 0.2, seed=1)
    assert a == b and a != generate_jobs(200, 0.2, seed=2)


def test_write_then_load_round_trip(tmp_path):
    jobs = generate_jobs(50, 0.05, seed=7)
    path = tmp_path / "t.csv"
    write_simple_csv(jobs, path)
    assert load_simple_csv(path).jobs == jobs


def test_shape_follows_gfs_shares():
    jobs = load_builtin().jobs
    n = len(jobs)
    g = Counter(j.g for j in jobs)
    w = Counter(j.w for j in jobs)
    # GFS shares renormalised over integer-demand jobs: 1: 75.4 %, 2: 5.5 %, 4: 4.4 %, 8: 14.6 %.
    for k, share in {1: 0.754, 2: 0.055, 4: 0.044, 8: 0.146}.items():
        assert abs(g[k] / n - share) < 0.03, (k, g[k] / n)
    assert 0 < sum(g[k] for k in (3, 5, 6, 7)) < 0.03 * n
    assert abs(w[1] / n - 0.916) < 0.03 and max(w) == 32
    durations = sorted(j.duration for j in jobs)
    assert durations[-1] > 20 * durations[n // 2]       # heavy right tail
    assert all(j.submit <= 2 * 86400 for j in jobs)


def test_paper_profiles_match_table1_in_expectation():
    from heuristics.gpu.trace_gen import PROFILES, job_shares
    for name in ("gfs", "venus"):
        prof = PROFILES[name]
        shares = job_shares(prof)
        inst = [0.0] * 4
        for (g, w), p in shares.items():
            inst[0 if g == 1 else 3 if g == 8 else 1 if g in (2, 4) else 2] += p * w
        total = sum(inst)
        want = [s / sum(prof.shares) for s in prof.shares]
        assert all(abs(a / total - b) < 1e-12 for a, b in zip(inst, want)), name


def test_paper_trace_realises_the_shares_and_the_wide_regime():
    from heuristics.gpu.trace_gen import paper_trace, instance_shares
    t = paper_trace("gfs", seed=3)
    assert t == paper_trace("gfs", seed=3) and t.jobs != paper_trace("gfs", seed=4).jobs
    one, ff, fuf, eight = instance_shares(t.jobs)
    assert abs(one - 0.6416) < 0.06 and abs(eight - 0.2973) < 0.06 and fuf < 0.01 and abs(ff - 0.0607) < 0.03
    assert sum(1 for j in t.jobs if j.g == 8 and j.w > 30) >= 5
    venus = instance_shares(paper_trace("venus", seed=3).jobs)
    assert abs(venus[3] - 0.5244) < 0.06 and abs(venus[0] - 0.3768) < 0.06


def test_paper_trace_rejects_unknown_profile():
    import pytest
    from heuristics.gpu.trace_gen import paper_trace
    with pytest.raises(ValueError, match="unknown profile"):
        paper_trace("philly")
