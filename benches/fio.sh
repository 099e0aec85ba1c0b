#!/bin/bash
# Side-by-side benchmark: fsbench's IOPS for a plain fio job against fio's own, run
# directly on the same kind of filesystem (ext4 over a loop device over tmpfs, made
# afresh for every measurement), alternating A/B so both share the machine's drift.
#
# Target: the median ratio fsbench/direct within the run-to-run noise (|1 - ratio| < 5%).
#
# Usage: sudo benches/fio.sh [ROUNDS] [DURATION_S]   (default 7 rounds of 3 s).
# FSBENCH=path/to/fsbench uses that binary instead of building a release one.
set -euo pipefail

ROUNDS=${1:-7}
SECS=${2:-3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "benches/fio.sh: needs root (loop devices and mount)" >&2; exit 2; }
command -v fio >/dev/null || { echo "benches/fio.sh: fio missing: apt-get install fio" >&2; exit 2; }
cd "$HERE"
if [ -z "${FSBENCH:-}" ]; then
    cargo build --release --quiet --bin fsbench
    FSBENCH=$HERE/target/release/fsbench
fi

WORK=$(mktemp -d /tmp/fsbench-fio-bench.XXXXXX)
LOOP=""
cleanup() {
    mountpoint -q "$WORK/mnt" && umount "$WORK/mnt"
    [ -n "$LOOP" ] && losetup -d "$LOOP"
    mountpoint -q "$WORK/tmpfs" && umount "$WORK/tmpfs"
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/tmpfs" "$WORK/mnt"

JOB='[randwrite]
ioengine=psync
rw=randwrite
bs=4k
size=64m
fsync=1'
cat > "$WORK/bench.toml" <<TOML
schema = 1
name = "fio-bench"
[matrix]
fs = ["ext4"]
[filesystems.ext4]
mkfs = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
[backing]
kind = "tmpfs-loop"
image_size = "1GiB"
[workload]
kind = "fio"
duration = "${SECS}s"
repetitions = 1
disturbance = "off"
job = """
$JOB
"""
TOML
printf '%s\ndirectory=%s\nruntime=%ss\ntime_based=1\n' "$JOB" "$WORK/mnt" "$SECS" > "$WORK/direct.fio"

direct() {
    mount -t tmpfs -o size=2g fsbench-bench "$WORK/tmpfs"
    truncate -s 1G "$WORK/tmpfs/img"
    LOOP=$(losetup -f --show "$WORK/tmpfs/img")
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$LOOP"
    mount "$LOOP" "$WORK/mnt"
    fio --output-format=json --output="$WORK/direct.json" "$WORK/direct.fio" >/dev/null
    umount "$WORK/mnt"; losetup -d "$LOOP"; LOOP=""; umount "$WORK/tmpfs"
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"]; print(sum(x["read"]["iops"]+x["write"]["iops"] for x in j))' "$WORK/direct.json"
}

viafsbench() {
    rm -rf "$WORK/res"
    "$FSBENCH" run "$WORK/bench.toml" --out "$WORK/res" --quiet >/dev/null 2>&1
    python3 -c 'import json,glob,sys; c=json.load(open(glob.glob(sys.argv[1]+"/fio-bench/*/cells/ext4-S-qoff-t1.json")[0])); print(c["fio"]["repetitions"][0]["total"]["all"]["iops"])' "$WORK/res"
}

: > "$WORK/results"
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then a=$(direct); b=$(viafsbench); else b=$(viafsbench); a=$(direct); fi
    echo "round $r: direct $a IOPS, fsbench $b IOPS" >&2
    echo "$a $b" >> "$WORK/results"
done
python3 - "$WORK/results" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
d = [a for a, _ in rows]; f = [b for _, b in rows]; r = [b / a for a, b in rows]
print(f"direct fio: median {statistics.median(d):.0f} IOPS (min {min(d):.0f}, max {max(d):.0f})")
print(f"fsbench:    median {statistics.median(f):.0f} IOPS (min {min(f):.0f}, max {max(f):.0f})")
print(f"ratio fsbench/direct per round: median {statistics.median(r):.3f} (min {min(r):.3f}, max {max(r):.3f})")
PY
