#!/usr/bin/env bash
# A profile-guided build of the CLI (PGO), for the speed benchmarks:
#   bash bench/pgo.sh                  # builds target/pgo/use/release/ftlsim
#   FTLSIM_PGO=1 bash bench/mu.sh      # any bench script, with that build
# Builds an instrumented binary, runs it on a training set (below), merges
# the counts with the llvm-profdata of rustc's own LLVM (`rustup component
# add llvm-tools`) and builds again with them. Reports are the same as the
# default build's (only code layout and branch order change); the speed is
# not: on 2026-11-29 the foundation's benchmark ran 16% faster (28% OP 27%,
# buffered 29%) and mu's 13-16% (docs/benchmarks.md, "Profile-guided build").
#
# The training set is not the benchmarks' runs: its own trace (seed 11, not
# the benchmark trace's 7), smaller drives for the FTLs whose
# preconditioning is slow, and a few runs of the other FTLs and of reads,
# so the profile covers the simulator rather than one command line. It
# takes about a minute on top of the two builds (under three minutes in all
# from scratch on the project's 2-core machine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=bench-out
mkdir -p "$out"
pgo=target/pgo
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  echo "bench/pgo.sh: $profdata not found: PGO needs the llvm-profdata of rustc's own LLVM (rustup component add llvm-tools)" >&2
  exit 1
fi

use="$pgo/use/release/ftlsim"
# Built already from the sources as they are: taken as it is.
if [ -x "$use" ] && [ -z "$(find crates Cargo.toml Cargo.lock bench/pgo.sh -newer "$use" -print -quit)" ]; then
  echo "$use"
  exit 0
fi

echo "== PGO 1/3: instrumented build ($pgo/gen)" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$PWD/$pgo/raw" \
  cargo build --release -q -p ftlsim-cli --target-dir "$pgo/gen"
gen="$pgo/gen/release/ftlsim"

echo "== PGO 2/3: training runs" >&2
# Counts written by build scripts while building are not the simulator's.
rm -rf "$pgo/raw"
# One file per binary, each run merging its counts into it.
export LLVM_PROFILE_FILE="$PWD/$pgo/raw/%m.profraw"
train="$out/pgo-train.csv"
[ -f "$train" ] || $gen gen -c bench/page-8ch-16g.toml --workload rw=randwrite,bs=4k,ios=200000,seed=11 -o "$train"
page=(-c bench/page-8ch-16g.toml --trace "$train" --mode closed --qd 32 --precondition fill=1.0,overwrite=1.0 -q)
$gen run "${page[@]}" > /dev/null
$gen run "${page[@]}" --set cache.bytes=67108864 > /dev/null
$gen run "${page[@]}" --set overprovisioning=0.28 --set geometry.blocks_per_plane=1312 > /dev/null
# μ-FTL and its comparators on a quarter of the benchmark drive.
for ftl in mu dac superblock; do
  $gen run -c bench/page-8ch-16g.toml --ftl "$ftl" --set geometry.pages_per_block=128 --set geometry.blocks_per_plane=548 \
      --set ftl.superblock_blocks=64 --workload rw=randwrite,bs=4k,ios=100000,iodepth=32,seed=11 \
      --precondition fill=1.0,overwrite=1.0 -q > /dev/null
done
$gen run -c bench/page-8ch-16g.toml --ftl coftl --set geometry.blocks_per_plane=64 \
    --workload rw=randwrite,bs=4k,ios=5000,iodepth=8,seed=11 --precondition fill=1.0 -q > /dev/null
for ftl in fast bast dftl; do
  $gen run -c bench/page-8ch-16g.toml --ftl "$ftl" --set geometry.blocks_per_plane=128 \
      --workload rw=randrw,bs=4k,ios=50000,iodepth=16,seed=11 --precondition fill=1.0 -q > /dev/null
done
$gen run -c hat-table4 --ftl hat --workload rw=randrw,bs=4k,ios=50000,iodepth=32,seed=11 --precondition fill=1.0 -q > /dev/null
$gen run -c bench/page-8ch-16g.toml --workload rw=randread,bs=4k,ios=200000,iodepth=32,seed=11 --precondition fill=1.0 -q > /dev/null
unset LLVM_PROFILE_FILE

echo "== PGO 3/3: optimized build ($pgo/use)" >&2
rm -f "$pgo"/*.profdata
"$profdata" merge -o "$pgo/merged.profdata" "$pgo"/raw/*.profraw
# Named by its content: cargo tracks the flags, not the file they name, so
# new counts must change the flags to rebuild.
sum=$(sha256sum "$pgo/merged.profdata" | cut -c1-16)
mv "$pgo/merged.profdata" "$pgo/$sum.profdata"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$PWD/$pgo/$sum.profdata" \
  cargo build --release -q -p ftlsim-cli --target-dir "$pgo/use"
# Cargo may keep the binary when nothing it tracks changed: dated now, so
# the check above sees it built after the sources.
touch "$use"
echo "$use"
