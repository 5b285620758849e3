"""ftlsim.run from Python: results, frames, configs, determinism, Ctrl-C."""

from __future__ import annotations

import os
import signal
import threading
import time
import tomllib

import numpy as np
import pandas as pd
import polars as pl
import pytest
from conftest import CONFIG, PRECONDITION, SMALL, WORKLOAD, sample

import ftlsim


def small_run(**kw):
    args = {"workload": WORKLOAD, "precondition": PRECONDITION, "overrides": SMALL, "seed": 3}
    return ftlsim.run(CONFIG, **{**args, **kw})


@pytest.fixture(scope="module")
def result() -> ftlsim.Result:
    return small_run(workload="rw=randrw,bs=4k,ios=20000,trimmix=5,iodepth=16")


def test_lists_name_what_exists():
    assert "hat-table4" in ftlsim.presets() and "page" in ftlsim.ftls()
    assert {"msr", "spc", "blkparse", "csv"} <= set(ftlsim.formats())
    assert ftlsim.__version__.count(".") == 2


def test_summary_is_the_report(result):
    s = result.summary
    assert s["ftl"] == "page" and s["config"] == "hat-table4" and s["seed"] == 3
    assert s["requests"] == 20000 == s["reads"] + s["writes"] + s["trims"]
    assert s["input"]["host_mode"] == "closed" and s["input"]["queue_depth"] == 16
    assert s["gc_invocations"] > 0 and s["write_amplification"] > 1.0
    assert "WA=" in repr(result)


def test_latencies_are_numpy_per_op_and_match_the_summary(result):
    lat = result.latencies()
    s = result.summary
    assert set(lat) == {"read", "write", "trim", "flush"}
    for op in ("read", "write", "trim"):
        a = lat[op]
        assert isinstance(a, np.ndarray) and a.dtype == np.float64
        assert len(a) == s["latency_us"][op]["count"] == s[f"{op}s"]
        assert a.max() == pytest.approx(s["latency_us"][op]["max"], rel=1e-12)
        assert a.mean() == pytest.approx(s["latency_us"][op]["mean"], rel=1e-9)
        # The report's p99 is a recorded value's HDR bucket (3 digits); numpy
        # interpolates between neighbours, which on a sparse tail (1,000 TRIMs)
        # can be tens of µs apart: the p99 lies between them.
        p99, tol = s["latency_us"][op]["p99"], 0.002 * s["latency_us"][op]["p99"] + 1
        lo, hi = np.percentile(a, 99, method="lower"), np.percentile(a, 99, method="higher")
        assert lo - tol <= p99 <= hi + tol
    ns = result.latencies(unit="ns")["write"]
    assert ns.dtype == np.uint64 and np.array_equal(ns / 1000.0, lat["write"])


def test_latencies_off_say_how_to_turn_them_on():
    r = small_run(keep_latencies=False)
    with pytest.raises(ValueError, match="keep_latencies=True"):
        r.latencies()


def test_timeseries_frames(result):
    df = result.timeseries()
    assert isinstance(df, pd.DataFrame) and len(df) == len(result.summary["timeseries"]) > 3
    assert df["requests"].sum() == 20000
    assert df["blocks_erased"].sum() == result.summary["blocks_erased"]
    assert np.all(np.diff(df["start_s"]) > 0)
    pdf = result.timeseries(backend="polars")
    assert isinstance(pdf, pl.DataFrame) and pdf.columns == list(df.columns) and pdf.height == len(df)
    assert small_run(window_ms=0).timeseries().empty


def test_erase_counts_with_coordinates(result):
    df = result.erase_counts()
    # 4 channels x 1 chip x 4 dies x 4 planes x 64 blocks
    assert len(df) == 4 * 4 * 4 * 64
    assert list(df.columns) == ["channel", "chip", "die", "plane", "block", "erase_count"]
    assert df.groupby(["channel", "chip", "die", "plane"]).size().eq(64).all()
    assert df["erase_count"].max() == result.summary["erase_count"]["max"]
    assert df["erase_count"].mean() == pytest.approx(result.summary["erase_count"]["mean"])
    assert isinstance(result.erase_counts(backend="polars"), pl.DataFrame)
    with pytest.raises(ValueError, match="pandas"):
        result.erase_counts(backend="arrow")


def test_config_from_dict_and_from_toml_path_equal_the_preset(tmp_path):
    text = ftlsim.resolve_config(CONFIG, SMALL)
    # Keys whose defaults depend on others are shown resolved, as comments.
    assert "\n# gc.debt = " in text
    as_dict = tomllib.loads(text)
    path = tmp_path / "drive.toml"
    path.write_text(text)
    # The overrides differ (the file holds what SMALL set), the resolved config does not.
    strip = ("wall_time_s", "peak_rss_bytes", "overrides")
    want = {k: v for k, v in small_run().summary.items() if k not in strip}
    for config in (as_dict, path, str(path)):
        got = ftlsim.run(config, workload=WORKLOAD, precondition=PRECONDITION, seed=3).summary
        assert {k: v for k, v in got.items() if k not in strip} == want


def test_runs_are_deterministic_and_seeded():
    a, b = small_run().summary, small_run().summary
    c = small_run(seed=4).summary
    for k in ("write_amplification", "latency_us", "gc_pages_copied", "timeseries"):
        assert a[k] == b[k]
    assert a["latency_us"] != c["latency_us"]


def test_trace_input_and_overrides_as_strings():
    r = ftlsim.run(
        CONFIG,
        trace=sample("msr_csv/msr-sample.csv"),
        overrides=["geometry.blocks_per_plane=64", "host.out_of_range=wrap"],
    )
    assert r.summary["requests"] == 6 and r.summary["input"]["format"] == "msr"
    assert r.summary["input"]["format_detected"] is True


def test_precondition_as_dict_equals_string():
    a = small_run(precondition={"fill": 1.0, "overwrite": 0.5}).summary
    assert a["input"]["precondition"] == "fill=1,overwrite=0.5,mode=fast"
    assert a["write_amplification"] == small_run().summary["write_amplification"]


def test_functional_preconditioning_runs_or_says_why_not():
    functional = {"fill": 1.0, "overwrite": 0.5, "mode": "functional"}
    part = {**SMALL, "geometry.page_size": 8192, "ftl.map_unit_bytes": 2048}
    with pytest.raises(ftlsim.WorkloadError, match=r"precondition\.mode.*2048-byte mapping units.*use mode=fast"):
        small_run(precondition=functional, overrides=part)
    with pytest.raises(ftlsim.WorkloadError, match=r"precondition\.mode.*'hat' FTL"):
        small_run(precondition=functional, ftl="hat")
    # The preset's 2 KiB pages, overwritten two at a time, and 4 KiB pages.
    for overrides in (SMALL, {**SMALL, "geometry.page_size": 4096}):
        r = small_run(precondition=functional, overrides=overrides).summary
        assert r["input"]["precondition"] == "fill=1,overwrite=0.5,mode=functional"
        assert r["gc_pages_copied"] > 0


def test_ctrl_c_stops_a_long_run_promptly():
    # 20M requests would take minutes; SIGINT after 0.5 s must end it within a second or so.
    # A background job (`nohup ./scripts/test &`) starts with SIGINT ignored, and
    # Python then installs no handler: install the one an interactive session has.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            ftlsim.run(CONFIG, workload="rw=randwrite,bs=4k,ios=20000000", overrides=SMALL)
    finally:
        timer.join()
        signal.signal(signal.SIGINT, previous)
    elapsed = time.monotonic() - start
    assert 0.5 <= elapsed < 3.0, elapsed


def test_gil_is_released_during_a_run():
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    t = threading.Thread(target=tick)
    t.start()
    start = time.monotonic()
    # Long enough to see the ticker run many times however fast the simulator gets.
    ios = 200_000
    while True:
        small_run(workload=f"rw=randwrite,bs=4k,ios={ios}")
        took = time.monotonic() - start
        if took > 0.2:
            break
        ios *= 2
    stop.set()
    t.join()
    during = [x for x in ticks if start < x < start + took]
    # A held GIL would freeze the ticker for the whole run.
    assert took > 0.2 and len(during) >= took / 0.01 / 4, (took, len(during))


def test_snapshot_dir_loads_the_preconditioned_drive(tmp_path):
    first = small_run(snapshot_dir=tmp_path)
    again = small_run(snapshot_dir=tmp_path)
    plain = small_run()
    said = [r.summary["input"].pop("snapshot") for r in (first, again, plain)]
    assert said == ["saved", "loaded", "none"]
    assert len(list(tmp_path.glob("*.snap"))) == 1
    for r in (first, again, plain):
        for k in ("wall_time_s", "peak_rss_bytes"):
            r.summary.pop(k)
    assert first.summary == plain.summary and again.summary == plain.summary
    assert np.array_equal(again.latencies()["write"], plain.latencies()["write"])
