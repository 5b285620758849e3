"""Times the CLI against ftlsim.run on one workload; see bench/python.sh."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import ftlsim

WORKLOAD = "rw=randwrite,bs=4k,ios=1000000,seed=7,iodepth=32"
PRECONDITION = "fill=1.0,overwrite=0.2"
RUNS = 5


def cli(exe: str, config: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [exe, "run", "-c", config, "--workload", WORKLOAD, "--precondition", PRECONDITION, "-q"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def python(config: str, **kw: object) -> float:
    start = time.perf_counter()
    r = ftlsim.run(config, workload=WORKLOAD, precondition=PRECONDITION, **kw)
    took = time.perf_counter() - start
    assert r.summary["requests"] == 1_000_000
    return took


def python_fresh(config: str) -> float:
    """ftlsim.run timed around the call, in a new interpreter (as a script runs it once)."""
    code = (
        "import time, ftlsim; t = time.perf_counter(); "
        f"ftlsim.run({config!r}, workload={WORKLOAD!r}, precondition={PRECONDITION!r}, "
        "keep_latencies=False, window_ms=0); print(time.perf_counter() - t)"
    )
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)


def main() -> None:
    exe, config = sys.argv[1:3]
    times: dict[str, list[float]] = {
        "cli": [],
        "python fresh process": [],
        "python (CLI settings)": [],
        "python (defaults)": [],
    }
    for _ in range(RUNS):
        times["cli"].append(cli(exe, config))
        times["python fresh process"].append(python_fresh(config))
        times["python (CLI settings)"].append(python(config, keep_latencies=False, window_ms=0))
        times["python (defaults)"].append(python(config))
    # The minimum is the run least disturbed by other work on the machine.
    base = min(times["cli"])
    for name, t in times.items():
        runs = " ".join(f"{x:.2f}" for x in t)
        best, med = min(t), statistics.median(t)
        print(
            f"{name:<22} min {best:5.2f} s  median {med:5.2f} s  ({runs})  min {100 * (best / base - 1):+5.1f}% vs CLI"
        )


if __name__ == "__main__":
    main()
