"""ftlsim.run from Python reports exactly what `ftlsim run --json` reports for the same inputs."""

from __future__ import annotations

import csv
import json

import pytest
from conftest import CONFIG, PRECONDITION, SMALL, WORKLOAD, real, run_cli, sample

import ftlsim

#: Measurements of the process, not of the simulation; and the overrides, which
#: each front end reports as it was given them (`--set K=V` and host flags vs dict entries).
UNEQUAL = ("wall_time_s", "peak_rss_bytes", "overrides")


def cli_report(exe, tmp_path, *args):
    out = tmp_path / "r.json"
    ts = tmp_path / "ts.csv"
    sets = [a for k, v in SMALL.items() for a in ("--set", f"{k}={v}")]
    run_cli(exe, "run", "-c", CONFIG, *sets, *args, "--json", str(out), "--timeseries", str(ts), "-q")
    with open(ts) as f:
        rows = list(csv.DictReader(f))
    return json.loads(out.read_text()), rows


def same(py: dict, cli: dict) -> None:
    for k in UNEQUAL:
        assert k in py and k in cli
    a = {k: v for k, v in py.items() if k not in UNEQUAL}
    b = {k: v for k, v in cli.items() if k not in UNEQUAL}
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == b[k], k
    small = [f"{k}={v}" for k, v in SMALL.items()]
    assert all(s in py["overrides"] and s in cli["overrides"] for s in small), (py["overrides"], cli["overrides"])


@pytest.mark.parametrize(
    "case",
    [
        {"workload": WORKLOAD, "precondition": PRECONDITION, "seed": 11},
        {
            "workload": "rw=randrw,bs=4k-16k,ios=5000,trimmix=10,rate=20k,arrival=poisson",
            "seed": 2,
            "overrides": {"gc.policy": "cost-benefit"},
        },
    ],
)
def test_workload_run_equals_cli_json(cli, tmp_path, case):
    args = ["--workload", case["workload"], "--seed", str(case["seed"])]
    if "precondition" in case:
        args += ["--precondition", case["precondition"]]
    for k, v in case.get("overrides", {}).items():
        args += ["--set", f"{k}={v}"]
    want, ts_rows = cli_report(cli, tmp_path, *args)
    got = ftlsim.run(
        CONFIG, overrides={**SMALL, **case.get("overrides", {})}, **{k: v for k, v in case.items() if k != "overrides"}
    ).summary
    same(got, want)
    assert got["timeseries"] and len(got["timeseries"]) == len(ts_rows)
    assert [w["requests"] for w in got["timeseries"]] == [int(r["requests"]) for r in ts_rows]


@pytest.mark.parametrize(
    "trace,requests",
    [
        pytest.param(lambda: sample("msr_csv/msr-sample.csv"), 6, id="kept"),
        pytest.param(lambda: real("msr_csv/msr-cambridge1-sample.csv"), 1000, id="real"),
    ],
)
def test_trace_run_equals_cli_json(cli, tmp_path, trace, requests):
    trace = str(trace())
    want, _ = cli_report(cli, tmp_path, "--trace", trace, "--out-of-range", "scale", "--mode", "closed", "--qd", "8")
    got = ftlsim.run(
        CONFIG,
        trace=trace,
        overrides={**SMALL, "host.out_of_range": "scale", "host.mode": "closed", "host.queue_depth": 8},
    ).summary
    same(got, want)
    assert got["input"]["out_of_range_policy"] == "scale" and got["requests"] == requests
