"""ringsim: a tiny sweep writes tidy CSV + one plot per metric; bad input exits 2."""
import csv

import pytest

from heuristics.rack.ocs_sim import SimResult
from proofs_check.cli.ringsim import main


def test_tiny_sweep_writes_csv_plots_and_table(tmp_path, capsys):
    rc = main(["--dims", "2,2,2", "--warmup", "2", "--measure", "8", "--drain", "2", "--loads", "0.7,0.9",
               "--seeds", "2", "--workloads", "B,D", "--schedulers", "ringstitch,full-rack",
               "--out", str(tmp_path)])
    assert rc == 0
    rows = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert len(rows) == 2 * 2 * 2 * 2 * len(SimResult.METRICS)
    assert set(rows[0]) == {"scheduler", "workload", "load", "seed", "metric", "value"}
    for m in SimResult.METRICS:
        assert (tmp_path / f"{m}.png").stat().st_size > 0
    out, err = capsys.readouterr()
    assert "workload B, load 90%, 2 seed(s)" in out and "[8/8]" in err


@pytest.mark.parametrize("args, field", [(["--schedulers", "ringstich"], "--schedulers"),
                                         (["--workloads", "E"], "--workloads"),
                                         (["--loads", "0.5,abc"], "--loads"),
                                         (["--dims", "2,2"], "--dims")])
def test_bad_input_exits_2_naming_the_flag(args, field, tmp_path, capsys):
    assert main(args + ["--out", str(tmp_path)]) == 2
    assert field in capsys.readouterr().err
