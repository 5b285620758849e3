#!/bin/busybox sh
# The guest's /init (see guest.sh). Busybox sh runs its own applets before
# PATH, so the real e2fsprogs/util-linux tools are called by absolute path.
export PATH=/sbin:/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
say() { echo "FULLSYS[$(cut -d' ' -f1 /proc/uptime)] $*"; }
arg() { sed -n "s/.*fullsys\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
BIG=$(arg big); HOT=$(arg hot); OVERWRITES=$(arg overwrites)
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk; do
  [ -f /lib/modules/$m.ko ] && insmod /lib/modules/$m.ko
done
DEV=vda
i=0; while [ ! -b /dev/$DEV ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
[ -b /dev/$DEV ] || { say "no /dev/$DEV"; echo "FULLSYS-DONE rc=1"; poweroff -f; }
Q=/sys/block/$DEV/queue
say "disk size=$(( $(cat /sys/block/$DEV/size) * 512 )) discard_max_bytes=$(cat $Q/discard_max_bytes) write_zeroes_max_bytes=$(cat $Q/write_zeroes_max_bytes)"
RC=0
run() { say "+ $*"; "$@" 2>&1 || { RC=$?; say "FAILED rc=$RC: $*"; }; }
run /sbin/mkfs.ext4 -F -q -E discard,lazy_itable_init=0,lazy_journal_init=0 /dev/$DEV
run mount -t ext4 -o discard /dev/$DEV /mnt
# Aging that makes TRIM matter: "big" is written before "hot", then
# deleted (online discard), then "hot" is overwritten in place again and
# again. ext4 does not reuse big's blocks for in-place overwrites, so only
# TRIM tells the drive that big's pages are dead.
i=1; while [ $i -le 4 ]; do
  dd if=/dev/urandom of=/mnt/small$i bs=1M count=1 2>/dev/null || RC=1; i=$((i+1)); done
dd if=/dev/urandom of=/mnt/big bs=1M count=$BIG 2>/dev/null || RC=1
dd if=/dev/urandom of=/mnt/hot bs=1M count=$HOT 2>/dev/null || RC=1
run sync
rm /mnt/big /mnt/small2 /mnt/small4
run sync
sleep 6   # the jbd2 commit (every 5 s) issues the online discards
say "deleted big; df: $(df -k /mnt | tail -1)"
# Random 64 KiB overwrites (a sync every 50) scatter hot's live pages over
# many blocks, so GC has to copy, and how much depends on the free space
# the drive knows about: with TRIM, big's pages are not live.
CHUNKS=$((HOT * 16))
i=1; while [ $i -le $OVERWRITES ]; do
  dd if=/dev/urandom of=/mnt/hot bs=64k count=1 seek=$((RANDOM % CHUNKS)) conv=notrunc 2>/dev/null || RC=1
  [ $((i % 50)) = 0 ] && sync
  i=$((i+1)); done
run sync
say "overwrote $OVERWRITES random 64 KiB chunks of hot"
md5sum /mnt/hot /mnt/small1 /mnt/small3 > /tmp/sums
run /sbin/fstrim -v /mnt
run umount /mnt
echo 3 > /proc/sys/vm/drop_caches
run mount -t ext4 -o discard /dev/$DEV /mnt
run md5sum -c -s /tmp/sums
say "checked $(wc -l < /tmp/sums) files after remount"
run umount /mnt
run /sbin/e2fsck -fn /dev/$DEV
sync
say "FULLSYS-DONE rc=$RC"
echo "FULLSYS-DONE rc=$RC"
poweroff -f
