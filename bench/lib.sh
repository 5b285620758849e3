# Shared by the ftlsim-binary benchmarks: `source "$(dirname "$0")/lib.sh"`.
# Moves to the project root, builds the release binary ($bin), makes the
# output directory ($out), and defines the helpers below. With
# FTLSIM_PGO=1 the binary is the profile-guided build of bench/pgo.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=bench-out
mkdir -p "$out"
if [ "${FTLSIM_PGO:-0}" = 1 ]; then
  bin=$(bash bench/pgo.sh)
else
  cargo build --release -q -p ftlsim-cli
  bin=target/release/ftlsim
fi

# field REPORT.json 'python expression over its fields': prints the value.
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, r))" "$@"; }

# The foundation benchmark's trace: 1M random 4 KiB writes over the bench drive.
randwrite_1m="$out/randwrite-1m.csv"
gen_randwrite_1m() {
  $bin gen -c bench/page-8ch-16g.toml --workload rw=randwrite,bs=4k,ios=1000000,seed=7 -o "$randwrite_1m"
}
