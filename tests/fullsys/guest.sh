#!/usr/bin/env bash
# guest.sh NBD_URL — boots a real Linux guest under qemu-system-x86_64
# (software emulation) whose only disk is the NBD export, and ages an ext4
# file system on it: mkfs.ext4 (discarding the device), mount -o discard,
# small files, a BIG MiB file, a HOT MiB file; delete big and some small
# files (online discards); OVERWRITES random 64 KiB in-place overwrites of
# hot; fstrim;
# remount and md5-check every surviving file (data read back from the
# simulated flash); umount, e2fsck -fn, power off. Exit 0 only if the
# guest reports FULLSYS-DONE rc=0.
#
# Environment: BIG (MiB, default 54), HOT (MiB, default 12), OVERWRITES
# (default 600), LOG (console log,
# default $CACHE/console.log), FULLSYS_CACHE (kernel + initramfs cache,
# default ~/.cache/ftlsim-fullsys), TIMEOUT seconds (default 600).
# Debian's cloud kernel .deb is downloaded and unpacked once (no install);
# the initramfs is busybox plus e2fsprogs/util-linux binaries from the host.
set -euo pipefail
URL=${1:?usage: $0 NBD_URL}
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${FULLSYS_CACHE:-$HOME/.cache/ftlsim-fullsys}
BIG=${BIG:-54} HOT=${HOT:-12} OVERWRITES=${OVERWRITES:-600} TIMEOUT=${TIMEOUT:-600}
LOG=${LOG:-$CACHE/console.log}
mkdir -p "$CACHE"
"$HERE/deps.sh"

# ---- kernel: unpack the cloud kernel .deb rather than install it (no initramfs hooks)
KDIR=$CACHE/kernel
if ! ls "$KDIR"/boot/vmlinuz-* >/dev/null 2>&1; then
  kpkg() { apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}'; }
  pkg=$(kpkg)
  [ -n "$pkg" ] || { apt-get update -q >/dev/null; pkg=$(kpkg); }
  [ -n "$pkg" ] || { echo "guest.sh: cannot find the cloud kernel package" >&2; exit 3; }
  rm -rf "$CACHE/kdeb"; mkdir -p "$CACHE/kdeb"
  get() { (cd "$CACHE/kdeb" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >/dev/null); }
  get || { apt-get update -q >/dev/null; pkg=$(kpkg); get; }
  rm -rf "$KDIR"; dpkg-deb -x "$CACHE"/kdeb/*.deb "$KDIR"; rm -rf "$CACHE/kdeb"
  echo "[guest] kernel $pkg unpacked"
fi
VMLINUZ=$(ls "$KDIR"/boot/vmlinuz-* | head -1)
KVER=${VMLINUZ##*/vmlinuz-}

# ---- initramfs, rebuilt when this script's init changes
INIT_VERSION=$(md5sum < "$HERE/init.sh" | cut -c1-16)
INITRD=$CACHE/initramfs-$KVER.cpio.gz
if [ ! -s "$INITRD" ] || [ "$(cat "$CACHE/initramfs.version" 2>/dev/null)" != "$INIT_VERSION" ]; then
  R=$CACHE/rootfs; rm -rf "$R"
  mkdir -p "$R"/{bin,sbin,etc,proc,sys,dev,mnt,tmp,lib/modules,lib64,lib/x86_64-linux-gnu}
  cp /bin/busybox "$R/bin/busybox"
  for a in $(/bin/busybox --list); do [ -e "$R/bin/$a" ] || ln -s busybox "$R/bin/$a"; done
  for b in /sbin/mke2fs /sbin/e2fsck /sbin/fstrim; do
    cp "$b" "$R/sbin/"
    for l in $(ldd "$b" | grep -o '/[^ ]*'); do cp -Ln "$l" "$R$l" 2>/dev/null || cp -L "$l" "$R$(dirname "$l")/"; done
  done
  ln -sf mke2fs "$R/sbin/mkfs.ext4"
  cp /etc/mke2fs.conf "$R/etc/"
  # The cloud kernel builds virtio as modules; load order matters.
  for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk; do
    f=$(find "$KDIR/lib/modules/$KVER" -name "$m.ko*" | head -1); [ -n "$f" ] && cp "$f" "$R/lib/modules/"
  done
  cp "$HERE/init.sh" "$R/init"; chmod +x "$R/init"
  (cd "$R" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 > "$INITRD.tmp") && mv "$INITRD.tmp" "$INITRD"
  echo "$INIT_VERSION" > "$CACHE/initramfs.version"
fi

# ---- boot
set +e
timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -nodefaults -no-user-config -display none \
  -accel tcg -cpu max -smp 1 -m 512 -machine q35 -no-reboot \
  -kernel "$VMLINUZ" -initrd "$INITRD" \
  -append "console=ttyS0 loglevel=4 panic=-1 rdinit=/init fullsys.big=$BIG fullsys.hot=$HOT fullsys.overwrites=$OVERWRITES" \
  -serial stdio -monitor none \
  -drive "file=$URL,format=raw,if=none,id=d0,discard=unmap,cache=writeback" \
  -device virtio-blk-pci,drive=d0 < /dev/null > "$LOG" 2>&1
QRC=$?
set -e
grep -E '^FULLSYS|trimmed|Kernel panic|I/O error' "$LOG" || true
grep -q '^FULLSYS-DONE rc=0' "$LOG" && [ "$QRC" = 0 ]
