"""Sweep backends compared: a thread pool, a spawned process pool, and serial runs
(README, Python section). Run with `.venv/bin/python bench/sweep_backends.py`."""

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

from ftlsim import _sweep


def main():
    specs = _sweep.plan(
        "hat-table4",
        {"gc.policy": ["greedy", "fifo", "random", "cost-benefit"]},
        [None],
        [("workload", "rw=randwrite,bs=4k,ios=300000")],
        [None],
        "fill=1.0,overwrite=0.5",
        {"geometry.blocks_per_plane": 64},
        None,
    )
    for name, mk in [
        ("threads", lambda: ThreadPoolExecutor(2)),
        ("processes", lambda: ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))),
        ("threads", lambda: ThreadPoolExecutor(2)),
        ("processes", lambda: ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))),
    ]:
        t = time.monotonic()
        with mk() as pool:
            rows = list(pool.map(_sweep.run_one, specs))
        print(name, f"{time.monotonic() - t:.2f} s", len(rows), flush=True)
    t = time.monotonic()
    for s in specs:
        _sweep.run_one(s)
    print("serial", f"{time.monotonic() - t:.2f} s")


if __name__ == "__main__":
    main()
