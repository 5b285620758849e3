#!/usr/bin/env python3
"""The hot code's footprint in the instruction cache, from callgrind.

    valgrind --tool=callgrind --dump-instr=yes --compress-pos=no \
        --compress-strings=no --callgrind-out-file=OUT target/release/ftlsim run ...
    python3 bench/hot-lines.py OUT [MIN_EXECUTIONS] [FUNCTIONS]

Counts the 64-byte lines of ftlsim's code holding an instruction executed at
least MIN_EXECUTIONS times (default 20,000: the foundation trace's first
50,000 requests run the host write's path ~50,000 times), the bytes of those
hot instructions, and how full their lines are, in all and for the
FUNCTIONS (default 15) with the most hot lines. The L1 instruction cache of
the machines this was measured on holds 512 lines (32 KiB); near that, hot
code spread over more lines costs more than its instruction count shows
(docs/benchmarks.md, session 65).
"""

import collections
import sys


def main():
    path = sys.argv[1]
    min_count = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
    shown = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    executed = collections.Counter()
    function_of = {}
    fn = ob = None
    skip = False
    with open(path) as f:
        for line in f:
            if skip:  # a call's line: its cost is the callee's, inclusive
                skip = False
            elif line.startswith("fn="):
                fn = line[3:].strip()
            elif line.startswith("ob="):
                ob = line[3:].strip()
            elif line.startswith("calls="):
                skip = True
            elif line.startswith("0x") and "ftlsim" in (ob or ""):
                parts = line.split()
                addr = int(parts[0], 16)
                executed[addr] += int(parts[2]) if len(parts) > 2 else 0
                function_of[addr] = fn
    if not executed:
        sys.exit(f"{path}: no instruction-level costs of ftlsim (run callgrind with --dump-instr=yes)")
    addrs = sorted(executed)
    hot_bytes = collections.Counter()
    hot_lines = collections.defaultdict(set)
    for i, a in enumerate(addrs):
        if executed[a] >= min_count:
            # An instruction's size: up to the next executed one (x86: at most 15).
            size = min(15, addrs[i + 1] - a) if i + 1 < len(addrs) else 4
            hot_bytes[function_of[a]] += size
            hot_lines[function_of[a]].add(a >> 6)
    lines = sum(len(v) for v in hot_lines.values())
    total = sum(hot_bytes.values())
    print(
        f"executed >= {min_count:,} times: {total / 1024:.1f} KiB of instructions in {lines} lines "
        f"({lines * 64 / 1024:.1f} KiB, {100 * total / max(1, lines * 64):.0f}% full), {len(hot_lines)} functions"
    )
    for f in sorted(hot_lines, key=lambda f: -len(hot_lines[f]))[:shown]:
        n = len(hot_lines[f])
        print(f"{n:5d} lines {hot_bytes[f]:6d} B ({100 * hot_bytes[f] / (n * 64):3.0f}% full)  {f[:110]}")


if __name__ == "__main__":
    main()
