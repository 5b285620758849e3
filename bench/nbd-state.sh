#!/usr/bin/env bash
# Loading a durable NBD drive (issue 17): does it scale with the data
# changed, or with the history? One command: bash bench/nbd-state.sh
# `ftlsim serve --state DIR` (page FTL, k9lag08u0m-4ch: 7.5 GiB logical,
# payloads stored), driven by fio's libnbd engine at queue depth 16 with
# N (default 1,000,000; NBD_STATE_WRITES) random 4 KiB writes over 64 MiB:
# a long history, little data changed. Then, each on a restart:
#   1. after a clean stop (SIGTERM): loads the state saved at shutdown;
#   2. the same directory with its saved state deleted: replays every
#      command from the configuration (what every load did before);
#   3. after SIGKILL during a second stream of writes: the state saved at
#      the last checkpoint plus the commands since.
# Figure: the server's own "drive ready in S s" line for each.
# FTLSIM=path/to/ftlsim benchmarks that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v fio >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends fio >/dev/null
if [ -z "${FTLSIM:-}" ]; then
  cargo build --release --locked -q -p ftlsim-cli
  FTLSIM=target/release/ftlsim
fi
writes=${NBD_STATE_WRITES:-1000000}
out=bench-out/nbd-state; rm -rf "$out"; mkdir -p "$out"
state=$out/state sock=$out/nbd.sock
pid=""
trap '[ -n "$pid" ] && kill -KILL $pid 2>/dev/null || true' EXIT

start() { # $1: log name
  "$FTLSIM" serve -c k9lag08u0m-4ch --ftl page --socket "$sock" --pace none --state "$state" \
      > /dev/null 2> "$out/$1.err" &
  pid=$!
  for _ in $(seq 6000); do
    grep -q "listening on" "$out/$1.err" 2>/dev/null && return 0
    kill -0 $pid 2>/dev/null || { cat "$out/$1.err"; exit 1; }
    sleep 0.1
  done
  cat "$out/$1.err"; exit 1
}
ready() { sed -n 's/.*drive ready in \([0-9.]*\) s.*/\1/p' "$out/$1.err"; }
stream() { # $1: number of writes
  fio --name=w --ioengine=nbd --uri="nbd+unix:///?socket=$sock" --rw=randwrite --bs=4k --iodepth=16 \
      --size=64m --io_size=$(( $1 * 4 ))k --randrepeat=1 --output-format=terse --terse-version=3 >/dev/null
}

start first
stream "$writes"
kill -TERM $pid; wait $pid || true
du_state=$(du -sh "$state" | cut -f1)
start clean-restart
kill -TERM $pid; wait $pid || true
echo "history: $writes random 4 KiB writes over 64 MiB; state directory $du_state"
echo "1. load after a clean stop (saved state):          $(ready clean-restart) s; saved state $(du -h --apparent-size "$state"/drive-*.snap | cut -f1)"
rm -f "$state"/drive-*.snap
start full-replay
echo "2. load with the saved state deleted (full replay): $(ready full-replay) s"
stream $(( writes / 4 ))
kill -KILL $pid; wait $pid 2>/dev/null || true
start after-kill
echo "3. load after SIGKILL ($(( writes / 4 )) more writes):       $(ready after-kill) s"
grep -h "ftlsim serve:" "$out"/*.err | grep -v "listening\|ready" | sort | uniq -c | head -20
kill -TERM $pid; wait $pid || true
