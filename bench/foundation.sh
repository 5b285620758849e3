#!/usr/bin/env bash
# Foundation benchmark (issue: page FTL speed and memory). One command:
#   bash bench/foundation.sh
# 1. 1,000,000 random 4 KiB writes from a text trace over a 16 GiB logical
#    space, 8-channel page-mapped drive, preconditioned so GC runs:
#    host requests per wall-clock second (parsing included) and flash page
#    operations (reads + programs) per second; at 7% over-provisioning
#    (WA ~8), again at 28% (WA ~2.6), and at 7% behind a 64 MiB write
#    buffer. Preemptible GC and dynamic allocation are the defaults.
# 2. Bytes of peak RSS per physical page on a 1 TiB-raw drive (no payloads).
# 3. Peak RSS of a 50M-request gzip trace vs the 1M one (constant memory).
# Set FTLSIM_BENCH_LONG=0 to skip step 3 (it writes a ~400 MB file), and
# FTLSIM_BENCH_REPEAT=N to change the runs per speed point (default 5).
source "$(dirname "$0")/lib.sh"


# Each point runs REPEAT times (default 5): wall-clock speed on a shared
# machine varies run to run, so the median is the figure and the range is shown.
repeat=${FTLSIM_BENCH_REPEAT:-5}
speed() {  # speed NAME ARGS... : median requests/s and flash page ops/s over $repeat runs
  local name=$1; shift
  for i in $(seq "$repeat"); do
    $bin run -c bench/page-8ch-16g.toml --trace "$randwrite_1m" --mode closed --qd 32 \
        --precondition fill=1.0,overwrite=1.0 --json "$out/$name-$i.json" -q "$@" > /dev/null
  done
  python3 bench/runs.py "$out" "$name" "$repeat" "requests/s (wall)" "requests / wall_time_s" \
      "f'flash page ops/s: median {median(\"(flash_pages_read + flash_pages_programmed) / wall_time_s\"):,.0f}   WA {write_amplification:.3f}   GC invocations {gc_invocations}'"
}

echo "== 1. page FTL, 1M random 4 KiB writes, 16 GiB logical, 8 channels, 7% over-provisioning"
gen_randwrite_1m
speed page-1m

echo "== 1b. the same at 28% over-provisioning (same 16 GiB logical space, more flash: lower WA)"
speed page-1m-op28 --set overprovisioning=0.28 --set geometry.blocks_per_plane=1312

echo "== 1c. 7% again with a 64 MiB write buffer: the realism mechanisms all on (buffer, preemptible GC, dynamic allocation)"
speed page-1m-buffer --set cache.bytes=67108864

echo "== 2. memory: 1 TiB raw drive, 1M random writes"
$bin run -c bench/raw-1tib.toml --workload rw=randwrite,bs=4k,ios=1000000,seed=7,iodepth=32 \
    --json "$out/raw-1tib.json" -q > /dev/null
field "$out/raw-1tib.json" '"peak RSS %.2f GiB = %.2f bytes per physical page" % (peak_rss_bytes / 2**30, peak_rss_bytes / (physical_bytes / 4096))'

if [ "${FTLSIM_BENCH_LONG:-1}" != 0 ]; then
  echo "== 3. constant memory: 50M-request gzip trace vs 1M"
  [ -f "$out/randwrite-50m.csv.gz" ] || \
    $bin gen -c bench/page-8ch-16g.toml --workload rw=randwrite,bs=4k,ios=50000000,seed=7 -o "$out/randwrite-50m.csv.gz"
  $bin run -c bench/page-8ch-16g.toml --trace "$out/randwrite-50m.csv.gz" --mode closed --qd 32 \
      --json "$out/page-50m.json" -q > /dev/null
  $bin run -c bench/page-8ch-16g.toml --trace "$randwrite_1m" --mode closed --qd 32 \
      --json "$out/page-1m-noprecond.json" -q > /dev/null
  a=$(field "$out/page-1m-noprecond.json" 'peak_rss_bytes')
  b=$(field "$out/page-50m.json" 'peak_rss_bytes')
  field "$out/page-50m.json" '"50M requests: %.0f requests/s, wall %.1f s" % (requests / wall_time_s, wall_time_s)'
  python3 -c "print('peak RSS 1M: %.1f MiB   50M: %.1f MiB   ratio %.3f' % ($a/2**20, $b/2**20, $b/$a))"
fi
