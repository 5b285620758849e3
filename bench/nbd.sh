#!/usr/bin/env bash
# NBD server benchmark (issue 6). One command: bash bench/nbd.sh
# `ftlsim serve --pace none`, page FTL, default preset (k9lag08u0m-4ch,
# 7.5 GiB logical, payloads stored), driven by Debian's fio through its
# libnbd engine (ioengine=nbd) at queue depth 16, over 127.0.0.1 TCP and
# over a Unix socket, each on a fresh server:
#   1. 128 KiB sequential writes, 4 GiB;
#   2. 4 KiB random reads, 1600 MiB (409,600 requests) over what was written.
# FTLSIM=path/to/ftlsim benchmarks that binary instead of building one
# (to compare builds on the same, equally noisy, machine).
set -euo pipefail
cd "$(dirname "$0")/.."
tests/fullsys/deps.sh
command -v fio >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends fio >/dev/null
if [ -z "${FTLSIM:-}" ]; then
  cargo build --release --locked -q -p ftlsim-cli
  FTLSIM=target/release/ftlsim
fi
out=bench-out; mkdir -p "$out"
for transport in tcp unix; do
  case $transport in
    tcp) listen=(--listen 127.0.0.1:0);;
    unix) rm -f "$out/nbd.sock"; listen=(--socket "$out/nbd.sock");;
  esac
  "$FTLSIM" serve -c k9lag08u0m-4ch --ftl page "${listen[@]}" --pace none \
    --json "$out/nbd-$transport.json" > /dev/null 2> "$out/nbd-$transport.err" &
  pid=$!
  trap 'kill -TERM $pid 2>/dev/null || true' EXIT
  url=""
  for _ in $(seq 100); do
    url=$(sed -n 's/.*listening on \(nbd[^ ]*\).*/\1/p' "$out/nbd-$transport.err" 2>/dev/null || true)
    [ -n "$url" ] && break; sleep 0.1
  done
  [ -n "$url" ] || { cat "$out/nbd-$transport.err"; exit 1; }
  # terse v3: field 7/8 read KB/s and IOPS, 48/49 write KB/s and IOPS
  fio --name=seqwrite --ioengine=nbd --uri="$url" --rw=write --bs=128k --iodepth=16 --size=4g \
      --output-format=terse --terse-version=3 | awk -F';' -v t=$transport \
      'NF>40{printf "%s: 128 KiB sequential writes, QD16: %.0f MB/s (%d requests/s)\n", t, $48*1.024/1000, $49}'
  fio --name=randread --ioengine=nbd --uri="$url" --rw=randread --bs=4k --iodepth=16 --size=4g \
      --io_size=1600m --randrepeat=1 --output-format=terse --terse-version=3 | awk -F';' -v t=$transport \
      'NF>40{printf "%s: 4 KiB random reads, QD16: %d requests/s\n", t, $8}'
  kill -INT $pid; wait $pid
done
