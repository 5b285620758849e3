#!/usr/bin/env bash
# Two ftlsim builds' CPU time on one workload, run alternately (the speed
# work of issues 10 and 16: does a change make the simulator faster?). One
# command:
#   bash bench/alternate.sh BIN_A BIN_B [ROUNDS] [-- extra ftlsim run args]
# e.g. `bash bench/alternate.sh /tmp/ftlsim-before target/release/ftlsim 11
# -- --set cache.bytes=67108864`. Each build preconditions the bench drive
# (bench/page-8ch-16g.toml, fill=1.0,overwrite=1.0) once into a snapshot of
# its own (bench-out/alternate/, keyed by the binary's contents: builds may
# differ in snapshot format), then runs the workload from it ROUNDS times
# (default 11), A and B in turn, their order swapped every round. CPU is
# user + system time of the ftlsim process. Prints each build's minimum,
# first quartile and median, and the median over the rounds of B's time
# over A's (the two runs of a round share the machine's speed of the
# moment, which on a shared VM moves by 2x within minutes). Workload:
# FTLSIM_ALT_WORKLOAD, default 300,000 random 4 KiB writes at queue depth 32.
# Noise: on the 2-core Intel VM of sessions 65-71, a build against a copy of
# itself differed by 4-6% in these figures; smaller differences need
# instruction counts (bench/instructions.sh) instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
usage="usage: bash bench/alternate.sh BIN_A BIN_B [ROUNDS] [-- extra ftlsim run args]"
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
a=$1; b=$2; shift 2
rounds=11
if [ $# -gt 0 ] && [ "$1" != "--" ]; then rounds=$1; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
for x in "$a" "$b"; do
  [ -x "$x" ] || { echo "bench/alternate.sh: $x is not an executable ftlsim build" >&2; exit 2; }
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench/alternate.sh: ROUNDS must be a positive whole number, not '$rounds'" >&2; exit 2; }
workload=${FTLSIM_ALT_WORKLOAD:-rw=randwrite,bs=4k,ios=300000,seed=7,iodepth=32}
mkdir -p bench-out/alternate
echo "load before: $(uptime)"
python3 - "$a" "$b" "$rounds" "$workload" "$@" <<'PY'
import hashlib, statistics, subprocess, sys

sys.path.insert(0, "bench")
from cputime import cpu_seconds

a, b, rounds, workload, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]


def command(binary):
    digest = hashlib.sha256(open(binary, "rb").read()).hexdigest()[:16]
    return [binary, "run", "-c", "bench/page-8ch-16g.toml", "--workload", workload,
            "--precondition", "fill=1.0,overwrite=1.0", "--snapshot-dir", f"bench-out/alternate/{digest}",
            "-q", *extra]


cmds = {"A": command(a), "B": command(b)}
for cmd in cmds.values():
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)  # its snapshot, once
times = {"A": [], "B": []}
ratios = []
for i in range(rounds):
    order = ("A", "B") if i % 2 == 0 else ("B", "A")
    got = {k: cpu_seconds(cmds[k]) for k in order}
    for k in got:
        times[k].append(got[k])
    ratios.append(got["B"] / got["A"])
for k, binary in (("A", a), ("B", b)):
    t = sorted(times[k])
    print(f"{k} {binary}: CPU min {t[0]:.3f} s, q1 {t[len(t) // 4]:.3f}, median {statistics.median(t):.3f} "
          f"({rounds} runs)")
r = sorted(ratios)
print(f"B / A, round by round: median {statistics.median(r):.3f} (q1 {r[len(r) // 4]:.3f}, "
      f"q3 {r[(3 * len(r)) // 4]:.3f})")
PY
echo "load after: $(uptime)"
