#!/usr/bin/env bash
# Installs the Debian packages the NBD end-to-end tests use, if missing:
# qemu-utils (qemu-io, qemu-img), python3-libnbd, qemu-system-x86 and
# busybox-static (the guest), e2fsprogs and util-linux (copied into it).
# Needs root for apt-get; fails loudly otherwise.
set -euo pipefail
need=()
command -v qemu-io >/dev/null || need+=(qemu-utils)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
/usr/bin/python3 -c 'import nbd' 2>/dev/null || need+=(python3-libnbd)
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
[ -x /sbin/mke2fs ] || need+=(e2fsprogs)
[ -x /sbin/fstrim ] || need+=(util-linux)
[ ${#need[@]} -eq 0 ] && exit 0
echo "[deps] apt-get install ${need[*]}"
install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"; }
# Stale or missing package lists: update once and retry.
install >/dev/null 2>&1 || { apt-get update -q >/dev/null && install >/dev/null; }
# Installing qemu-system-x86 can remove a qemu-utils of another release (a
# backports build preinstalled): put the release's own back.
if ! command -v qemu-io >/dev/null; then
    echo "[deps] apt-get install qemu-utils (removed by the qemu-system-x86 install)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-utils >/dev/null
fi
for tool in qemu-io qemu-img qemu-system-x86_64; do
    command -v "$tool" >/dev/null || { echo "error: $tool still missing after installing ${need[*]}" >&2; exit 1; }
done
