"""Issue 27, item 3: every report, CSV, PNG and checkpoint is written atomically (a temporary file
in the same directory, then a rename); an output that cannot be written is one line on stderr
naming the file and the OS error, exit 2, with the results printed and no partial file left; a
checkpoint that cannot be written stops checkpointing and the run goes on."""
from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from proofs_check.cli import verify
from proofs_check.core import atomic, checkpoint

TINY = ["--claim", "thm1.pool", "--max-nodes", "2", "--depth", "3", "--quiet"]
DEV_FULL = Path("/dev/full")
ENOSPC = os.strerror(errno.ENOSPC)


def full_disk(monkeypatch) -> None:
    """Every rename into place fails as on a full file system."""
    def replace(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, ENOSPC, str(src), None, str(dst))

    monkeypatch.setattr(atomic.os, "replace", replace)


def one_line(err: str) -> str:
    """The one line of stderr that is not progress (simulate's bar, ringsim's [i/n] lines)."""
    lines = [ln for ln in err.strip().splitlines() if not ln.lstrip("\r").startswith("[")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name)


# --------------------------------------------------------------------------- the writer
def test_write_atomic_writes_the_whole_file_with_ordinary_permissions(tmp_path):
    dest = tmp_path / "r.json"
    atomic.write_atomic(dest, "{}\n")
    assert dest.read_text() == "{}\n" and leftovers(tmp_path) == []
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(dest.stat().st_mode) == 0o666 & ~mask
    dest.chmod(0o640)
    atomic.write_atomic(dest, b"[]")
    assert dest.read_bytes() == b"[]" and stat.S_IMODE(dest.stat().st_mode) == 0o640


def test_a_failed_rename_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    dest = tmp_path / "r.json"
    dest.write_text("old")
    full_disk(monkeypatch)
    with pytest.raises(OSError) as e:
        atomic.write_atomic(dest, "new")
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(dest)  # named by the file asked for
    assert dest.read_text() == "old" and leftovers(tmp_path) == []
    with pytest.raises(OSError):
        atomic.write_atomic(tmp_path / "fresh.json", "new")
    assert not (tmp_path / "fresh.json").exists() and leftovers(tmp_path) == []


def test_a_failing_writer_leaves_no_partial_file(tmp_path):
    dest = tmp_path / "fig.png"

    def half(tmp: Path) -> None:
        assert tmp.parent == tmp_path and tmp.suffix == ".png"  # savefig infers the format from it
        tmp.write_bytes(b"\x89PNG half")
        raise OSError(errno.ENOSPC, ENOSPC)

    with pytest.raises(OSError):
        atomic.replace_atomic(dest, half)
    assert not dest.exists() and leftovers(tmp_path) == []


def test_a_directory_in_place_is_named(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError) as e:
        atomic.write_atomic(tmp_path / "d", "x")
    assert e.value.filename == str(tmp_path / "d")


def test_a_symlink_is_followed_not_replaced(tmp_path):
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    real.write_text("old")
    link.symlink_to(real)
    atomic.write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


@pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full")
def test_dev_full_is_written_in_place_and_fails_with_enospc():
    with pytest.raises(OSError) as e:
        atomic.write_atomic(DEV_FULL, "x" * 100)
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(DEV_FULL)
    assert stat.S_ISCHR(DEV_FULL.stat().st_mode)  # the device itself is never renamed over


# --------------------------------------------------------------------------- verify's reports
def test_verify_json_on_a_full_disk_is_one_line_exit_2_results_printed_old_report_kept(tmp_path, capsys,
                                                                                         monkeypatch):
    js = tmp_path / "r.json"
    js.write_text("previous report")
    full_disk(monkeypatch)
    code = verify.main([*TINY, "--json", str(js)])
    out, err = capsys.readouterr()
    assert code == 2
    line = one_line(err)
    assert line == f"verify: error: cannot write {js}: {ENOSPC} (the results are printed above)"
    assert "thm1.pool: HOLDS" in out and "summary: 1 holds" in out  # the results are not lost
    assert js.read_text() == "previous report" and leftovers(tmp_path) == []


def test_verify_junit_failure_still_writes_the_json(tmp_path, capsys):
    js, xml = tmp_path / "r.json", tmp_path / "dir.xml"
    xml.mkdir()
    code = verify.main([*TINY, "--json", str(js), "--junit", str(xml)])
    out, err = capsys.readouterr()
    assert code == 2 and f"cannot write {xml}: Is a directory" in one_line(err)
    assert json.loads(js.read_text())["results"][0]["verdict"] == "holds"


@pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full")
def test_verify_json_to_dev_full(capsys):
    code = verify.main([*TINY, "--json", str(DEV_FULL)])
    out, err = capsys.readouterr()
    assert code == 2 and f"cannot write {DEV_FULL}: {ENOSPC}" in one_line(err) and "summary:" in out


def test_a_failed_checkpoint_write_stops_checkpointing_and_the_run_goes_on(tmp_path, capsys, monkeypatch):
    ck, js = tmp_path / "ck", tmp_path / "r.json"
    calls: list[Path] = []

    def fail(path: Path, data: bytes) -> None:
        calls.append(path)
        raise OSError(errno.ENOSPC, ENOSPC)

    monkeypatch.setattr(checkpoint, "write_atomic", fail)
    code = verify.main([*TINY, "--checkpoint", str(ck), "--json", str(js)])
    out, err = capsys.readouterr()
    assert code == 0 and "summary: 1 holds" in out  # the verdict of an uninterrupted run
    line = one_line(err)
    assert line.startswith(f"verify: cannot write the checkpoint {ck / checkpoint.FILE}: {ENOSPC}")
    assert "checkpointing stopped, the run goes on" in line
    assert len(calls) == 1  # no further attempt
    doc = json.loads(js.read_text())
    assert doc["checkpoint"]["writes"] == 0 and ENOSPC in doc["checkpoint"]["error"]


def test_checkpointer_without_on_error_still_raises(tmp_path, monkeypatch):
    ck = checkpoint.Checkpointer(tmp_path, {"claims": ["x"]})
    full_disk(monkeypatch)
    with pytest.raises(OSError):
        ck.finish("1:a", {"figures": 1})
    assert leftovers(tmp_path) == []


# --------------------------------------------------------------------------- simulate, ringsim, simulate-plot
def _trace(tmp_path: Path) -> str:
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit,duration,g,w\n0,0,10,4,1\n1,0,10,4,1\n2,1,5,8,1\n")
    return str(path)


SIM = ["--schedulers", "best-fit", "--nodes", "2", "--workers", "1"]


def test_simulate_out_on_a_full_disk(tmp_path, capsys, monkeypatch):
    from proofs_check.cli.simulate import main

    out = tmp_path / "out"
    full_disk(monkeypatch)
    code = main([_trace(tmp_path), *SIM, "--out", str(out)])
    text, err = capsys.readouterr()
    assert code == 2 and f"cannot write {out / 'summary.csv'}: {ENOSPC}" in one_line(err)
    assert "best-fit" in text  # the table was printed before
    assert [p for p in out.rglob("*") if p.is_file()] == []  # no 0-byte summary.json, no temporaries


def test_simulate_out_naming_a_file_is_one_line(tmp_path, capsys):
    from proofs_check.cli.simulate import main

    f = tmp_path / "f"
    f.write_text("keep")
    assert main([_trace(tmp_path), *SIM, "--out", str(f)]) == 2
    out, err = capsys.readouterr()
    assert f"cannot write {f}: not a directory" in one_line(err) and f.read_text() == "keep"
    assert "AFR" not in out  # refused before the runs, not after them (no table)


def test_simulate_plot_png_is_atomic(tmp_path, capsys, monkeypatch):
    from proofs_check.cli.plots import main as plot_main
    from proofs_check.cli.simulate import main

    out = tmp_path / "out"
    assert main([_trace(tmp_path), *SIM, "--out", str(out), "--plot"]) == 0
    pngs = sorted((out / "plots").glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    before = {p: p.read_bytes() for p in pngs}
    capsys.readouterr()
    full_disk(monkeypatch)
    assert plot_main([str(out)]) == 2
    line = one_line(capsys.readouterr().err)
    assert any(line == f"simulate-plot: error: cannot write {p}: {ENOSPC}" for p in pngs), line
    assert {p: p.read_bytes() for p in pngs} == before and leftovers(out / "plots") == []


def test_ringsim_results_on_a_full_disk(tmp_path, capsys, monkeypatch):
    from proofs_check.cli.ringsim import main

    full_disk(monkeypatch)
    code = main(["--dims", "2,2,2", "--warmup", "2", "--measure", "4", "--drain", "2", "--loads", "0.7",
                 "--seeds", "1", "--workloads", "B", "--schedulers", "ringstitch", "--no-plots", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 2 and one_line(err) == f"ringsim: error: cannot write {tmp_path / 'results.csv'}: {ENOSPC}"
    assert list(tmp_path.iterdir()) == []
