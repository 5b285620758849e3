#!/usr/bin/env bash
# DFTL and HAT speed (issue 4). One command:
#   bash bench/dftl-hat.sh
# The foundation's random-write benchmark (1M random 4 KiB writes from a CSV
# trace, 16 GiB logical, 8 channels, preconditioned: bench/foundation.sh,
# step 1) with --ftl dftl and --ftl hat and the default 128 KiB mapping
# cache: flash page operations (reads + programs of every cause, mapping
# pages included) per wall-clock second. Page is run too, for reference.
source "$(dirname "$0")/lib.sh"


[ -f "$randwrite_1m" ] || gen_randwrite_1m
for ftl in page dftl hat; do
  $bin run -c bench/page-8ch-16g.toml --ftl "$ftl" --set ftl.cache_bytes=131072 --trace "$randwrite_1m" \
      --mode closed --qd 32 --precondition fill=1.0,overwrite=1.0 --json "$out/$ftl-1m.json" -q > /dev/null
  field "$out/$ftl-1m.json" '"%-4s flash page ops/s (wall): %.0f   (%d reads + %d programs, mapping %d + %d)   requests/s %.0f   hit ratio %s   WA %.3f   wall %.3f s" % (ftl, (flash_pages_read + flash_pages_programmed) / wall_time_s, flash_pages_read, flash_pages_programmed, flash_reads_by_cause["mapping"], flash_programs_by_cause["mapping"], requests / wall_time_s, mapping_hit_ratio, write_amplification, wall_time_s)'
done
