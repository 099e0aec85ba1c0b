#!/usr/bin/env bash
# The op-mix engine side by side with the real tools (issue 37), on one ext4 over a loop
# device over tmpfs that this script makes, both tools and fsbench in one directory each
# of the same mounted filesystem, alternated ROUNDS times so that drift hits both alike:
#
#  postmark: `postmark` (Debian package) with postmark's defaults (500 files of 500..10,000
#            bytes in one directory, read/write block 512, biases 5/5) and unbuffered I/O
#            (`set buffering false`: read(2)/write(2) of 512 bytes, as fsbench's io_size),
#            PM_TRANSACTIONS transactions, against scenarios/postmark.toml run for the same
#            number of transactions (`loops`). Figure: transactions per second (postmark's
#            "seconds of transactions" line; fsbench: loops / window).
#  dbench:   `dbench` (Debian package, 4.00: its one backend is fileio, so no -B) on its own
#            /usr/share/dbench/client.txt with DB_CLIENTS clients for DB_TIME seconds
#            after its warm-up of DB_TIME/5 seconds, its name resolution on (as fsbench's
#            `resolve = "full"`, the default), against
#            scenarios/dbench.toml replaying the same file with as many clients for the
#            same warm-up (workload.warmup) and time. Figure: throughput MB/s (10^6 bytes
#            read and written per second of the measured time: dbench's "Throughput"
#            line; fsbench: the loadfile's throughput_mb_s).
#
# Prints one line per round and tool, then the medians and their ratio fsbench / tool
# (target: within 0.90..1.10). Needs root (loop device, mount).
#
# Knobs (environment): ROUNDS=3 WHAT="postmark dbench" PM_TRANSACTIONS=100000
#                      DB_CLIENTS=4 DB_TIME=20 IMAGE_SIZE=4G FSBENCH=
set -euo pipefail

ROUNDS=${ROUNDS:-3}
WHAT=${WHAT:-"postmark dbench"}
PM_TRANSACTIONS=${PM_TRANSACTIONS:-100000}
DB_CLIENTS=${DB_CLIENTS:-4}
DB_TIME=${DB_TIME:-20}
IMAGE_SIZE=${IMAGE_SIZE:-4G}
LOADFILE=${LOADFILE:-/usr/share/dbench/client.txt}

if [ "$(id -u)" -ne 0 ]; then
    echo "ops_vs_tools.sh: needs root (loop device, mount)" >&2
    exit 2
fi
for t in postmark dbench; do
    case " $WHAT " in *" $t "*) command -v "$t" >/dev/null || {
        echo "ops_vs_tools.sh: $t is not installed (apt-get install $t)" >&2
        exit 2
    } ;; esac
done

cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/fsbench-ops-tools.XXXXXX)
dev=""
cleanup() {
    mountpoint -q "$work/mnt" && umount "$work/mnt"
    [ -n "$dev" ] && losetup -d "$dev"
    mountpoint -q "$work/backing" && umount "$work/backing"
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

mkdir -p "$work/backing" "$work/mnt"
mount -t tmpfs tmpfs "$work/backing"
truncate -s "$IMAGE_SIZE" "$work/backing/img"
dev=$(losetup --find --show "$work/backing/img")
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
mount -t ext4 "$dev" "$work/mnt"
echo "# ext4 on $dev over tmpfs: $(findmnt -no OPTIONS "$work/mnt"); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# One figure of fsbench's last run: a jq-free read of the cell file's JSON.
cell_figure() { # results dir, python expression over the repetition `r`
    python3 - "$1" "$2" <<'EOF'
import json, pathlib, sys
cells = [p for p in pathlib.Path(sys.argv[1]).rglob("*.json") if "cell" in p.name or p.parent.name == "cells"]
for p in cells:
    d = json.loads(p.read_text())
    if d.get("ops"):
        r = d["ops"]["repetitions"][0]
        print(eval(sys.argv[2]))
        break
else:
    sys.exit("no op-mix cell under " + sys.argv[1])
EOF
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

run_postmark() {
    rm -rf "$work/mnt/pm" && mkdir "$work/mnt/pm"
    printf 'set location %s\nset buffering false\nset transactions %s\nrun\nquit\n' \
        "$work/mnt/pm" "$PM_TRANSACTIONS" >"$work/pm.cfg"
    (cd "$work" && postmark "$work/pm.cfg") >"$work/pm.out"
    sed -n 's/.*seconds of transactions (\([0-9.]*\) per second).*/\1/p' "$work/pm.out"
}

run_fsbench_postmark() {
    rm -rf "$work/mnt/fsb" "$work/res" && mkdir "$work/mnt/fsb"
    "$fsbench" run scenarios/postmark.toml --set backing.kind=dir --set "backing.path=$work/mnt/fsb" \
        --set "workload.loops=$PM_TRANSACTIONS" --set workload.repetitions=1 --set workload.disturbance=off \
        --out "$work/res" --workdir "$work/wd" >"$work/fsb.out" 2>&1
    cell_figure "$work/res" '"%.1f" % (r["loops"] / r["elapsed_s"])'
}

run_dbench() {
    rm -rf "$work/mnt/db" && mkdir "$work/mnt/db"
    dbench -c "$LOADFILE" -t "$DB_TIME" -D "$work/mnt/db" "$DB_CLIENTS" >"$work/db.out" 2>&1
    sed -n 's/^ *Throughput \([0-9.]*\) MB\/sec.*/\1/p' "$work/db.out" | tail -1
}

run_fsbench_dbench() {
    rm -rf "$work/mnt/fsb" "$work/res" && mkdir "$work/mnt/fsb"
    # The group's keys (an array of tables) are not reachable by --set: a copy of the scenario.
    sed -e "s|^loadfile = .*|loadfile = \"$LOADFILE\"|" -e "s|^threads = .*|threads = $DB_CLIENTS|" \
        scenarios/dbench.toml >"$work/dbench.toml"
    "$fsbench" run "$work/dbench.toml" --set backing.kind=dir --set "backing.path=$work/mnt/fsb" \
        --set "workload.duration=${DB_TIME}s" --set "workload.warmup=$((DB_TIME / 5))s" \
        --set workload.repetitions=1 --set workload.disturbance=off \
        --out "$work/res" --workdir "$work/wd" >"$work/fsb.out" 2>&1
    cell_figure "$work/res" '"%.2f" % r["loadfile"]["throughput_mb_s"]'
}

for tool in $WHAT; do
    : >"$work/$tool.tool"
    : >"$work/$tool.fsb"
    for ((r = 1; r <= ROUNDS; r++)); do
        t=$("run_$tool")
        f=$("run_fsbench_$tool")
        echo "$t" >>"$work/$tool.tool"
        echo "$f" >>"$work/$tool.fsb"
        printf '%-9s round %d: %s %s, fsbench %s (load %s)\n' "$tool" "$r" "$tool" "$t" "$f" "$(cut -d' ' -f1 /proc/loadavg)"
    done
    tm=$(median <"$work/$tool.tool")
    fm=$(median <"$work/$tool.fsb")
    unit=$([ "$tool" = postmark ] && echo "transactions/s" || echo "MB/s")
    awk -v t="$tool" -v tm="$tm" -v fm="$fm" -v u="$unit" \
        'BEGIN { printf "%-9s median: %s %.2f %s, fsbench %.2f %s, ratio fsbench/%s %.3f\n", t, t, tm, u, fm, u, t, fm / tm }'
done
