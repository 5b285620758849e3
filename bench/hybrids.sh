#!/usr/bin/env bash
# Hybrid FTL speed (issue 3). One command:
#   bash bench/hybrids.sh
# block, bast and fast on the foundation benchmark's drive (bench/page-8ch-16g.toml:
# 8 channels, 16 GiB logical, 4 KiB pages, 256 pages per block) and random
# 4 KiB write trace (bench-out/randwrite-1m.csv, generated here exactly as
# bench/foundation.sh does), preconditioned by a sequential fill. Prints
# flash page operations (reads + programs) per wall-clock second, parsing
# included, and host requests per second. FTLSIM_BENCH_IOS=N uses the first
# N requests of the trace instead of all 1,000,000.
source "$(dirname "$0")/lib.sh"
trace=$randwrite_1m
[ -f "$trace" ] || gen_randwrite_1m
ios=${FTLSIM_BENCH_IOS:-1000000}
if [ "$ios" != 1000000 ]; then
  head -n $((ios + 1)) "$trace" > "$out/randwrite-$ios.csv"
  trace="$out/randwrite-$ios.csv"
fi

for ftl in block bast fast; do
  $bin run -c bench/page-8ch-16g.toml --ftl $ftl --trace "$trace" --mode closed --qd 32 \
      --precondition fill=1.0 --json "$out/$ftl-rand.json" -q > /dev/null
  field "$out/$ftl-rand.json" '"%-5s %d requests: flash page ops/s (wall): %.0f   requests/s: %.0f   WA %.1f   merges %s   wall %.1f s" % (ftl, requests, (flash_pages_read + flash_pages_programmed) / wall_time_s, requests / wall_time_s, write_amplification, merges, wall_time_s)'
done
