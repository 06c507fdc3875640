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
