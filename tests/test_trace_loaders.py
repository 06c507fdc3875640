"""Trace loaders on small fixture files in the exact TRACES.md formats: shapes, counted drops and
alterations, and one-line errors naming file, line and field for malformed rows."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from heuristics.gpu.trace import TraceError, TraceJob
from heuristics.gpu.trace_loaders import (
    CPU_ONLY, CPU_TASKS_IGNORED, FRACTIONAL, G_TOO_BIG, NO_INSTANCES, NON_HOMOGENEOUS, NON_POSITIVE,
    REGROUPED, TASKS_MERGED, UNFINISHED, UNSCHEDULED, FORMATS, load_gfs, load_openb, load_pai2020,
    load_simple_csv, load_trace, load_venus, venus_shape,
)


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def shapes(trace) -> list[tuple[float, float, int, int]]:
    return [(j.submit, j.duration, j.g, j.w) for j in trace.jobs]


def assert_rejects(load: Callable[[Path], object], path: Path, line: int, field: str) -> None:
    """``load(path)`` fails with a one-line TraceError naming ``path``, ``line`` and ``field``."""
    with pytest.raises(TraceError) as exc:
        load(path)
    msg = str(exc.value)
    assert "\n" not in msg
    where = str(path) if line == 0 else f"{path}:{line}"  # line 0: the file itself
    assert msg.startswith(f"{where}: field '{field}':"), msg
    assert (exc.value.line, exc.value.field) == (line, field)


def assert_accounted(report) -> None:
    assert report.jobs_read == report.kept + sum(report.dropped.values())


# ------------------------------------------------------------------------------------------ Venus
VENUS_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"


def venus_row(jid: str, gpu: str, node: str, submit: str, duration: str, state: str = "COMPLETED") -> str:
    return f"{jid},u1,vcA,{gpu},8,{node},{state},{submit},{submit},{submit},{duration},0"


VENUS_ROWS = [
    venus_row("a", "0", "1", "2020-06-09 18:41:01", "60"),             # CPU-only
    venus_row("b", "4", "1", "2020-06-09 18:41:11", "100"),            # g=4 w=1, first kept
    venus_row("c", "16", "2", "2020-06-09 18:42:11", "50", "FAILED"),  # g=8 w=2
    venus_row("d", "16", "4", "2020-06-09 18:42:11", "70"),            # g=4 w=4
    venus_row("e", "12", "1", "2020-06-09 18:43:00", "70"),            # 12 per node -> g>8
    venus_row("f", "24", "1", "2020-06-09 18:44:00", "30"),            # regrouped g=8 w=3
    venus_row("g", "6", "4", "2020-06-09 18:45:00", "30"),             # non-homogeneous
    venus_row("h", "16", "3", "2020-06-09 18:46:00", "30"),            # regrouped g=8 w=2
    venus_row("i", "1", "1", "2020-06-09 18:47:00", "0"),              # non-positive duration
    venus_row("j", "2", "1", "2020-06-09 18:48:00", ""),               # never started
    venus_row("k", "2", "0", "2020-06-09 18:49:00", "10"),             # zero instances
]


def test_venus_shapes_drops_and_alterations(tmp_path):
    t = load_venus(write(tmp_path, "cluster_log.csv", [VENUS_HEADER, *VENUS_ROWS]))
    assert shapes(t) == [(0.0, 100.0, 4, 1), (60.0, 50.0, 8, 2), (60.0, 70.0, 4, 4),
                         (169.0, 30.0, 8, 3), (289.0, 30.0, 8, 2)]
    assert [j.id for j in t.jobs] == [0, 1, 2, 3, 4]
    assert t.report.rows == 11 and t.report.kept == 5
    assert t.report.dropped == {CPU_ONLY: 1, G_TOO_BIG: 1, NON_HOMOGENEOUS: 1, NON_POSITIVE: 1,
                                UNSCHEDULED: 1, NO_INSTANCES: 1}
    assert t.report.altered == {REGROUPED: 2}
    assert_accounted(t.report)
    assert t.name == "cluster_log"


@pytest.mark.parametrize("gpu,node,expected", [
    (0, 3, CPU_ONLY), (8, 0, NO_INSTANCES), (1, 1, (1, 1, False)), (8, 1, (8, 1, False)),
    (6, 3, (2, 3, False)), (64, 8, (8, 8, False)), (16, 1, (8, 2, True)), (24, 2, (8, 3, True)),
    (16, 3, (8, 2, True)), (9, 1, G_TOO_BIG), (20, 2, G_TOO_BIG), (6, 4, NON_HOMOGENEOUS),
    (7, 2, NON_HOMOGENEOUS),
])
def test_venus_shape_rule(gpu, node, expected):
    assert venus_shape(gpu, node) == expected


@pytest.mark.parametrize("row,line,field", [
    (venus_row("x", "four", "1", "2020-06-09 18:41:01", "60"), 3, "gpu_num"),
    (venus_row("x", "2", "1.5", "2020-06-09 18:41:01", "60"), 3, "node_num"),
    (venus_row("x", "-2", "1", "2020-06-09 18:41:01", "60"), 3, "gpu_num"),
    (venus_row("x", "2", "1", "09/06/2020", "60"), 3, "submit_time"),
    (venus_row("x", "2", "1", "", "60"), 3, "submit_time"),
    (venus_row("x", "2", "1", "2020-06-09 18:41:01", "long"), 3, "duration"),
    ("x,u1,vcA,2,8,1,COMPLETED", 3, "submit_time"),
    (venus_row("x", "2", "1", "2020-06-09 18:41:01", "60") + ",extra", 3, "row"),
])
def test_venus_malformed_rows_name_line_and_field(tmp_path, row, line, field):
    p = write(tmp_path, "cluster_log.csv", [VENUS_HEADER, VENUS_ROWS[1], row])
    assert_rejects(load_venus, p, line, field)


def test_venus_wrong_header(tmp_path):
    p = write(tmp_path, "cluster_log.csv", [VENUS_HEADER.replace("gpu_num", "gpus"), *VENUS_ROWS[:2]])
    assert_rejects(load_venus, p, 1, "gpu_num")


# -------------------------------------------------------------------------------------------- GFS
GFS_HEADER = "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type"
GFS_ROWS = [
    "239255,13,A10,20,1,1,0,2764799,HP",
    "253689,13,A10,8,1,1,0,15897599,HP",
    "437260,57,A100-SXM4-80GB,15,1,16,9589663,41060,Spot",
    "437261,57,A100-SXM4-80GB,15,1,94,9589663,71718,Spot",
    "5,1,A10,4,0.5,1,100.0,10.0,Spot",     # fractional
    "6,1,A10,4,0,1,100,10,HP",             # CPU-only
    "7,1,A10,4,2.0,4.0,200.0,30.5,HP",     # g=2 w=4, float notation
    "8,1,A10,4,1.5,2,300,10,HP",           # fractional above one GPU
    "9,1,A10,4,16,1,1,1,HP",               # g>8
    "10,1,A10,4,1,0,1,1,HP",               # zero instances
    "11,1,A10,4,1,1,5,0,HP",               # non-positive duration
    "12,1,A10,4,8,2,7,-3,HP",              # non-positive duration
]


def test_gfs_published_rows_and_drops(tmp_path):
    t = load_gfs(write(tmp_path, "job_info_df.csv", [GFS_HEADER, *GFS_ROWS]))
    assert shapes(t) == [(0.0, 2764799.0, 1, 1), (0.0, 15897599.0, 1, 1), (200.0, 30.5, 2, 4),
                         (9589663.0, 41060.0, 1, 16), (9589663.0, 71718.0, 1, 94)]
    assert t.report.dropped == {FRACTIONAL: 2, CPU_ONLY: 1, G_TOO_BIG: 1, NO_INSTANCES: 1, NON_POSITIVE: 2}
    assert t.report.altered == {}
    assert_accounted(t.report)


def test_gfs_times_relative_to_first_kept_submit(tmp_path):
    t = load_gfs(write(tmp_path, "j.csv", [GFS_HEADER, "1,1,A10,4,0,1,50,10,HP", "2,1,A10,4,1,1,80,10,HP",
                                          "3,1,A10,4,2,1,70,10,HP"]))
    assert shapes(t) == [(0.0, 10.0, 2, 1), (10.0, 10.0, 1, 1)]


@pytest.mark.parametrize("row,field", [
    ("1,1,A10,4,abc,1,0,10,HP", "gpu_request"),
    ("1,1,A10,4,-1,1,0,10,HP", "gpu_request"),
    ("1,1,A10,4,1,1.5,0,10,HP", "worker_num"),
    ("1,1,A10,4,1,1,,10,HP", "submit_time"),
    ("1,1,A10,4,1,1,0,nan,HP", "duration"),
    ("1,1,A10,4,1,1,0", "duration"),
])
def test_gfs_malformed_rows(tmp_path, row, field):
    p = write(tmp_path, "job_info_df.csv", [GFS_HEADER, *GFS_ROWS[:3], row])
    assert_rejects(load_gfs, p, 5, field)


# ------------------------------------------------------------------------------------ PAI 2020
PAI_HEADER = "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type"
PAI_ROWS = [
    "j1,worker,2,Terminated,1000,1600,600,29.3,100,V100",
    "j1,ps,1,Terminated,1000,1600,400,10,,",                 # CPU task of a GPU job: ignored
    "j2,tensorflow,1,Terminated,900,950,600,29,50,T4",       # fractional
    "j3,worker,1.0,Terminated,2000,2100,600,29,800,V100",
    "j4,worker,1,Terminated,100,200,600,29,200,P100",
    "j4,evaluator,1,Terminated,100,200,600,29,100,P100",     # j4: non-homogeneous
    "j3,evaluator,1,Terminated,2050,2300,600,29,800.0,V100",  # j3: merged, w=2, 2000..2300
    "j5,worker,1,Waiting,,,600,29,100,",                      # never started
    "j6,worker,1,Running,3000,,600,29,100,",                  # unfinished
    "j7,ps,1,Terminated,1,2,600,29,,",                        # CPU-only
    "j8,worker,1,Terminated,5,5,600,29,100,",                 # non-positive
    "j9,worker,1,Terminated,5,0,600,29,100,",                 # end 0 = never ended
    "j10,worker,1,Terminated,5,90,600,29,1600,V100",          # g>8
]


@pytest.mark.parametrize("with_header", [True, False])
def test_pai2020_groups_tasks_into_jobs(tmp_path, with_header):
    lines = ([PAI_HEADER] if with_header else []) + PAI_ROWS
    t = load_pai2020(write(tmp_path, "pai_task_table.csv", lines))
    assert shapes(t) == [(0.0, 600.0, 1, 2), (1000.0, 300.0, 8, 2)]
    r = t.report
    assert (r.rows, r.jobs_read, r.kept) == (13, 10, 2)
    assert r.dropped == {FRACTIONAL: 1, NON_HOMOGENEOUS: 1, UNSCHEDULED: 1, UNFINISHED: 2, CPU_ONLY: 1,
                         NON_POSITIVE: 1, G_TOO_BIG: 1}
    assert r.altered == {CPU_TASKS_IGNORED: 1, TASKS_MERGED: 1}
    assert_accounted(r)
    assert "(10 jobs)" in r.summary()


@pytest.mark.parametrize("row,field", [
    ("jx,worker,1,Terminated,5,90,600,29,100", "gpu_type"),
    ("jx,worker,one,Terminated,5,90,600,29,100,V100", "inst_num"),
    ("jx,worker,1,Terminated,5,90,600,29,-100,V100", "plan_gpu"),
    ("jx,worker,1,Terminated,5,later,600,29,100,V100", "end_time"),
    (",worker,1,Terminated,5,90,600,29,100,V100", "job_name"),
])
def test_pai2020_malformed_rows(tmp_path, row, field):
    p = write(tmp_path, "pai_task_table.csv", PAI_ROWS[:3] + [row])
    assert_rejects(load_pai2020, p, 4, field)


# ----------------------------------------------------------------------------------- openb 2023
OPENB_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
OPENB_ROWS = [
    "openb-pod-0000,12000,16384,1,1000,,LS,Running,10,12537496,10",
    "openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061",     # fractional
    "openb-pod-0002,88000,32768,0,0,,BE,Succeeded,20,500,20",                 # CPU-only
    "openb-pod-0003,11908,47104,1,1000,,BE,Pending,10001278,10001403,",       # pending
    "openb-pod-0004,64000,262144,8,1000,V100M32,LS,Failed,30,930,40",         # g=8, dur 890
    "openb-pod-0005,16000,65536,2,1000,G2|P100,LS,Succeeded,25,125,25",       # g=2
    "openb-pod-0006,16000,65536,16,1000,,LS,Running,25,125,25",               # g>8
    "openb-pod-0007,16000,65536,4,1000,,LS,Failed,50,60,60",                  # non-positive
    "openb-pod-0008,16000,65536,1,1000,,LS,Pending,50,60,55",                 # phase Pending
    "openb-pod-0009,16000,65536,16,500,,LS,Running,25,125,25",                # fractional before g>8
]


def test_openb_pods(tmp_path):
    t = load_openb(write(tmp_path, "openb_pod_list_default.csv", [OPENB_HEADER, *OPENB_ROWS]))
    assert shapes(t) == [(0.0, 12537486.0, 1, 1), (15.0, 100.0, 2, 1), (20.0, 890.0, 8, 1)]
    assert t.report.dropped == {FRACTIONAL: 2, CPU_ONLY: 1, UNSCHEDULED: 2, G_TOO_BIG: 1, NON_POSITIVE: 1}
    assert_accounted(t.report)


@pytest.mark.parametrize("row,field", [
    ("p,1,1,1,1000,,LS,Running,,100,10", "creation_time"),
    ("p,1,1,1,1000,,LS,Running,10,,10", "deletion_time"),
    ("p,1,1,1.5,1000,,LS,Running,10,100,10", "num_gpu"),
    ("p,1,1,1,full,,LS,Running,10,100,10", "gpu_milli"),
    ("p,1,1,1,1000,,LS,Running,10,100,soon", "scheduled_time"),
])
def test_openb_malformed_rows(tmp_path, row, field):
    p = write(tmp_path, "openb.csv", [OPENB_HEADER, OPENB_ROWS[0], row])
    assert_rejects(load_openb, p, 3, field)


# ---------------------------------------------------------------------------------- simple CSV
def test_simple_csv_round_trip_and_rebase(tmp_path):
    p = write(tmp_path, "s.csv", ["job_id,submit,duration,g,w", "7,105,10,2,3", "3,100,5.5,8,1", "", "4,105,1,1,1"])
    t = load_simple_csv(p)
    assert t.jobs == (TraceJob(3, 0.0, 5.5, 8, 1), TraceJob(4, 5.0, 1.0, 1, 1), TraceJob(7, 5.0, 10.0, 2, 3))
    assert (t.report.rows, t.report.kept, t.report.dropped) == (3, 3, {})


@pytest.mark.parametrize("row,field", [
    ("1,0,10,9,1", "g"), ("1,0,10,0,1", "g"), ("1,0,10,1,0", "w"), ("1,0,0,1,1", "duration"),
    ("0,0,10,1,1", "job_id"), ("x,0,10,1,1", "job_id"),
])
def test_simple_csv_rejects_out_of_model_rows(tmp_path, row, field):
    p = write(tmp_path, "s.csv", ["job_id,submit,duration,g,w", "0,0,10,1,1", row])
    assert_rejects(load_simple_csv, p, 3, field)


# --------------------------------------------------------------------------------------- common
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_missing_and_empty_files(tmp_path, fmt):
    missing = tmp_path / "nope.csv"
    assert_rejects(lambda q: load_trace(q, fmt), missing, 0, "file")
    empty = write(tmp_path, "empty.csv", [""])
    assert_rejects(lambda q: load_trace(q, fmt), empty, 1, "header")


def test_header_only_gives_empty_trace(tmp_path):
    t = load_trace(write(tmp_path, "g.csv", [GFS_HEADER]), "gfs")
    assert t.jobs == () and t.report.rows == 0 and t.report.kept == 0


def test_unknown_format(tmp_path):
    with pytest.raises(TraceError, match="unknown format 'philly'"):
        load_trace(tmp_path / "x.csv", "philly")


def test_load_trace_dispatches(tmp_path):
    p = write(tmp_path, "job_info_df.csv", [GFS_HEADER, *GFS_ROWS])
    assert load_trace(p, "gfs") == load_gfs(p)


def test_summary_lists_every_reason(tmp_path):
    t = load_gfs(write(tmp_path, "job_info_df.csv", [GFS_HEADER, *GFS_ROWS]))
    s = t.report.summary()
    assert s.splitlines()[0].endswith("12 rows read, 5 jobs kept, 7 dropped, 0 altered")
    for reason, n in t.report.dropped.items():
        assert any(line.split()[1:] == [str(n), *reason.split()] for line in s.splitlines()[1:]), reason


def test_pai2020_wrong_header(tmp_path):
    p = write(tmp_path, "pai_task_table.csv", [PAI_HEADER.replace("plan_gpu", "gpus"), *PAI_ROWS[:2]])
    assert_rejects(load_pai2020, p, 1, "plan_gpu")


def test_pai2020_fractional_task_counts_before_big_task(tmp_path):
    p = write(tmp_path, "pai_task_table.csv", ["j,a,1,Terminated,1,9,6,2,1600,V100", "j,b,1,Terminated,1,9,6,2,50,T4"])
    assert load_pai2020(p).report.dropped == {FRACTIONAL: 1}


def test_trace_error_survives_pickling():
    import pickle
    e = pickle.loads(pickle.dumps(TraceError("f.csv", 3, "g", "bad")))
    assert (str(e), e.line, e.field) == ("f.csv:3: field 'g': bad", 3, "g")


def test_bom_crlf_and_blank_lines_are_tolerated(tmp_path):
    p = tmp_path / "job_info_df.csv"
    text = "\n".join([GFS_HEADER, GFS_ROWS[0], "", GFS_ROWS[6]]) + "\n"
    p.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    assert shapes(load_gfs(p)) == [(0.0, 2764799.0, 1, 1), (200.0, 30.5, 2, 4)]


def test_undecodable_line_is_named(tmp_path):
    p = tmp_path / "job_info_df.csv"
    p.write_bytes(("\n".join([GFS_HEADER, GFS_ROWS[0], GFS_ROWS[1]]) + "\n").encode() + b"3,1,A\xff10,4,1,1,0,1,HP\n")
    assert_rejects(load_gfs, p, 4, "row")


def test_error_names_the_line_a_quoted_record_starts_on(tmp_path):
    p = write(tmp_path, "job_info_df.csv", [GFS_HEADER, GFS_ROWS[0], "", '2,1,"A10', 'x",4,1,1,0,zz,HP'])
    assert_rejects(load_gfs, p, 4, "duration")
