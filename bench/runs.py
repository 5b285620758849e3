#!/usr/bin/env python3
"""Summarizes one benchmark point's repeated runs (bench/foundation.sh, bench/mu.sh).

    python3 bench/runs.py OUT NAME N LABEL RATE DETAIL

Reads OUT/NAME-1.json .. OUT/NAME-N.json, checks that the runs simulated
the same thing (equal flash page counts and WA: only the wall time may
differ), and prints one line:

    LABEL: median M (range LO-HI, N runs)   DETAIL

RATE and DETAIL are Python expressions over a report's fields, as
bench/lib.sh's `field` takes: RATE is evaluated on every run (wall-clock
speed varies run to run on a shared machine, so the median is the figure
and the range is shown), DETAIL on the first, where `median(EXPR)` gives
another expression's median over the runs.
"""

import json
import statistics
import sys
from pathlib import Path

out, name, n, label, rate, detail = sys.argv[1:7]
runs = [json.loads(Path(f"{out}/{name}-{i}.json").read_text()) for i in range(1, int(n) + 1)]
same = ("flash_pages_read", "flash_pages_programmed", "write_amplification")
first = runs[0]
assert all(all(r[k] == first[k] for k in same) for r in runs), f"{name}: runs differ: not deterministic"


def median(expr):
    return statistics.median(eval(expr, {}, r) for r in runs)


rates = sorted(eval(rate, {}, r) for r in runs)
tail = eval(detail, {"median": median}, first)
print(f"{label}: median {statistics.median(rates):,.0f} (range {rates[0]:,.0f}-{rates[-1]:,.0f}, {n} runs)   {tail}")
