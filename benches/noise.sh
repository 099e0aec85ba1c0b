#!/usr/bin/env bash
# Noise benchmark: can the gate tell noise from change on a machine with a noisy neighbour?
#
# Runs PAIRS A/A pairs (the same build, the same scenario, back to back) of a
# quickstart-sized lat_fs scenario (ext4 over loop over tmpfs, layout S, 1 and 2
# tasks, the four tests; ROUNDS rounds of REPETITIONS repetitions, so the gate compares
# round means and its interval covers the drift between freshly made filesystems and
# over the run; the repetitions of one round agree with each other far better than
# rounds do, which is why the rounds get the budget) while an
# intermittent CPU hog runs on one core (busy HOG_ON_S seconds, idle HOG_OFF_S
# seconds, pinned with taskset). Each pair is gated at THRESHOLD. Then the same
# pairs are gated again with every candidate sample scaled by SCALE (a synthetic
# 20% slowdown). Prints per pair: the gate's counts, disturbed repetitions and
# reruns; and the totals:
#   A/A:    regressed must be 0 in every pair;
#   scaled: every compared cell must be regressed.
# Needs root (loop device, mount, per-task uids). Not a test: its figures depend on
# the machine and go into the README's Performance table.
#
# Knobs (environment): PAIRS=5 THRESHOLD=5% SCALE=0.8 HOG_ON_S=2 HOG_OFF_S=2 HOG_CPU=1 ROUNDS=8
#                      REPETITIONS=3 (ROUNDS=1 REPETITIONS='{ min = 3, max = 10, ci = "2%" }':
#                      repetitions only, to see the drift between runs such a gate misses)
#                      DISTURBANCE= (workload.disturbance: unset = the scenario default 25%,
#                      "off" to see what the gate does without disturbance detection)
#                      FSBENCH=target/release/fsbench KEEP=0 (keep the results directory)
set -euo pipefail

PAIRS=${PAIRS:-5}
THRESHOLD=${THRESHOLD:-5%}
SCALE=${SCALE:-0.8}
KEEP=${KEEP:-0}
ROUNDS=${ROUNDS:-8}
REPETITIONS=${REPETITIONS:-3}
DISTURBANCE=${DISTURBANCE:-}

source "$(dirname "$0")/hog.sh"
bench_setup noise.sh "loop device, mount, per-task uids"

work=$(mktemp -d /tmp/fsbench-noise-bench.XXXXXX)
cleanup() {
    # Only what this script started: the hog's process group, then its files.
    stop_hog
    [ "$KEEP" = 1 ] && echo "noise.sh: results kept in $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat > "$work/noise.toml" <<EOF
schema = 1
name = "noise"
description = "quickstart-sized lat_fs with adaptive repetitions, for the noise benchmark"
[matrix]
fs = ["ext4"]
layout = ["S"]
tasks = [1, 2]
test = ["open_close", "create_unlink", "chown", "write_truncate"]
[filesystems.ext4]
mkfs = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
mount = ["barrier=0", "noload"]
[backing]
kind = "tmpfs-loop"
image_size = "1GiB"
[workload]
kind = "lat_fs"
warmup = "50ms"
duration = "200ms"
repetitions = ${REPETITIONS}
rounds = ${ROUNDS}
max_reruns = 4
EOF

start_hog

set_args=()
[ -n "$DISTURBANCE" ] && set_args=(--set "workload.disturbance=$DISTURBANCE")
run() { # label out-dir
    "$FSBENCH" run "$work/noise.toml" --quiet --label "$1" --out "$2" "${set_args[@]}" >/dev/null 2>>"$work/run.log"
    echo "$2"/noise/*
}

# Disturbed repetitions and reruns of one run directory, as "disturbed reruns total".
disturbance_of() {
    jq -s '[ .[] | .latfs // empty ] |
        [ ([ .[].repetitions[] | select(.disturbance.disturbed == true) ] | length),
          ([ .[].reruns // 0 ] | add),
          ([ .[].repetitions[] ] | length) ] | map(tostring) | join(" ")' -r "$1"/cells/*.json
}

# A copy of a run with every lat_fs sample scaled by SCALE.
scaled_copy() { # run-dir dest
    cp -r "$1" "$2"
    for f in "$2"/cells/*.json; do
        jq --argjson k "$SCALE" 'if .latfs then .latfs.repetitions |= map(.total_loops_per_ms *= $k) else . end' \
            "$f" > "$f.tmp" && mv "$f.tmp" "$f"
    done
}

gate_counts() { # baseline candidate -> "regressed improved unchanged inconclusive missing"
    local line
    line=$("$FSBENCH" gate --baseline "$1" --candidate "$2" --threshold "$THRESHOLD" 2>/dev/null | grep '^gate: ' || true)
    echo "$line" | sed -E 's/gate: ([0-9]+) regressed, ([0-9]+) improved, ([0-9]+) unchanged, ([0-9]+) inconclusive, ([0-9]+) missing/\1 \2 \3 \4 \5/'
}

printf '%-5s %-34s %-34s %-10s %-10s %s\n' pair "A/A: regr impr unch inconcl miss" "scaled x$SCALE: regr impr unch inc miss" "disturbed" "reruns" "reps"
tot_aa_regr=0; tot_sc_regr=0; tot_sc_cells=0; tot_dist=0; tot_rerun=0; tot_reps=0
start=$(date +%s)
for i in $(seq 1 "$PAIRS"); do
    a=$(run A "$work/p$i-a")
    b=$(run B "$work/p$i-b")
    scaled_copy "$b" "$work/p$i-b-scaled"
    read -r r1 i1 u1 n1 m1 <<<"$(gate_counts "$a" "$b")"
    read -r r2 i2 u2 n2 m2 <<<"$(gate_counts "$a" "$work/p$i-b-scaled")"
    read -r da ra na <<<"$(disturbance_of "$a")"
    read -r db rb nb <<<"$(disturbance_of "$b")"
    printf '%-5s %-34s %-34s %-10s %-10s %s\n' "$i" "$r1 $i1 $u1 $n1 $m1" "$r2 $i2 $u2 $n2 $m2" "$((da + db))" "$((ra + rb))" "$((na + nb))"
    tot_aa_regr=$((tot_aa_regr + r1)); tot_sc_regr=$((tot_sc_regr + r2)); tot_sc_cells=$((tot_sc_cells + r2 + i2 + u2 + n2))
    tot_dist=$((tot_dist + da + db)); tot_rerun=$((tot_rerun + ra + rb)); tot_reps=$((tot_reps + na + nb))
done
echo
echo "A/A pairs: $tot_aa_regr regressed over $PAIRS pairs (target 0)"
echo "scaled x$SCALE: $tot_sc_regr of $tot_sc_cells compared cells regressed (target all)"
echo "disturbed repetitions: $tot_dist of $tot_reps, reruns: $tot_rerun"
shares=$(cat "$work"/p*-[ab]/noise/*/cells/*.json | jq -s '[ .[] | .latfs // empty | .repetitions[] | .disturbance.share // empty ] | sort |
    if length == 0 then "not measured" else "median \(.[length/2|floor]*100|round)%, max \(.[-1]*100|round)% of a CPU" end' -r)
echo "foreign + steal CPU during repetitions: $shares"
echo "wall time: $(( $(date +%s) - start )) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
