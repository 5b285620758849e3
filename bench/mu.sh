#!/usr/bin/env bash
# μ-FTL, DAC and superblock speed (issue 13). One command:
#   bash bench/mu.sh
# The foundation's random-write benchmark (1M random 4 KiB writes from a CSV
# trace, 16 GiB logical, 8 channels, closed loop QD 32, preconditioned:
# bench/foundation.sh, step 1) with --ftl mu, dac and superblock. The drive
# has 128-page blocks here (2,192 per plane, the same capacity), since
# μ-FTL's 7-bit extent length addresses at most 128 pages per block;
# superblocks are 64 blocks. Figure: flash page operations (reads +
# programs of every cause, μ-Tree pages included) per wall-clock second of
# the measured phase. Each FTL's preconditioned drive is saved in
# bench-out/snapshots (--snapshot-dir): later runs of the same build load it.
source "$(dirname "$0")/lib.sh"

# Each FTL runs REPEAT times (FTLSIM_BENCH_REPEAT, default 3): wall-clock
# speed on a shared machine varies run to run (mu by up to 5% on an idle
# one), so the median is the figure and the range is shown. The first run
# of a build preconditions and saves its snapshot; the rest load it.
repeat=${FTLSIM_BENCH_REPEAT:-3}
[ -f "$randwrite_1m" ] || gen_randwrite_1m
for ftl in mu dac superblock; do
  for i in $(seq "$repeat"); do
    $bin run -c bench/page-8ch-16g.toml --ftl "$ftl" --set geometry.pages_per_block=128 --set geometry.blocks_per_plane=2192 \
        --set ftl.superblock_blocks=64 --trace "$randwrite_1m" \
        --mode closed --qd 32 --precondition fill=1.0,overwrite=1.0 --snapshot-dir "$out/snapshots" --json "$out/$ftl-1m-$i.json" -q > /dev/null
  done
  python3 bench/runs.py "$out" "$ftl-1m" "$repeat" "$(printf '%-10s flash page ops/s (wall)' "$ftl")" \
      "(flash_pages_read + flash_pages_programmed) / wall_time_s" \
      "f'({flash_pages_read} reads + {flash_pages_programmed} programs, mapping {flash_reads_by_cause[\"mapping\"]} + {flash_programs_by_cause[\"mapping\"]})   WA {write_amplification:.3f}'"
done
