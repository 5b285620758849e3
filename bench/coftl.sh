#!/usr/bin/env bash
# COFTL speed (issue 12). One command:
#   bash bench/coftl.sh
# The foundation's random-write benchmark (random 4 KiB writes from its CSV
# trace, 16 GiB logical, 8 channels, closed loop QD 32, preconditioned by a
# fill and one random overwrite: bench/foundation.sh, step 1) with --ftl
# coftl. Figure: flash page operations (reads + programs of every cause,
# summaries and log versions included) per wall-clock second of the
# measured phase. COFTL merges a whole virtual block for about every host
# write here (WA ~1,900), so the full 1M-request trace takes over half an
# hour; FTLSIM_BENCH_REQUESTS (default 200000) takes its first N requests.
# Preconditioning the 16 GiB drive takes ~8.5 min on the project's slower
# machine; the drive is saved in bench-out/snapshots (--snapshot-dir) and
# later runs of the same build load it in seconds.
source "$(dirname "$0")/lib.sh"

[ -f "$randwrite_1m" ] || gen_randwrite_1m
n=${FTLSIM_BENCH_REQUESTS:-200000}
head -n $((n + 1)) "$randwrite_1m" > "$out/randwrite-coftl.csv"
$bin run -c bench/page-8ch-16g.toml --ftl coftl --trace "$out/randwrite-coftl.csv" \
    --mode closed --qd 32 --precondition fill=1.0,overwrite=1.0 --snapshot-dir "$out/snapshots" \
    --json "$out/coftl.json" -q > /dev/null
field "$out/coftl.json" '"coftl      flash page ops/s (wall): %.0f   (%d reads + %d programs, mapping %d + %d)   requests/s %.0f   WA %.1f   wall %.1f s" % ((flash_pages_read + flash_pages_programmed) / wall_time_s, flash_pages_read, flash_pages_programmed, flash_reads_by_cause["mapping"], flash_programs_by_cause["mapping"], requests / wall_time_s, write_amplification, wall_time_s)'
