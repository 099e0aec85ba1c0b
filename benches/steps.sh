#!/bin/bash
# Side-by-side benchmark of fsbench's in-process untar and rm_rf against GNU
# `tar zxf` and `rm -rf`, on ext4 (noload,barrier=0) over a loop device over
# tmpfs, a fresh filesystem for every measurement, the full-size generated
# linux-2.5.63 archive sitting on the target (as in seed 002).
#
# Targets: untar elapsed <= 1.0x tar zxf, CPU <= 1.1x, peak RSS <= 64 MiB;
# rm_rf elapsed <= 1.05x rm -rf.
#
# Usage: sudo benches/steps.sh [ROUNDS]   (default 5). Needs root, losetup, mkfs.ext4, /usr/bin/time.
set -euo pipefail

ROUNDS=${1:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "benches/steps.sh: needs root (loop devices and mount)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "benches/steps.sh: /usr/bin/time missing: apt-get install time" >&2; exit 2; }

cd "$HERE"
cargo build --release --quiet --bin fsbench --example steps_direct
FSBENCH=$HERE/target/release/fsbench
DIRECT=$HERE/target/release/examples/steps_direct
CACHE=$HERE/target/fixture-cache
ARCHIVE=$CACHE/linux-2.5.63-scale1-seed1.tar.gz
mkdir -p "$CACHE"
[ -f "$ARCHIVE" ] || "$FSBENCH" fixture kernel-tree --scale 1 --seed 1 -o "$ARCHIVE" >/dev/null

WORK=$(mktemp -d /tmp/fsbench-steps-bench.XXXXXX)
LOOP=""
cleanup() {
    mountpoint -q "$WORK/mnt" && umount "$WORK/mnt"
    [ -n "$LOOP" ] && losetup -d "$LOOP"
    mountpoint -q "$WORK/tmpfs" && umount "$WORK/tmpfs"
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/tmpfs" "$WORK/mnt"
mount -t tmpfs -o size=2g fsbench-bench "$WORK/tmpfs"
truncate -s 1G "$WORK/tmpfs/img"
LOOP=$(losetup -f --show "$WORK/tmpfs/img")

# A fresh ext4 with the archive on it (and, for rm runs, the tree unpacked by GNU tar).
fresh_fs() {
    mountpoint -q "$WORK/mnt" && umount "$WORK/mnt"
    mkfs.ext4 -q -F "$LOOP"
    mount -o noload,barrier=0 "$LOOP" "$WORK/mnt"
    cp "$ARCHIVE" "$WORK/mnt/linux-2.5.63.tar.gz"
    if [ "${1:-}" = tree ]; then (cd "$WORK/mnt" && tar zxf linux-2.5.63.tar.gz); fi
    sync
}

# measure NAME CMD...: one line "NAME elapsed_s user_s sys_s maxrss_kib" (elapsed from a ns clock).
measure() {
    local name=$1; shift
    local t0 t1
    t0=$(date +%s%N)
    (cd "$WORK/mnt" && /usr/bin/time -o "$WORK/time.out" -f "%U %S %M" "$@" 2>/dev/null)
    t1=$(date +%s%N)
    echo "$name $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", (b-a)/1e9}') $(cat "$WORK/time.out")" >> "$WORK/results"
}

: > "$WORK/results"
for r in $(seq 1 "$ROUNDS"); do
    # Alternate who goes first, so that drift in the machine does not favour one side.
    if [ $((r % 2)) = 1 ]; then order="gnu ours"; else order="ours gnu"; fi
    for who in $order; do
        fresh_fs
        if [ "$who" = gnu ]; then measure untar_gnu tar zxf linux-2.5.63.tar.gz
        else measure untar_ours "$DIRECT" untar linux-2.5.63.tar.gz .; fi
    done
    for who in $order; do
        fresh_fs tree
        if [ "$who" = gnu ]; then measure rm_gnu rm -rf linux-2.5.63
        else measure rm_ours "$DIRECT" rm_rf linux-2.5.63; fi
    done
done

python3 - "$WORK/results" <<'EOF'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    n, e, u, s, m = line.split()
    rows.setdefault(n, []).append((float(e), float(u) + float(s), int(m)))
def med(n, i): return st.median(r[i] for r in rows[n])
print(f"{'run':<12}{'n':>3}{'elapsed s':>11}{'cpu s':>8}{'rss MiB':>9}   (medians; all elapsed: ...)")
for n in ["untar_gnu", "untar_ours", "rm_gnu", "rm_ours"]:
    print(f"{n:<12}{len(rows[n]):>3}{med(n,0):>11.3f}{med(n,1):>8.2f}{med(n,2)/1024:>9.1f}   " + " ".join(f"{r[0]:.3f}" for r in rows[n]))
ue, uc = med("untar_ours", 0) / med("untar_gnu", 0), med("untar_ours", 1) / med("untar_gnu", 1)
re_ = med("rm_ours", 0) / med("rm_gnu", 0)
rss = med("untar_ours", 2) / 1024
ok = lambda b: "ok" if b else "MISSED"
print(f"untar elapsed ratio {ue:.3f} (target <= 1.00) {ok(ue <= 1.0)}")
print(f"untar CPU ratio     {uc:.3f} (target <= 1.10) {ok(uc <= 1.1)}")
print(f"untar peak RSS      {rss:.1f} MiB (target <= 64) {ok(rss <= 64)}")
print(f"rm_rf elapsed ratio {re_:.3f} (target <= 1.05) {ok(re_ <= 1.05)}")
EOF
