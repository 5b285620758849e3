#!/usr/bin/env bash
# What bounds the foundation benchmark (issue 16): the bare FTL work floor
# beside ftlsim. One command:
#   bash bench/floor.sh
# crates/ftlsim/examples/gc_floor.rs does only what any page FTL with greedy
# GC must do per write (forward map, invalid page, allocation; per GC copy
# the victim's OOB, the live page's map entry, valid counts), with no timing
# model, on the foundation drive (bench/page-8ch-16g.toml) and trace: a
# sequential fill, one random overwrite of the logical space, then the
# trace's 1M writes. Alternating with it, ftlsim's measured phase of the same
# trace (loading the preconditioned snapshot) and ftlsim's preconditioning
# alone (fill=1.0,overwrite=1.0). Wall times on a shared machine vary up to
# 2x run to run: each point runs REPEAT times (FTLSIM_BENCH_REPEAT, default
# 3), alternating, and the median and range are printed.
source "$(dirname "$0")/lib.sh"
cargo build --release -q -p ftlsim --example gc_floor
floor=target/release/examples/gc_floor
repeat=${FTLSIM_BENCH_REPEAT:-3}
[ -f "$randwrite_1m" ] || gen_randwrite_1m
run=(run -c bench/page-8ch-16g.toml --trace "$randwrite_1m" --mode closed --qd 32
     --precondition fill=1.0,overwrite=1.0 --snapshot-dir "$out/snapshots" -q)
$bin "${run[@]}" > /dev/null   # the snapshot, once
echo "load before: $(uptime)"
for i in $(seq "$repeat"); do
  $floor bench/page-8ch-16g.toml "$randwrite_1m" > "$out/floor-$i.txt"
  $bin "${run[@]}" --json "$out/floor-ftlsim-$i.json" > /dev/null
  /usr/bin/time -f "%e" -o "$out/floor-pre-$i.txt" \
    $bin run -c bench/page-8ch-16g.toml --workload rw=randwrite,bs=4k,ios=1,seed=7 \
    --precondition fill=1.0,overwrite=1.0 -q > /dev/null
done
echo "load after: $(uptime)"
python3 - "$out" "$repeat" <<'PY'
import json, re, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
floor = [open(f"{out}/floor-{i}.txt").read() for i in range(1, n + 1)]
def nums(pattern):
    return [float(re.search(pattern, f).group(1)) for f in floor]
def show(label, xs, unit):
    xs = sorted(xs)
    print(f"{label:<52} median {statistics.median(xs):8.3f} {unit} (range {xs[0]:.3f}-{xs[-1]:.3f}, {n} runs)")
measured = nums(r"measured ([\d.]+) s")
pre = [a + b for a, b in zip(nums(r"fill ([\d.]+) s"), nums(r"overwrite ([\d.]+) s"))]
ftl = [json.load(open(f"{out}/floor-ftlsim-{i}.json")) for i in range(1, n + 1)]
ftl_measured = [r["wall_time_s"] for r in ftl]
ftl_pre = [float(open(f"{out}/floor-pre-{i}.txt").read().split()[-1]) for i in range(1, n + 1)]
print(floor[0].strip())
show("floor: measured phase (1M requests)", measured, "s")
show("ftlsim: measured phase (1M requests, from snapshot)", ftl_measured, "s")
show("floor: fill + one random overwrite", pre, "s")
show("ftlsim: preconditioning alone (whole process)", ftl_pre, "s")
m, fm = statistics.median(measured), statistics.median(ftl_measured)
p, fp = statistics.median(pre), statistics.median(ftl_pre)
print(f"ftlsim / floor: measured phase {fm / m:.1f}x, preconditioning {fp / p:.1f}x; "
      f"the floor all-in {1e6 / (m + p):,.0f} requests/s, ftlsim all-in {1e6 / (fm + fp):,.0f} "
      f"(issue 16's goals: measured 3,000,000, all-in 1,300,000)")
PY
