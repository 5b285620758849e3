#!/usr/bin/env bash
# Instruction counts of the foundation benchmark's measured phase, which the
# machine's load does not change (wall-clock figures here vary up to 2x run
# to run). One command:
#   bash bench/instructions.sh [REQUESTS] [extra ftlsim args...]
# Runs the first REQUESTS (default 200,000) requests of the foundation trace
# on bench/page-8ch-16g.toml after fill + one random overwrite: once to save
# the preconditioned drive (bench-out/snapshots), then under
# `valgrind --tool=callgrind`, loading it. Prints `Simulation::run`
# inclusive: the measured phase alone. (The snapshot's load,
# `Simulation::precondition_cached`, is called beside it by `Job::run`, not
# inside it: do not subtract it.) Extra arguments go to `ftlsim run`, e.g.
# `--set cache.bytes=67108864` or `--ftl dac --set geometry.pages_per_block=128
# --set geometry.blocks_per_plane=2192`.
source "$(dirname "$0")/lib.sh"
command -v valgrind > /dev/null || { echo "bench/instructions.sh: needs valgrind" >&2; exit 1; }

n=${1:-200000}
shift || true
[ -f "$randwrite_1m" ] || gen_randwrite_1m
head -n $((n + 1)) "$randwrite_1m" > "$out/randwrite-head.csv"
args=(run -c bench/page-8ch-16g.toml --trace "$out/randwrite-head.csv" --mode closed --qd 32
      --precondition fill=1.0,overwrite=1.0 --snapshot-dir "$out/snapshots" -q "$@")
$bin "${args[@]}" > /dev/null
valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" $bin "${args[@]}" > /dev/null 2> "$out/callgrind.log"
callgrind_annotate --inclusive=yes "$out/callgrind.out" 2> /dev/null | python3 -c '
import re, sys
n = int(sys.argv[1])
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+) .*Simulation::run$", line.rstrip())
    if m:
        ir = int(m.group(1).replace(",", ""))
        print(f"measured phase (Simulation::run): {ir:,} instructions, {ir / n:,.0f} a request ({n:,} requests)")
        break
else:
    sys.exit("bench/instructions.sh: Simulation::run not found in the callgrind output")
' "$n"
