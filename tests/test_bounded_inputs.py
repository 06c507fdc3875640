"""Issue 27, item 5: sizes a run would need are bounded before anything is allocated (one line
naming the field and the limit, exit 2, ``--limit SIZE=N`` raises it); nan/inf refused where a
finite number is meant; hostile files (deeply nested JSON, binary) are one-line input errors;
``simulate --window/--day`` print and save the load report of what they replay."""
import json
import time

import pytest

from heuristics import limits
from heuristics.limits import LimitError, Size
from proofs_check.cli import admit, ringsim, sifopt, simulate, verify


def _err(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.fixture
def files(tmp_path):
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({"nodes": 10 ** 9, "counts": {"1": 1}}))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    binary = tmp_path / "bin.json"
    binary.write_bytes(bytes(range(256)) * 4)
    delta = tmp_path / "delta.jsonl"
    delta.write_text('{"format": "delta", "nodes": 1000000000}\n{"event": "depart", "job": "a"}\n')
    row = tmp_path / "trace.csv"
    row.write_text("job_id,submit,duration,g,w\n0,0,100,1,1000000000\n")
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"nodes": 2, "placement": [[{"job": 1, "g": 2}]]}))
    return {"small": str(small), "huge": str(huge), "deep": str(deep), "bin": str(binary), "delta": str(delta), "row": str(row)}


@pytest.mark.parametrize("prog, args, needle", [
    (sifopt, ["{huge}"], "field 'nodes': 1000000000 > the limit of 100000 nodes (raise it with --limit nodes=N)"),
    (admit, ["{huge}", "--repack"], "field 'nodes': 1000000000 > the limit"),
    (verify, ["--audit", "{delta}"], "field 'nodes': 1000000000 > the limit"),
    (simulate, ["{row}", "--schedulers", "best-fit"], ":2: field 'w': 1000000000 > the limit of 1000000 instances"),
    (sifopt, ["{deep}"], "nested too deeply"),
    (admit, ["{deep}", "--repack"], "nested too deeply"),
    (verify, ["--replay", "{deep}"], "nested too deeply"),
    (verify, ["--replay", "{bin}"], "not UTF-8"),
    (sifopt, ["{bin}"], "not UTF-8"),
    (sifopt, ["--nodes", "2", "--counts", "1=100000000000"], "--counts: 100000000000 > the limit"),
    (sifopt, ["--nodes", "1000000000", "--counts", "1=1"], "--nodes: 1000000000 > the limit"),
    (sifopt, ["--nodes", "2", "--counts", "1=1", "--capacity", "100000000"], "--capacity: 100000000 > the limit"),
    (admit, ["{small}", "--job", "1x100000000000"], "w': 100000000000 > the limit"),
    (simulate, ["--nodes", "1000000000", "--schedulers", "best-fit"], "--nodes: 1000000000 > the limit"),
    (simulate, ["--window", "nan:inf", "--schedulers", "best-fit"], "--window: 'nan:inf'"),
    (ringsim, ["--measure", "inf"], "--measure: inf is not a finite number"),
    (ringsim, ["--warmup", "nan"], "--warmup: nan is not a finite number"),
    (ringsim, ["--measure", "1e300"], "--measure: 1e+300 > the limit"),
    (ringsim, ["--seeds", "1000000000"], "--seeds: 1000000000 > the limit of 10000 seeds"),
    (ringsim, ["--capacity", "1000000000"], "--capacity: 1000000000 > the limit"),
    (ringsim, ["--dims", "100,100,100"], "--dims: 1000000 > the limit of 10000 racks"),
    (ringsim, ["--dims", "1.5,2,2"], "--dims: need three whole sizes"),
    (ringsim, ["--first-seed", "-5"], "--first-seed: -5 must be >= 0"),
    (ringsim, ["--dims", "1,1,1"], "jobs of 128..128 chips do not fit the cluster's 64 chips"),
    (ringsim, ["--limit", "seeds=x"], "--limit: field 'seeds'"),
    (ringsim, ["--limit", "planets=3"], "unknown size 'planets'"),
])
def test_refused_in_one_line_exit_2_at_once(prog, args, needle, files, tmp_path, capsys):
    argv = [a.format(**files) for a in args]
    if prog is ringsim:
        argv += ["--out", str(tmp_path / "out"), "--no-plots"]
    t0 = time.perf_counter()
    assert prog.main(argv) == 2
    assert time.perf_counter() - t0 < 10
    assert needle in _err(capsys)


def test_a_limit_is_raised_by_the_flag_and_reset_by_the_next_parser(tmp_path, capsys):
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"nodes": 3, "counts": {"1": 2}}))
    assert sifopt.main([str(p), "--limit", "nodes=2"]) == 2
    assert "field 'nodes': 3 > the limit of 2 nodes" in _err(capsys)
    assert sifopt.main([str(p)]) == 0  # a new parser: the default again
    assert limits.limit(Size.NODES) == limits.DEFAULTS[Size.NODES]


def test_limit_error_survives_a_process_boundary():
    import pickle

    e = pickle.loads(pickle.dumps(LimitError("f", "nodes", "too many")))
    assert str(e) == "f: field 'nodes': too many"


def test_sifopt_on_zero_nodes_answers(tmp_path, capsys):
    p = tmp_path / "z.json"
    p.write_text(json.dumps({"nodes": 0, "counts": {"1": 0}}))
    assert sifopt.main([str(p)]) == 0
    assert "F★ = undefined (N = 0)" in capsys.readouterr().out


def test_window_and_day_report_what_they_replay(tmp_path, capsys):
    out = tmp_path / "o"
    assert simulate.main(["--window", "0:20000", "--schedulers", "best-fit", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "replayed builtin_trace[0,20000)" in text and "submitted outside window" in text
    saved = json.loads((out / "summary.json").read_text())
    replayed = saved["replayed"][0]
    assert replayed["load_report"]["kept"] == replayed["jobs"] == saved["load_report"]["kept"]
    assert saved["load_report"]["dropped"]["submitted outside window"] == saved["load_report"]["rows"] - replayed["jobs"]


@pytest.mark.parametrize("prog, args, needle", [
    (sifopt, ["/dev/zero", "--limit", "bytes=1000"], "/dev/zero: more than 1000 bytes (raise it with --limit bytes=N)"),
    (admit, ["/dev/zero", "--repack", "--limit", "bytes=1000"], "more than 1000 bytes"),
    (simulate, ["/dev/zero", "--schedulers", "best-fit"],
     "/dev/zero:1: field 'row': a line of more than 16777216 bytes (raise it with --limit line=N)"),
    (simulate, ["/proc/self/mem", "--schedulers", "best-fit"], "/proc/self/mem:1: field 'file': cannot read"),
])
def test_devices_and_unreadable_files_are_one_line(prog, args, needle, capsys):
    assert prog.main(args) == 2
    assert needle in _err(capsys)


def test_a_pipe_is_read_as_a_trace(tmp_path, capsys):
    import os
    import threading

    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("job_id,submit,duration,g,w\n0,0,100,1,2\n"))
    writer.start()
    assert simulate.main([str(fifo), "--schedulers", "best-fit"]) == 0
    writer.join(timeout=10)
    assert "1 jobs kept" in capsys.readouterr().out


LONG = "x" * 2000  # over --limit line=1000


@pytest.mark.parametrize("name, text, line, extra", [
    ("delta.jsonl", '{"format": "delta", "nodes": 2}\n{"event": "depart", "job": "%s"}\n' % LONG, 2, []),
    ("snaps.jsonl", '{"nodes": 2, "placement": [[]]}\n{"nodes": 2, "placement": [[{"job": "%s", "g": 1}]]}\n' % LONG,
     2, []),
    ("binds.jsonl", '{"event": "bind", "pod": "%s", "node": "n0", "gpus": 1}\n' % LONG, 1, ["--nodes-file", "{nodes}"]),
], ids=["delta", "snapshots", "bindings"])
def test_a_log_line_over_the_line_limit_is_one_line_naming_it(name, text, line, extra, tmp_path, capsys):
    """A line over ``--limit line=N`` is refused, naming file and line, before it is decoded; with
    the default limit the same file is read."""
    log, nodes = tmp_path / name, tmp_path / "nodes.csv"
    log.write_text(text)
    nodes.write_text("node,gpus\nn0,8\n")
    args = ["--audit", str(log), *[a.format(nodes=nodes) for a in extra], "--quiet"]
    assert verify.main([*args, "--limit", "line=1000"]) == 2
    assert _err(capsys) == f"verify: error: {log}:{line}: a line of more than 1000 bytes (raise it with --limit line=N)"
    assert verify.main(args) in (0, 1)


def test_a_replayed_report_over_the_byte_limit_is_refused_before_it_is_decoded(tmp_path, capsys):
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"results": [], "pad": LONG}))
    assert verify.main(["--replay", str(report), "--limit", "bytes=1000"]) == 2
    assert _err(capsys) == f"verify: error: {report}: more than 1000 bytes (raise it with --limit bytes=N)"


def test_a_piped_audit_log_is_read_once_for_detection_and_audit(tmp_path, capsys):
    """``verify --audit <(cat log)``: the format detection's read is kept for the reader (a pipe
    can be read once), so the log is audited, not "no placement lines"."""
    import os
    import threading

    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    lines = '{"nodes": 2, "placement": [[{"job": 1, "g": 8}], []]}\n'
    writer = threading.Thread(target=lambda: fifo.write_text(lines))
    writer.start()
    assert verify.main(["--audit", str(fifo), "--quiet"]) == 0
    writer.join(timeout=10)
    assert "on all 1 valid lines of 1" in capsys.readouterr().out


def test_a_byte_order_mark_is_not_glued_to_the_first_field(tmp_path, capsys):
    binds, nodes = tmp_path / "binds.csv", tmp_path / "nodes.csv"
    binds.write_bytes(b"\xef\xbb\xbftime,event,pod,node,gpus\n1,bind,p0,n0,2\n")
    nodes.write_bytes(b"\xef\xbb\xbfnode,gpus\nn0,8\n")
    assert verify.main(["--audit", str(binds), "--nodes-file", str(nodes), "--quiet"]) == 0
    assert "1 records" in capsys.readouterr().out


def test_job_ids_above_2_to_the_53_keep_every_digit(tmp_path, capsys):
    """Neighbouring ids above 2⁵³ are two jobs, not a false "duplicate id" (a float merges them)."""
    trace = tmp_path / "t.csv"
    trace.write_text(f"job_id,submit,duration,g,w\n{2**53 + 1},0,100,1,1\n{2**53},0,100,1,1\n")
    assert simulate.main([str(trace), "--schedulers", "best-fit"]) == 0
    assert "2 jobs kept" in capsys.readouterr().out
    trace.write_text("job_id,submit,duration,g,w\n7,0,100,1,1\n7.0,0,100,1,1\n")
    assert simulate.main([str(trace), "--schedulers", "best-fit"]) == 2
    assert "field 'job_id': duplicate id 7" in _err(capsys)


def test_a_piped_report_is_replayed(tmp_path, capsys):
    """``verify --replay <(cat r.json)``: a pipe is a report to read, not "no such file"."""
    import os
    import threading

    report = tmp_path / "r.json"
    assert verify.main(["--theorem", "1", "--max-nodes", "2", "--quiet", "--json", str(report)]) == 1
    fifo = tmp_path / "r.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(report.read_text()))
    writer.start()
    capsys.readouterr()
    assert verify.main(["--replay", str(fifo)]) == 1
    writer.join(timeout=10)
    assert "thm1.slotted: VIOLATED" in capsys.readouterr().out
