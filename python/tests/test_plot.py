"""Plots render to real, decodable images; `ftlsim plot` and `ftlsim sweep` work from the shell."""

from __future__ import annotations

import itertools
import json

import matplotlib.image
import pandas as pd
import pytest
from conftest import CONFIG, PRECONDITION, SMALL, WORKLOAD, run_cli

import ftlsim
import ftlsim.plot as P
from ftlsim._sweep import param_columns

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
    assert param_columns(df.columns) == ["overprovisioning"]
    fig = P.wa_vs_op(df, tmp_path / "wa.png")
    assert_png(tmp_path / "wa.png")
    line = fig.axes[0].get_lines()[0]
    assert list(line.get_xdata()) == [0.1, 0.3]
    assert list(line.get_ydata()) == list(df["write_amplification"])
    with pytest.raises(KeyError, match="nope"):
        P.wa_vs_op(df, x="nope")


def sweep_table(ftls, policies, ops=(0.1, 0.2, 0.3), seeds=(1, 2)):
    """Rows laid out as ftlsim.sweep writes them; WA differs per FTL, policy, OP and seed."""
    rows = []
    for ftl, policy, op, seed in itertools.product(ftls, policies, ops, seeds):
        rows.append(
            {
                "run_id": f"{ftl}-{policy}-{op}-{seed}",
                "ftl": ftl,
                "input": "rw=randwrite",
                "seed": seed,
                "config_fingerprint": f"{ftl}-{policy}-{op}-{seed}",
                "version": "0.1.0",
                "overprovisioning": op,
                "gc.policy": policy,
                "config": "hat-table4",
                "iops": 1000.0 * seed + op,  # a result that varies: never a line of its own
                "write_amplification": WA[ftl] + WA[policy] + 1 / op + seed / 100,
            }
        )
    return pd.DataFrame(rows)


WA = {"page": 1.0, "fast": 3.0, "greedy": 0.0, "fifo": 0.5}


def lines_of(fig):
    return {ln.get_label(): (list(ln.get_xdata()), list(ln.get_ydata())) for ln in fig.axes[0].get_lines()}


def test_wa_vs_op_draws_a_line_per_combination_of_swept_keys(tmp_path):
    df = sweep_table(["page", "fast"], ["greedy", "fifo"])
    assert param_columns(df.columns) == ["overprovisioning", "gc.policy"]
    path = tmp_path / "s.parquet"
    df.to_parquet(path, index=False)
    fig = P.render(path, tmp_path / "wa.png")  # what `ftlsim plot SWEEP.parquet` draws
    assert_png(tmp_path / "wa.png")
    lines = lines_of(fig)
    assert sorted(lines) == sorted(f"{f}, gc.policy={p}" for f in ("page", "fast") for p in ("greedy", "fifo"))
    for f, p in itertools.product(("page", "fast"), ("greedy", "fifo")):
        xs, ys = lines[f"{f}, gc.policy={p}"]
        assert xs == [0.1, 0.2, 0.3]
        # Mean over seeds 1 and 2 only: their seed / 100 terms average to 0.015.
        assert ys == pytest.approx([WA[f] + WA[p] + 1 / op + 0.015 for op in xs])
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == list(lines)

    # A single FTL still splits by policy (the example sweep's case), the FTL leading the label.
    lines = lines_of(P.wa_vs_op(sweep_table(["page"], ["greedy", "fifo"])))
    assert sorted(lines) == ["page, gc.policy=fifo", "page, gc.policy=greedy"]
    assert lines["page, gc.policy=fifo"][1] == pytest.approx([1.5 + 1 / op + 0.015 for op in (0.1, 0.2, 0.3)])

    # Another key on x: the old x becomes a label.
    lines = lines_of(P.wa_vs_op(df[df["ftl"] == "page"], x="gc.policy"))
    assert sorted(lines) == [f"page, overprovisioning={op}" for op in (0.1, 0.2, 0.3)]
    assert lines["page, overprovisioning=0.2"] == (["fifo", "greedy"], pytest.approx([6.515, 6.015]))


def test_wa_vs_op_keeps_labels_when_one_key_varies_and_honours_hue():
    lines = lines_of(P.wa_vs_op(sweep_table(["page", "fast"], ["greedy"])))
    assert sorted(lines) == ["fast", "page"]
    assert lines["fast"][1] == pytest.approx([3.0 + 1 / op + 0.015 for op in (0.1, 0.2, 0.3)])
    lines = lines_of(P.wa_vs_op(sweep_table(["page"], ["greedy"])))
    assert list(lines) == ["page"]
    # hue names the leading label columns, old style; swept keys left out of it still split lines.
    df = sweep_table(["page", "fast"], ["greedy", "fifo"])
    lines = lines_of(P.wa_vs_op(df, hue=("ftl", "gc.policy")))
    assert sorted(lines) == ["fast fifo", "fast greedy", "page fifo", "page greedy"]
    lines = lines_of(P.wa_vs_op(df, hue=("gc.policy",)))
    assert sorted(lines) == ["fifo, ftl=fast", "fifo, ftl=page", "greedy, ftl=fast", "greedy, ftl=page"]
    assert lines["fifo, ftl=fast"][1] == pytest.approx([3.5 + 1 / op + 0.015 for op in (0.1, 0.2, 0.3)])
    with pytest.raises(KeyError, match="nope"):
        P.wa_vs_op(df, hue=("nope",))


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
    # One panel per numeric column: hat's mean_us, trim-ftl's wa and erases, 2 configurations each.
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["hat: mean_us", "trim-ftl: wa", "trim-ftl: erases"]
    assert all(len(ax.patches) == 2 for ax in panels)
    assert_labelled(fig)
    fig = P.repro(d / "trim-ftl.csv", columns=["wa"])
    assert len(fig.axes[0].patches) == 2
    # Grouped by the labels other than ftl, coloured by FTL.
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["True", "False"]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["page", "fast"]
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


def assert_labelled(fig):
    """Every visible panel has a title, named axes, tick values and, with several series, a legend in bar order."""
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert panels
    for ax in panels:
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel(), ax
        assert [t.get_text() for t in ax.get_xticklabels() if t.get_text()], ax.get_title()
        assert [t.get_text() for t in ax.get_yticklabels() if t.get_text()], ax.get_title()
        legend = ax.get_legend()
        if legend is not None:
            series = [c.get_label() for c in ax.containers]
            assert [t.get_text() for t in legend.get_texts()] == series, ax.get_title()
    assert fig.get_suptitle().startswith("ftlsim repro")


@pytest.mark.parametrize("name", ["trim-ftl", "hat"])
def test_repro_folder_figures_are_labelled(cli, tmp_path, name):
    out = tmp_path / name
    run_cli(cli, "repro", name, "--quick", "--out", str(out))
    png = tmp_path / f"{name}.png"
    run_cli(cli, "plot", str(out), "-o", str(png))  # what a user draws from a repro folder
    assert_png(png, min_px=600)
    fig = P.repro(out)
    assert_labelled(fig)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    # The CSV is read, not the JSON of the same name with its nested fragments.
    assert all("{" not in t.get_text() for ax in fig.axes for t in ax.get_xticklabels()), titles
    if name == "hat":
        assert "hat: workload: mean_us" in titles and "hat: micro: iops" in titles
        mean = next(ax for ax in fig.axes if ax.get_title() == "hat: workload: mean_us")
        assert mean.get_xlabel() == "workload" and mean.get_legend() is not None
    else:
        assert "trim-ftl: n_pb" in titles and "trim-ftl: e_ftl" in titles
