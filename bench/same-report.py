#!/usr/bin/env python3
"""Compares ftlsim JSON reports pairwise, ignoring what the machine sets.

    python3 bench/same-report.py A.json B.json [A2.json B2.json ...]

A speed-up must leave the simulation's results unchanged: every field of
the report but the run's wall time, peak RSS and each power cut's recovery
wall time must be equal. Prints the first differing fields of each pair;
exits 1 if any pair differs.
"""

import json
import sys

# Fields the machine sets, not the simulation.
MACHINE = {"wall_time_s", "peak_rss_bytes", "wall_ms"}


def diffs(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in MACHINE:
                continue
            if k not in a or k not in b:
                yield f"{path}.{k}: only in {'B' if k not in a else 'A'}"
            else:
                yield from diffs(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield f"{path}: {len(a)} against {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b, strict=False)):  # the common prefix
            yield from diffs(x, y, f"{path}[{i}]")
    elif a != b:
        yield f"{path}: {a!r} against {b!r}"


def main(paths):
    if not paths or len(paths) % 2:
        sys.exit("usage: same-report.py A.json B.json [A2.json B2.json ...]")
    bad = 0
    for a, b in zip(paths[::2], paths[1::2], strict=True):
        with open(a) as fa, open(b) as fb:
            found = list(diffs(json.load(fa), json.load(fb)))
        print(f"{a} vs {b}: {'same' if not found else f'{len(found)} differences'}")
        for d in found[:10]:
            print(f"  {d}")
        bad += bool(found)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
