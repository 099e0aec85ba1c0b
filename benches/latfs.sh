#!/usr/bin/env bash
# Fidelity benchmark of the lat_fs workload: fsbench's workers against a C
# reference with the same process model (benches/latfs_ref.c), side by side in
# one run on one ext4 over a loop device over tmpfs (mounted noload,barrier=0,
# layout S: a directory per task). For each test and task count the two are
# alternated ROUNDS times, REPS repetitions each, so drift hits both alike.
#
# Prints, per test and task count, the median total_loops (loops per ms summed
# over tasks) of each, the ratio fsbench/C (target >= 0.95) and the coefficient
# of variation over all repetitions. Needs root (loop device, mount, per-task uids).
#
# Knobs (environment): WARMUP_MS=300 DURATION_MS=1000 REPS=3 ROUNDS=2
#                      TASKS="1 2" TESTS="open_close create_unlink chown write_truncate"
set -euo pipefail

WARMUP_MS=${WARMUP_MS:-300}
DURATION_MS=${DURATION_MS:-1000}
REPS=${REPS:-3}
ROUNDS=${ROUNDS:-2}
TASKS=${TASKS:-"1 2"}
TESTS=${TESTS:-"open_close create_unlink chown write_truncate"}
IMAGE_SIZE=${IMAGE_SIZE:-10G}

if [ "$(id -u)" -ne 0 ]; then
    echo "latfs.sh: needs root (loop device, mount, per-task uids)" >&2
    exit 2
fi

cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/fsbench-latfs-bench.XXXXXX)
dev=""
cleanup() {
    # Reverse order of acquisition; only what this script made.
    mountpoint -q "$work/mnt" && umount "$work/mnt"
    [ -n "$dev" ] && losetup -d "$dev"
    mountpoint -q "$work/backing" && umount "$work/backing"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "# building the C reference and fsbench (release)" >&2
cc -O2 -Wall -o "$work/latfs_ref" benches/latfs_ref.c
cargo build --release --quiet --bin fsbench --example latfs_direct
target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
fsbench="$target_dir/release/fsbench"
direct="$target_dir/release/examples/latfs_direct"

mkdir -p "$work/backing" "$work/mnt"
mount -t tmpfs tmpfs "$work/backing"
truncate -s "$IMAGE_SIZE" "$work/backing/img"
dev=$(losetup --find --show "$work/backing/img")
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
mount -t ext4 -o noload,barrier=0 "$dev" "$work/mnt"
max=0
for n in $TASKS; do [ "$n" -gt "$max" ] && max=$n; done
for ((i = 0; i < max; i++)); do mkdir -m 0777 "$work/mnt/$i"; done

echo "# ext4 on $dev over tmpfs: $(findmnt -no OPTIONS "$work/mnt")" >&2
echo "# warmup ${WARMUP_MS}ms, window ${DURATION_MS}ms, $ROUNDS rounds x $REPS reps, -U -L 2 -w" >&2
printf '%-15s %5s %12s %12s %7s %7s %7s\n' test tasks c_total fsb_total ratio c_cv fsb_cv
for test in $TESTS; do
    for n in $TASKS; do
        dirs=()
        for ((i = 0; i < n; i++)); do dirs+=("$work/mnt/$i"); done
        : >"$work/c.txt"
        : >"$work/f.txt"
        for ((r = 0; r < ROUNDS; r++)); do
            "$work/latfs_ref" -t "$test" -U -L 2 -w -W "$WARMUP_MS" -D "$DURATION_MS" -R "$REPS" "${dirs[@]}" \
                | awk '$1 == "rep" { print $4 }' >>"$work/c.txt"
            "$direct" --exe "$fsbench" --test "$test" --per-task-uid --quota-refs 2 --write \
                --warmup-ms "$WARMUP_MS" --duration-ms "$DURATION_MS" --reps "$REPS" "${dirs[@]}" \
                | awk '$1 == "rep" { print $4 }' >>"$work/f.txt"
        done
        stats() { # median and coefficient of variation of one column
            sort -g "$1" | awk '{ v[NR] = $1; s += $1; ss += $1 * $1 }
                END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                      mean = s / NR; sd = NR > 1 ? sqrt((ss - NR * mean * mean) / (NR - 1)) : 0;
                      printf "%.4f %.4f\n", m, sd / mean }'
        }
        read -r cm ccv < <(stats "$work/c.txt")
        read -r fm fcv < <(stats "$work/f.txt")
        awk -v t="$test" -v n="$n" -v cm="$cm" -v fm="$fm" -v ccv="$ccv" -v fcv="$fcv" \
            'BEGIN { printf "%-15s %5d %12.1f %12.1f %7.3f %6.1f%% %6.1f%%\n", t, n, cm, fm, fm / cm, ccv * 100, fcv * 100 }'
    done
done
