#!/usr/bin/env bash
# End-to-end tests of `ftlsim serve` with real NBD clients, for every FTL in
# WANTED that `ftlsim ftls` lists: qemu-io/qemu-img and python3-libnbd round
# trips over TCP and a Unix socket, live counters on SIGUSR1, then a real
# Linux guest (ext4, online discard, fstrim, e2fsck) whose only disk is the
# export. From the reports: TRIMs arrived, the recorded trace replays to the
# same copy work, and the FTL copied fewer pages than the same session with
# TRIM ignored (the pages the guest trimmed were not copied); with --state, a
# restarted server holds the same disk image, which e2fsck finds clean. "Copied" is GC
# copies for page-mapped FTLs and merge copies for the block-mapped hybrids.
# Installs its Debian packages (tests/fullsys/deps.sh).
# Called by scripts/test; run alone as `bash tests/nbd/e2e.sh`, or for some
# FTLs only as `E2E_FTLS="fast" bash tests/nbd/e2e.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
# FTLs not built yet are skipped loudly, so each is covered once it lands.
read -ra WANTED <<<"${E2E_FTLS:-page fast dftl}"

tests/fullsys/deps.sh
# scripts/test passes the CLI `cargo test` built (FTLSIM_BIN), not building it again.
if [ -n "${FTLSIM_BIN:-}" ]; then
    BIN=$FTLSIM_BIN
    [ -x "$BIN" ] || { echo "error: FTLSIM_BIN=$BIN is not an executable" >&2; exit 1; }
else
    cargo build --locked -q -p ftlsim-cli
    BIN=${CARGO_TARGET_DIR:-$PWD/target}/debug/ftlsim
fi
PY=/usr/bin/python3   # python3-libnbd is built for Debian's python
WORK=$(mktemp -d /tmp/ftlsim-e2e.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
fail() { echo "e2e: FAILED: $*" >&2; exit 1; }

available=$("$BIN" ftls | cut -d" " -f1)
FTLS=() MISSING=()
for ftl in "${WANTED[@]}"; do
  if grep -qx "$ftl" <<<"$available"; then FTLS+=("$ftl"); else MISSING+=("$ftl"); fi
done
for ftl in "${MISSING[@]}"; do
  echo "e2e: *** FTL '$ftl' is NOT AVAILABLE yet ('ftlsim ftls' does not list it): NOT TESTED ***" >&2
done
[ ${#FTLS[@]} -gt 0 ] || fail "none of ${WANTED[*]} is available"

# copied FTL: report expression for the pages the FTL copied to reclaim
# space; reclaimed FTL: the expression saying reclamation ran.
copied() {
  case $1 in
    block|bast|fast) echo "merge_pages_copied";;
    *) echo "gc_pages_copied";;
  esac
}
# margin FTL: how many more pages it must copy with TRIM ignored. Page-mapped
# GC copies nothing of the guest's deleted data (0 vs ~15,000 pages); FAST's
# merges copy data blocks' live pages whatever was trimmed around them, and
# the guest's trims spared them only 841-1982 of ~55,000 pages in 6 runs, so
# there the TRIM list's own count of skipped copies (reclaimed) is the proof.
margin() {
  case $1 in
    block|bast|fast) echo 0;;
    *) echo 1000;;
  esac
}
reclaimed() {
  case $1 in
    # The TRIM list must have spared merges copies, not only shrunk GC work.
    block|bast|fast) echo "sum(merges.values()) > 0 and trim_list['copies_saved'] > 0";;
    *) echo "gc_invocations > 0";;
  esac
}
field() { "$PY" -c 'import json,sys; print(eval(sys.argv[2], {}, json.load(open(sys.argv[1]))))' "$WORK/$1.json" "$2"; }

# start NAME ARGS...: starts a server in the background; sets URL and PID.
start() {
  local name=$1; shift
  "$BIN" serve "$@" --json "$WORK/$name.json" > "$WORK/$name.out" 2> "$WORK/$name.err" &
  PID=$!; PIDS+=("$PID")
  for _ in $(seq 100); do
    # The file appears only once the background server has opened it.
    URL=$(sed -n 's/.*listening on \(nbd[^ ]*\).*/\1/p' "$WORK/$name.err" 2>/dev/null || true)
    [ -n "$URL" ] && return 0
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  cat "$WORK/$name.err" >&2; fail "$name: server did not start"
}

# stop NAME: SIGINT, bounded wait, the report must have been written.
stop() {
  kill -INT "$PID"
  for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$PID" 2>/dev/null && fail "$1: server ignored SIGINT"
  wait "$PID" || { cat "$WORK/$1.err" >&2; fail "$1: server exited non-zero"; }
  [ -s "$WORK/$1.json" ] || fail "$1: no report written"
}

# check NAME 'python expression over the report fields' DESCRIPTION
check() {
  "$PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2], {}, r) else 1)' \
    "$WORK/$1.json" "$2" || { "$PY" -m json.tool "$WORK/$1.json" | head -40 >&2 || true; fail "$1: $3 ($2)"; }
}

SMALL=(-c k9lag08u0m-4ch --set geometry.blocks_per_plane=48)
# The guest's drive: 83 MiB logical over 96 MiB of flash, so the session fills it and GC runs.
GUEST=(-c k9lag08u0m-4ch --set geometry.blocks_per_plane=24 --set overprovisioning=0.15)

# DFTL writes two streams (data and translation blocks), so it needs one
# spare block per plane more than these drives leave (3): more blocks.
declare -A MORE=([dftl]="--set geometry.blocks_per_plane=64" [dftl-guest]="--set geometry.blocks_per_plane=32")

for ftl in "${FTLS[@]}"; do
  read -ra more <<<"${MORE[$ftl]:-}"
  read -ra more_guest <<<"${MORE[$ftl-guest]:-}"
  SMALL_FTL=("${SMALL[@]}" "${more[@]}")
  GUEST_FTL=("${GUEST[@]}" "${more_guest[@]}")
  echo "== $ftl: qemu-io, qemu-img, libnbd over TCP"
  start "$ftl-tcp" "${SMALL_FTL[@]}" --ftl "$ftl" --listen 127.0.0.1:0
  tests/nbd/qemu_roundtrip.sh "$URL" "$WORK"
  "$PY" tests/nbd/libnbd_roundtrip.py "$URL"
  kill -USR1 "$PID"
  for _ in $(seq 50); do grep -q '^nbd: reads' "$WORK/$ftl-tcp.err" && break; sleep 0.1; done
  grep -q '^nbd: reads [1-9]' "$WORK/$ftl-tcp.err" || fail "no live counters on SIGUSR1"
  stop "$ftl-tcp"
  check "$ftl-tcp" "ftl == '$ftl' and trims >= 3 and trimmed_pages > 0 and flushes >= 2 and writes > 0" "client commands in the report"

  echo "== $ftl: libnbd over a Unix socket, --pace realtime"
  start "$ftl-unix" "${SMALL_FTL[@]}" --ftl "$ftl" --socket "$WORK/nbd.sock" --pace realtime
  "$PY" tests/nbd/libnbd_roundtrip.py "$URL"
  stop "$ftl-unix"
  check "$ftl-unix" "input['host_mode'] == 'open' and latency_us['write']['max'] > 0" "realtime report"

  echo "== $ftl: Linux guest, ext4 + discard + fstrim"
  start "$ftl-guest" "${GUEST_FTL[@]}" --ftl "$ftl" --listen 127.0.0.1:0 --record "$WORK/$ftl-guest.csv" \
    --state "$WORK/$ftl-state"
  LOG=$WORK/$ftl-console.log tests/fullsys/guest.sh "$URL" || fail "guest run (console: $WORK/$ftl-console.log)"
  qemu-img convert -f raw -O raw "$URL" "$WORK/$ftl-before.img"
  stop "$ftl-guest"
  # --state: the file system the guest left is all there after a restart, and checks clean.
  start "$ftl-reload" "${GUEST_FTL[@]}" --ftl "$ftl" --listen 127.0.0.1:0 --state "$WORK/$ftl-state"
  qemu-img convert -f raw -O raw "$URL" "$WORK/$ftl-after.img"
  stop "$ftl-reload"
  cmp -s "$WORK/$ftl-before.img" "$WORK/$ftl-after.img" || fail "$ftl: the reloaded drive's contents differ"
  /sbin/e2fsck -fn "$WORK/$ftl-after.img" > "$WORK/$ftl-fsck.log" 2>&1 \
    || { cat "$WORK/$ftl-fsck.log" >&2; fail "$ftl: e2fsck of the reloaded drive"; }
  rm -f "$WORK/$ftl-before.img" "$WORK/$ftl-after.img"
  # big (54 MiB = 27648 pages of 2 KiB) was deleted with online discard
  check "$ftl-guest" "trims > 0 and trimmed_pages >= 27648 and $(reclaimed "$ftl")" "TRIMs from the guest"
  for t in true false; do
    "$BIN" run "${GUEST_FTL[@]}" --ftl "$ftl" --set ftl.trim=$t --trace "$WORK/$ftl-guest.csv" --mode closed \
      --json "$WORK/$ftl-replay-$t.json" -q > /dev/null
  done
  c=$(copied "$ftl")
  live=$(field "$ftl-guest" "$c")
  check "$ftl-replay-true" "$c == $live" "recorded trace replays to the live session's copy work"
  check "$ftl-replay-false" "$c > $live + $(margin "$ftl")" "TRIM must spare the FTL the copies of deleted data"
  echo "$ftl: guest session copied $live pages ($c); ignoring TRIM it would copy $(field "$ftl-replay-false" "$c")" \
    "| trimmed_pages $(field "$ftl-guest" trimmed_pages), TRIM list copies saved $(field "$ftl-guest" "(trim_list or {}).get('copies_saved')")"
done
rm -rf "$WORK"
echo "e2e: all NBD end-to-end tests passed for: ${FTLS[*]}"
[ ${#MISSING[@]} -eq 0 ] || echo "e2e: *** NOT TESTED (not available yet): ${MISSING[*]} ***" >&2
