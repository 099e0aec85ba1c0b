#!/usr/bin/env bash
# Scale of the op-mix engine (issue 37): a fileset of ENTRIES (default 1,000,000) files is
# built and run by `fsbench run`, and fsbench's own memory is measured: its peak resident
# set (getrusage's ru_maxrss, as /usr/bin/time -v prints it) for ENTRIES and for 1,000
# entries, the difference over the entries being fsbench's bytes per entry (target:
# <= 200). The fileset lives on a tmpfs this script mounts (backing dir: no loop image,
# whose page cache would not be fsbench's anyway), 1 KiB files, 80% preallocated, directory
# width 100 as filebench's createfiles; one worker group runs fileserver's metadata ops
# (stat, open, read, close, create, delete) for WINDOW seconds. Needs root (mount).
#
# Knobs (environment): ENTRIES=1000000 WINDOW=5 THREADS=4 DIR_WIDTH=100 FSBENCH=
set -euo pipefail

ENTRIES=${ENTRIES:-1000000}
WINDOW=${WINDOW:-5}
THREADS=${THREADS:-4}
DIR_WIDTH=${DIR_WIDTH:-100}

if [ "$(id -u)" -ne 0 ]; then
    echo "ops_scale.sh: needs root (mount)" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/fsbench-ops-scale.XXXXXX)
cleanup() {
    mountpoint -q "$work/mnt" && umount "$work/mnt"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# FSBENCH=path: a release binary already built (else this tree's, built now).
fsbench=${FSBENCH:-}
if [ -z "$fsbench" ]; then
    echo "# building fsbench (release)" >&2
    cargo build --release --quiet --bin fsbench
    target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
    fsbench="$target_dir/release/fsbench"
fi

# Every directory of a fileset is held open (docs/ops.md): width 100 makes about 10,000 for
# a million entries (width 20, about 55,000, passes this machine's hard limit of 20,000).
ulimit -n "$(ulimit -Hn)"
mkdir -p "$work/mnt"
mount -t tmpfs -o size=8G,nr_inodes=$((ENTRIES * 2 + 100000)) tmpfs "$work/mnt"

scenario() { # entries
    cat <<TOML
schema = 1
name = "ops-scale"
description = "$1 entries of 1 KiB, fileserver's metadata ops"
[matrix]
fs = ["tmpfs"]
[backing]
kind = "dir"
path = "$work/mnt/fsb"
[workload]
kind = "ops"
duration = "${WINDOW}s"
repetitions = 1
disturbance = "off"
[[workload.fileset]]
name = "big"
entries = $1
dir_width = $DIR_WIDTH
size = "1KiB"
prealloc = 80
[[workload.group]]
name = "meta"
threads = $THREADS
loop = [
  { op = "stat", fileset = "big" },
  { op = "open", fileset = "big", fd = 1 },
  { op = "read", fd = 1, io_size = "64KiB" },
  { op = "close", fd = 1 },
  { op = "create", fileset = "big", fd = 2 },
  { op = "close", fd = 2 },
  { op = "delete", fileset = "big" },
]
TOML
}

measure() { # entries -> "peak_kib build_s ops"
    rm -rf "$work/mnt/fsb" "$work/res" && mkdir "$work/mnt/fsb"
    scenario "$1" >"$work/s.toml"
    /usr/bin/time -v "$fsbench" run "$work/s.toml" --out "$work/res" --workdir "$work/wd" \
        >"$work/out.txt" 2>"$work/time.txt" || { cat "$work/out.txt" "$work/time.txt" >&2; return 1; }
    local kib
    kib=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
    python3 - "$work/res" "$kib" <<'PY'
import json, pathlib, sys
for p in pathlib.Path(sys.argv[1]).rglob("*.json"):
    d = json.loads(p.read_text())
    if d.get("ops"):
        o = d["ops"]
        f, r = o["filesets"][0], o["repetitions"][0]
        print(sys.argv[2], f["entries"], f["dirs"], f["preallocated"], f"{f['build_s']:.1f}", r["total"]["count"], r["stop"])
        break
else:
    sys.exit("no op-mix cell (see the run's output)")
PY
}

read -r small_kib _ _ _ _ small_ops _ < <(measure 1000)
read -r big_kib entries dirs pre build_s ops stop < <(measure "$ENTRIES")
echo "entries $entries (dirs $dirs, preallocated $pre), build ${build_s}s, window ${WINDOW}s: $ops ops ($stop)"
echo "peak RSS: $big_kib KiB with $entries entries, $small_kib KiB with 1000 (window: $small_ops ops)"
awk -v b="$big_kib" -v s="$small_kib" -v n="$entries" \
    'BEGIN { printf "fsbench bytes per entry: %.1f over the 1,000-entry run, %.1f of the whole peak\n", (b - s) * 1024 / (n - 1000), b * 1024 / n }'
