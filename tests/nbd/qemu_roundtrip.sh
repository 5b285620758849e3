#!/usr/bin/env bash
# qemu-io / qemu-img against an NBD URL: write, read-verify, discard,
# write-zeroes (with and without unmap), flush, and a qemu-img convert of a
# random image in, then qemu-img compare against it.
set -euo pipefail
URL=$1 WORK=$2
# -t writeback: qemu-io's default (writethrough) would set FUA on every write.
qemu-io -f raw -t writeback \
  -c 'write -P 0xab 0 1M' -c 'read -P 0xab 0 1M' \
  -c 'discard 0 512k' -c 'read -P 0xab 512k 512k' \
  -c 'write -z 1M 1M' -c 'read -P 0 1M 1M' \
  -c 'write -P 0xcd 2M 1M' -c 'write -z -u 2M 1M' -c 'read -P 0 2M 1M' \
  -c 'write -P 0x11 3584 2048' -c 'read -P 0x11 3584 2048' \
  -c 'flush' "$URL" > "$WORK/qemu-io.log"
if grep -qi 'fail\|error\|mismatch' "$WORK/qemu-io.log"; then cat "$WORK/qemu-io.log"; exit 1; fi
head -c 3M /dev/urandom > "$WORK/img.raw"
qemu-img convert -n -f raw -O raw "$WORK/img.raw" "$URL"
# compare: the first 3 MiB byte for byte, the rest of the export must read as zeros
qemu-img compare -f raw -F raw "$WORK/img.raw" "$URL"
echo "qemu-io and qemu-img round trip OK"
