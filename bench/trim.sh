#!/usr/bin/env bash
# TRIM-heavy replay speed (issue 14). One command:
#   bash bench/trim.sh
# Generates the file-deletion workload (rw=delete with churn: every file
# deleted, one TRIM per extent, is replaced by a new one; 1,000,000
# commands, about half of them TRIMs; files of 4 to 16 KiB) on the foundation benchmark's drive
# (bench/page-8ch-16g.toml) as a native CSV trace, then replays it with the
# `page` FTL closed-loop at queue depth 32, once as ext4 sends TRIMs (one
# range per command) and once batched up to 64 ranges (--trim-batch 64).
# Prints host commands per wall-clock second, parsing included.
# FTLSIM_BENCH_IOS=N generates N commands instead.
source "$(dirname "$0")/lib.sh"
ios=${FTLSIM_BENCH_IOS:-1000000}
trace="$out/delete-4k16k-$ios.csv"
spec="rw=delete,files=20000,filesize=4k-16k,bs=16k,frag=25,recreate=1,ios=$ios,seed=7"
[ -f "$trace" ] || $bin gen -c bench/page-8ch-16g.toml --workload "$spec" -o "$trace"

for batch in 1 64; do
  $bin run -c bench/page-8ch-16g.toml --ftl page --trace "$trace" --mode closed --qd 32 \
      --trim-batch $batch --json "$out/trim-batch$batch.json" -q > /dev/null
  field "$out/trim-batch$batch.json" '"page, --trim-batch %-2d %d commands (%d TRIMs of %d ranges): %.0f host commands/s (wall %.2f s)" % (resolved_config["host"]["trim_batch"], requests, trims, trim_ranges, requests / wall_time_s, wall_time_s)'
done
