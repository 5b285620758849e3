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

[ -f "$randwrite_1m" ] || gen_randwrite_1m
for ftl in mu dac superblock; do
  $bin run -c bench/page-8ch-16g.toml --ftl "$ftl" --set geometry.pages_per_block=128 --set geometry.blocks_per_plane=2192 \
      --set ftl.superblock_blocks=64 --trace "$randwrite_1m" \
      --mode closed --qd 32 --precondition fill=1.0,overwrite=1.0 --snapshot-dir "$out/snapshots" --json "$out/$ftl-1m.json" -q > /dev/null
  field "$out/$ftl-1m.json" '"%-10s flash page ops/s (wall): %.0f   (%d reads + %d programs, mapping %d + %d)   requests/s %.0f   WA %.3f   wall %.3f s" % (ftl, (flash_pages_read + flash_pages_programmed) / wall_time_s, flash_pages_read, flash_pages_programmed, flash_reads_by_cause["mapping"], flash_programs_by_cause["mapping"], requests / wall_time_s, write_amplification, wall_time_s)'
done
