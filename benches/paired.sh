#!/usr/bin/env bash
# Paired benchmark: does a paired run decide on a machine with a noisy neighbour?
#
# The figures G0–G4 of the paired-comparison work, on 8 lat_fs cells (the four tests at 1
# and 2 tasks) while an intermittent CPU hog runs on one core (busy HOG_ON_S seconds,
# idle HOG_OFF_S seconds, pinned with taskset). Every run is one paired run: arm A is ext4,
# arm B an ext4 variant, measured back to back in ABBA/BAAB order until the sequential
# rule decides (pairs MIN..MAX) at THRESHOLD.
#   G0  per-pair log-ratio spread against the unpaired spread of the same members (what
#       pairing removes), from the A/A runs' stored pairs;
#   G1  A/A (B identical to A): RUNS runs × 8 groups; regressed/improved must be 0 and
#       unchanged ≥ 90%;
#   G2  B slowed by a real cgroup CPU limit (cpu.max at SLOW of a CPU per task): regressed
#       in ≥ 95% of the groups;
#   G3  the interval of G2's groups covers the slowdown measured with the hog off and
#       REF_PAIRS pairs (the reference), in ≥ 90% of them;
#   G4  wall time of one 8-cell paired run (≤ 10 minutes).
# Needs root (loop device, mount, cgroups). Not a test: its figures depend on the machine
# and go into benches/README.md. Run it on an otherwise idle machine.
#
# Knobs (environment): RUNS=4 THRESHOLD=5% MIN=6 MAX=32 REF_PAIRS=32 SLOW=0.9 HOG_ON_S=2
#                      HOG_OFF_S=2 HOG_CPU=1 DURATION=150ms REPETITIONS=3
#                      FSBENCH=target/release/fsbench KEEP=0 (keep the results directory)
set -euo pipefail

RUNS=${RUNS:-4}
THRESHOLD=${THRESHOLD:-5%}
MIN=${MIN:-6}
MAX=${MAX:-32}
REF_PAIRS=${REF_PAIRS:-32}
SLOW=${SLOW:-0.9}
DURATION=${DURATION:-150ms}
REPETITIONS=${REPETITIONS:-3}
KEEP=${KEEP:-0}

source "$(dirname "$0")/hog.sh"
bench_setup paired.sh "loop device, mount, cgroups"

work=$(mktemp -d /tmp/fsbench-paired-bench.XXXXXX)
cleanup() {
    stop_hog
    [ "$KEEP" = 1 ] && echo "paired.sh: results kept in $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# scenario NAME TASKS B-EXTRA MIN MAX: a paired scenario of ext4 against "ext4-b", whose
# [filesystems.ext4-b] gets B-EXTRA (empty: identical to A).
scenario() {
    cat > "$work/$1.toml" <<EOF
schema = 1
name = "$1"
description = "paired benchmark: ext4 against ext4-b"
[matrix]
fs = ["ext4", "ext4-b"]
layout = ["S"]
tasks = [$2]
test = ["open_close", "create_unlink", "chown", "write_truncate"]
[filesystems.ext4]
mkfs = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
mount = ["barrier=0", "noload"]
[filesystems.ext4-b]
type = "ext4"
mkfs = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
mount = ["barrier=0", "noload"]
$3
[backing]
kind = "tmpfs-loop"
image_size = "1GiB"
[workload]
kind = "lat_fs"
warmup = "50ms"
duration = "$DURATION"
repetitions = $REPETITIONS
max_reruns = 8
[compare]
arms = "fs"
pairs = { min = $4, max = $5 }
[gate]
threshold = "$THRESHOLD"
EOF
    echo "$work/$1.toml"
}

# A CPU limit of SLOW per task: one task gets SLOW of a CPU, two get twice that.
slow_limit() { # tasks
    local quota
    quota=$(awk -v s="$SLOW" -v t="$1" 'BEGIN { printf "%d", s * t * 100000 }')
    echo "cgroup = { \"cpu.max\" = \"$quota 100000\" }"
}

run() { # scenario-file out-dir -> run dir
    "$FSBENCH" run "$1" --quiet --out "$2" >/dev/null 2>>"$work/run.log" || true
    ls -d "$2"/*/* | head -1
}

# gate_rows RUN: one line per group: verdict mean ci_low ci_high (relative changes).
gate_rows() {
    "$FSBENCH" gate "$1" --threshold "$THRESHOLD" --json 2>/dev/null |
        jq -r '.report.rows[] | [.verdict, (.change.mean // "nan"), (.change.ci_low // "nan"), (.change.ci_high // "nan")] | map(tostring) | join(" ")' || true
}

# Per-pair log ratios and the unpaired spread of one paired run's groups:
# prints "sd_paired sd_unpaired n" per group, from the stored pairs (slot s of arm 0 with slot s of arm 1).
pair_spread() {
    jq -s -r '
      [ .[] | select(.pairing != null and .latfs != null) |
        { g: .pairing.group, arm: .pairing.arm,
          v: ( . as $c | [ .pairing.pairs[] | . as $p |
                 { slot: $p.slot,
                   v: ([ $c.latfs.repetitions[] | select((.round // 0) == $p.round) | select(.disturbance.disturbed != true) | .total_loops_per_ms ] | add / length) } ] ) } ]
      | group_by(.g)[] | select(length == 2) | sort_by(.arm)
      | (.[0].v | map({(.slot|tostring): .v}) | add) as $a
      | (.[1].v | map({(.slot|tostring): .v}) | add) as $b
      | [ $a | keys[] | select($b[.] != null) ] as $slots
      | [ $slots[] | (($b[.] / $a[.]) | log) ] as $d
      | [ $slots[] | ($a[.] | log) ] as $la | [ $slots[] | ($b[.] | log) ] as $lb
      | def sd(x): (x | add / length) as $m | ((x | map((. - $m) * (. - $m)) | add) / ((x | length) - 1)) | sqrt;
        if ($d | length) > 2 then "\(sd($d)) \((sd($la) * sd($la) + sd($lb) * sd($lb)) | sqrt) \($d | length)" else empty end
    ' "$1"/cells/*.json
}

start=$(date +%s)
echo "== reference: hog off, $REF_PAIRS pairs per group, B limited to $SLOW of a CPU per task"
declare -A ref
for t in 1 2; do
    r=$(run "$(scenario "ref-t$t" "$t" "$(slow_limit "$t")" "$REF_PAIRS" "$REF_PAIRS")" "$work/ref-t$t")
    i=0
    while read -r verdict mean lo hi; do
        ref[$t-$i]=$mean; i=$((i + 1))
        echo "  t$t group $i: $verdict $mean [$lo, $hi]"
    done < <(gate_rows "$r")
done

start_hog
aa_total=0; aa_decided_wrong=0; aa_unchanged=0; slow_total=0; slow_regressed=0; covered=0; covered_n=0
: > "$work/spread"
walls=()
for i in $(seq 1 "$RUNS"); do
    # A/A: the 8 groups in one run (G4 times it).
    s=$(date +%s)
    r=$(run "$(scenario "aa" "1, 2" "" "$MIN" "$MAX")" "$work/aa-$i")
    walls+=($(( $(date +%s) - s )))
    pair_spread "$r" >> "$work/spread"
    while read -r verdict _ _ _; do
        aa_total=$((aa_total + 1))
        case $verdict in
            regressed | improved) aa_decided_wrong=$((aa_decided_wrong + 1)) ;;
            unchanged) aa_unchanged=$((aa_unchanged + 1)) ;;
        esac
    done < <(gate_rows "$r")
    # Slowed: one run per task count, since the CPU limit scales with the tasks.
    for t in 1 2; do
        r=$(run "$(scenario "slow-t$t" "$t" "$(slow_limit "$t")" "$MIN" "$MAX")" "$work/slow-$i-t$t")
        g=0
        while read -r verdict _ lo hi; do
            slow_total=$((slow_total + 1))
            [ "$verdict" = regressed ] && slow_regressed=$((slow_regressed + 1))
            want=${ref[$t-$g]:-}
            if [ -n "$want" ] && [ "$want" != nan ]; then
                covered_n=$((covered_n + 1))
                awk -v w="$want" -v l="$lo" -v h="$hi" 'BEGIN { exit !(l <= w && w <= h) }' && covered=$((covered + 1))
            fi
            g=$((g + 1))
        done < <(gate_rows "$r")
    done
    echo "  run $i done ($(( $(date +%s) - start )) s so far)"
done
stop_hog

echo
awk '{ p += $1; u += $2; n++ } END { if (n) printf "G0: per-pair log-ratio spread %.1f%%, unpaired %.1f%% (median of %d groups: see spread file)\n", 100 * p / n, 100 * u / n, n; else print "G0: no pairs" }' "$work/spread"
echo "G1: A/A $aa_total groups: $aa_decided_wrong regressed or improved (target 0), $aa_unchanged unchanged ($(( aa_total ? 100 * aa_unchanged / aa_total : 0 ))%, target ≥ 90%)"
echo "G2: limited to $SLOW: $slow_regressed of $slow_total groups regressed (target ≥ 95%)"
echo "G3: the interval covered the reference in $covered of $covered_n groups (target ≥ 90%)"
echo "G4: wall time of each 8-group A/A paired run: ${walls[*]} s (target ≤ 600 s)"
echo "total wall time: $(( $(date +%s) - start )) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
