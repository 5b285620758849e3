"""Plots render to real, decodable images; `ftlsim plot` and `ftlsim sweep` work from the shell."""

from __future__ import annotations

import json

import matplotlib.image
import pandas as pd
import pytest
from conftest import CONFIG, PRECONDITION, SMALL, WORKLOAD, run_cli

import ftlsim
import ftlsim.plot as P

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path, min_px=200):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, path
    img = matplotlib.image.imread(path)
    h, w = img.shape[:2]
    assert h >= min_px and w >= min_px, (h, w)
    # Not a blank canvas: some pixels differ from the background.
    assert img.reshape(-1, img.shape[-1]).std(axis=0).max() > 0.01


def assert_svg(path):
    text = path.read_text()
    assert "<svg" in text and len(text) > 2000


@pytest.fixture(scope="module")
def runs():
    kw = {"workload": WORKLOAD, "precondition": PRECONDITION}
    return {p: ftlsim.run(CONFIG, overrides={**SMALL, "gc.policy": p}, **kw) for p in ("greedy", "fifo")}


def test_latency_cdf(runs, tmp_path):
    fig = P.latency_cdf(runs, op="write", path=tmp_path / "cdf.png")
    assert_png(tmp_path / "cdf.png")
    assert fig.axes[0].get_legend().get_texts()[0].get_text().startswith("greedy")
    P.latency_cdf(list(runs.values()), path=tmp_path / "cdf.svg")
    assert_svg(tmp_path / "cdf.svg")


def test_erase_heatmap_and_timeseries(runs, tmp_path):
    P.erase_heatmap(runs["greedy"], tmp_path / "heat.png")
    assert_png(tmp_path / "heat.png")
    P.timeseries(runs["greedy"], tmp_path / "ts.png")
    assert_png(tmp_path / "ts.png")
    with pytest.raises(ValueError, match="window_ms"):
        P.timeseries(ftlsim.run(CONFIG, workload="rw=write,ios=10", overrides=SMALL, window_ms=0))


def test_wa_vs_op_from_a_sweep(tmp_path):
    df = ftlsim.sweep(
        CONFIG,
        grid={"overprovisioning": [0.1, 0.3]},
        workloads=["rw=randwrite,bs=4k,ios=3000"],
        overrides=SMALL,
        precondition="fill=1.0,overwrite=0.3",
        workers=1,
        path=tmp_path / "s.parquet",
    )
    fig = P.wa_vs_op(df, tmp_path / "wa.png")
    assert_png(tmp_path / "wa.png")
    line = fig.axes[0].get_lines()[0]
    assert list(line.get_xdata()) == [0.1, 0.3]
    assert list(line.get_ydata()) == list(df["write_amplification"])
    with pytest.raises(KeyError, match="nope"):
        P.wa_vs_op(df, x="nope")


def test_repro_tables(tmp_path):
    d = tmp_path / "repro"
    d.mkdir()
    pd.DataFrame({"ftl": ["page", "fast"], "trim": [True, False], "wa": [1.5, 2.5], "erases": [10, 30]}).to_csv(
        d / "trim-ftl.csv", index=False
    )
    (d / "hat.json").write_text(
        json.dumps({"rows": [{"ftl": "dftl", "mean_us": 300.0}, {"ftl": "hat", "mean_us": 120.0}]})
    )
    fig = P.repro(d, tmp_path / "repro.png")
    assert_png(tmp_path / "repro.png")
    assert len(fig.axes) == 2 and len(fig.axes[1].patches) == 4  # trim-ftl: 2 configs x 2 numeric columns
    fig = P.repro(d / "trim-ftl.csv", columns=["wa"])
    assert len(fig.axes[0].patches) == 2
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["page True", "fast False"]
    with pytest.raises(KeyError, match="nope"):
        P.repro(d / "trim-ftl.csv", columns=["nope"])


def test_cli_plot_renders_reports_sweeps_and_repro(cli, runs, tmp_path):
    report = tmp_path / "r.json"
    report.write_text(json.dumps(runs["greedy"].summary))
    compare = tmp_path / "c.json"
    compare.write_text(json.dumps([r.summary for r in runs.values()]))
    run_cli(cli, "plot", str(report), "-o", str(tmp_path / "r.png"))
    assert_png(tmp_path / "r.png")
    run_cli(cli, "plot", str(compare), "-o", str(tmp_path / "c.svg"))
    assert_svg(tmp_path / "c.svg")
    rows = tmp_path / "rows.csv"
    pd.DataFrame({"config": ["a", "b"], "x": [1, 2]}).to_csv(rows, index=False)
    run_cli(cli, "plot", str(rows), "-o", str(tmp_path / "rows.png"))
    assert_png(tmp_path / "rows.png")
    bad = run_cli(cli, "plot", str(tmp_path / "missing.json"), "-o", str(tmp_path / "x.png"), check=False)
    assert bad.returncode == 1 and bad.stderr.startswith("ftlsim: error: ") and "missing.json" in bad.stderr


def test_cli_sweep_spec(cli, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f'config = "{CONFIG}"\nworkloads = ["rw=randwrite,bs=4k,ios=2000"]\nout = "out/s.parquet"\nworkers = 1\n'
        '[set]\n"geometry.blocks_per_plane" = 64\n[grid]\n"gc.policy" = ["greedy", "fifo"]\n'
    )
    out = run_cli(cli, "sweep", str(spec))
    assert "greedy" in out.stdout and "fifo" in out.stdout
    df = pd.read_parquet(tmp_path / "out" / "s.parquet")
    assert list(df["gc.policy"]) == ["greedy", "fifo"]
    run_cli(cli, "plot", str(tmp_path / "out" / "s.parquet"), "-o", str(tmp_path / "wa.png"), "--x", "gc.policy")
    assert_png(tmp_path / "wa.png")
    spec.write_text('config = "hat-table4"\nworkload = ["rw=write"]\n')
    bad = run_cli(cli, "sweep", str(spec), check=False)
    assert bad.returncode == 1 and "workload" in bad.stderr and "unknown key" in bad.stderr
