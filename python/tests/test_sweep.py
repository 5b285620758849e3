"""Sweeps: the cross product as one table, on a local pool and on a real local Ray instance; resume."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pandas as pd
import pytest
from conftest import CONFIG, ROOT, SMALL, run_cli

import ftlsim

GRID = {"gc.policy": ["greedy", "fifo"], "overprovisioning": [0.1, 0.2, 0.3]}
WORKLOADS = ["rw=randwrite,bs=4k,ios=4000", "rw=randrw,bs=4k,ios=4000,trimmix=5"]
# The wall clock, memory, and whether a run made its drive's snapshot or loaded it.
UNEQUAL = ["wall_time_s", "peak_rss_bytes", "input.snapshot"]


def small_sweep(**kw) -> pd.DataFrame:
    return ftlsim.sweep(
        CONFIG, grid=GRID, workloads=WORKLOADS, overrides=SMALL, precondition="fill=1.0,overwrite=0.3", workers=2, **kw
    )


@pytest.fixture(scope="module")
def local(tmp_path_factory) -> tuple[pd.DataFrame, object]:
    path = tmp_path_factory.mktemp("sweep") / "s.parquet"
    return small_sweep(path=path), path


def test_local_sweep_is_the_cross_product(local):
    df, _ = local
    assert len(df) == 12 and df["run_id"].is_unique and df["config_fingerprint"].nunique() == 6
    for col in [
        "ftl",
        "input",
        "seed",
        "version",
        "gc.policy",
        "overprovisioning",
        "write_amplification",
        "latency_us.write.p99",
        "flash_programs_by_cause.gc",
        "input.host_mode",
    ]:
        assert col in df.columns, col
    assert "timeseries" not in df.columns
    combos = set(zip(df["input"], df["gc.policy"], df["overprovisioning"], strict=True))
    assert len(combos) == 12
    # More spare space, less write amplification (greedy, random writes).
    wa = df[(df["gc.policy"] == "greedy") & (df["input"] == WORKLOADS[0])].set_index("overprovisioning")
    assert wa.loc[0.1, "write_amplification"] > wa.loc[0.3, "write_amplification"]


def test_each_row_equals_a_single_run(local):
    df, _ = local
    row = df.iloc[7]
    r = ftlsim.run(
        CONFIG,
        workload=row["input"],
        precondition="fill=1.0,overwrite=0.3",
        overrides={**SMALL, "gc.policy": row["gc.policy"], "overprovisioning": row["overprovisioning"]},
    )
    assert r.summary["write_amplification"] == row["write_amplification"]
    assert r.summary["latency_us"]["all"]["p99"] == row["latency_us.all.p99"]


def test_ray_backend_gives_the_same_rows(local):
    df, _ = local
    ray_df = small_sweep(backend="ray")
    import ray

    assert not ray.is_initialized(), "a Ray instance the sweep started is shut down after it"
    pd.testing.assert_frame_equal(df.drop(columns=UNEQUAL), ray_df.drop(columns=UNEQUAL), check_exact=True)


def test_resume_skips_runs_already_in_the_file(local, tmp_path):
    df, path = local
    again = small_sweep(path=path)
    # Nothing re-ran: even the wall-clock times are the stored ones.
    pd.testing.assert_frame_equal(df, again)
    half = tmp_path / "half.parquet"
    df.iloc[:5].to_parquet(half, index=False)
    resumed = small_sweep(path=half)
    assert len(resumed) == 12 and list(resumed["run_id"]) == list(df["run_id"])
    pd.testing.assert_frame_equal(resumed.iloc[:5], df.iloc[:5])
    pd.testing.assert_frame_equal(resumed.drop(columns=UNEQUAL), df.drop(columns=UNEQUAL))
    assert len(pd.read_parquet(half)) == 12


def test_a_sweep_of_twelve_workloads_on_one_drive_preconditions_once(tmp_path, capfd):
    kinds = ("randwrite", "randread", "randrw")
    workloads = [f"rw={rw},bs={bs},ios=1500" for rw in kinds for bs in ("4k", "8k", "16k", "32k")]
    kw = {"workloads": workloads, "overrides": SMALL, "precondition": "fill=1.0,overwrite=0.3", "workers": 2}
    df = ftlsim.sweep(CONFIG, path=tmp_path / "s.parquet", **kw)
    err = capfd.readouterr().err
    assert "ftlsim: sweep: 12 runs; 1 preconditioned, 11 loaded" in err, err
    assert err.count("ftlsim: sweep [") == 12 and "[12/12]" in err, err
    assert sorted(df["input.snapshot"]) == ["loaded"] * 11 + ["saved"]
    assert len(list((tmp_path / "snapshots").glob("*.snap"))) == 1
    # The same rows as preconditioning every run.
    plain = ftlsim.sweep(CONFIG, snapshots=False, **kw)
    assert "12 runs; 12 preconditioned" in capfd.readouterr().err
    assert set(plain["input.snapshot"]) == {"none"}
    pd.testing.assert_frame_equal(df.drop(columns=UNEQUAL), plain.drop(columns=UNEQUAL), check_exact=True)


def test_sweep_cli_shares_snapshots_and_can_opt_out(tmp_path, cli):
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f'config = "{CONFIG}"\nworkloads = ["rw=randwrite,bs=4k,ios=1000", "rw=randread,bs=4k,ios=1000"]\n'
        'precondition = "fill=1.0"\nout = "s.csv"\n[set]\n"geometry.blocks_per_plane" = 64\n'
    )
    out = run_cli(cli, "sweep", str(spec))
    assert "2 runs; 1 preconditioned, 1 loaded" in out.stderr, out.stderr
    assert len(list((tmp_path / "snapshots").glob("*.snap"))) == 1
    out = run_cli(cli, "sweep", str(spec), "--out", str(tmp_path / "t.csv"), "--no-snapshots")
    assert "2 runs; 2 preconditioned" in out.stderr, out.stderr


def test_csv_table_and_seeds(tmp_path):
    df = ftlsim.sweep(
        CONFIG,
        workloads=["rw=randwrite,bs=4k,ios=2000"],
        seeds=[1, 2],
        overrides=SMALL,
        path=tmp_path / "s.csv",
        workers=1,
    )
    assert list(df["seed"]) == [1, 2] and len(pd.read_csv(tmp_path / "s.csv")) == 2


@pytest.mark.parametrize(
    ("kw", "key"),
    [
        ({"grid": {"seed": [1, 2]}}, "grid.seed"),
        ({"grid": {"gc.policy": "greedy"}}, "grid.gc.policy"),
        ({"grid": {"ftl": ["page"]}}, "grid.ftl"),
        ({"grid": {"config": ["page"]}}, "grid.config"),
        ({"workloads": []}, "inputs"),
        ({"backend": "spark"}, "backend"),
    ],
)
def test_bad_sweeps_name_the_key(kw, key):
    with pytest.raises(ftlsim.SweepError) as e:
        ftlsim.sweep(CONFIG, **{"workloads": WORKLOADS[:1], **kw})
    assert e.value.key == key


def test_bad_grid_value_fails_before_any_run():
    with pytest.raises(ftlsim.ConfigError) as e:
        ftlsim.sweep(CONFIG, grid={"gc.policy": ["greedy", "lru"]}, workloads=WORKLOADS[:1], overrides=SMALL)
    assert e.value.key == "gc.policy"


def readme_sweep_example() -> str:
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- sweep example -->\n```python\n", 1)[1]
    return block.split("```", 1)[0]


@pytest.mark.parametrize("how", ["script", "heredoc", "-c"])
def test_the_readme_sweep_example_runs_unchanged(tmp_path, how):
    code = readme_sweep_example()
    if how == "script":
        script = tmp_path / "sweep_example.py"
        script.write_text(code)
        cmd = [sys.executable, str(script)]
    elif how == "heredoc":
        cmd = ["bash", "-c", f"{shlex.quote(sys.executable)} - <<'EOF'\n{code}EOF\n"]
    else:
        cmd = [sys.executable, "-c", code]
    out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "BrokenProcessPool" not in out.stderr
    lines = out.stdout.splitlines()
    # A header and one row per grid point (2 x 2), with a write amplification above 1.
    assert len(lines) == 5 and "write_amplification" in lines[0], out.stdout
    assert all(float(line.split()[-1]) > 1.0 for line in lines[1:]), out.stdout
