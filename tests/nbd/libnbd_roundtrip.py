"""Round trip through python3-libnbd (Debian's /usr/bin/python3): write,
read-verify, TRIM, WRITE_ZEROES with and without NO_HOLE, FUA, FLUSH,
plus unaligned-to-page requests. Exits non-zero on any mismatch."""
import sys

import nbd

h = nbd.NBD()
h.connect_uri(sys.argv[1])
assert h.can_trim() and h.can_zero() and h.can_flush() and h.can_fua()
size = h.get_size()
base = 8 << 20
a = bytes((i * 7 + 1) & 0xFF for i in range(65536))
h.pwrite(a, base)
assert h.pread(65536, base) == a
h.trim(32768, base)
assert h.pread(32768, base + 32768) == a[32768:], "TRIM touched data beyond its range"
h.pwrite(b"\x77" * 65536, base + 65536)
h.zero(65536 - 1024, base + 65536 + 512)
assert h.pread(65536, base + 65536) == b"\x77" * 512 + bytes(65536 - 1024) + b"\x77" * 512
h.pwrite(b"\x77" * 65536, base + 131072)
h.zero(65536, base + 131072, nbd.CMD_FLAG_NO_HOLE)
assert h.pread(65536, base + 131072) == bytes(65536)
h.pwrite(b"\x01" * 4096, size - 4096, nbd.CMD_FLAG_FUA)
assert h.pread(4096, size - 4096) == b"\x01" * 4096
h.trim(8192, base + 262144)
h.pwrite(b"\x02" * 1536, base + 262144 + 1536)  # straddles a 2 KiB page boundary
assert h.pread(2048, base + 262144 + 1024) == b"\x00" * 512 + b"\x02" * 1536
h.flush()
try:
    h.pread(4096, size)  # past the end: the server's error, not a crash
    sys.exit("read past the end succeeded")
except nbd.Error:
    pass
h.shutdown()
print("libnbd round trip OK")
