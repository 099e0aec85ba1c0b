#!/usr/bin/env bash
# A/A gate benchmark: do unpaired gates of one-round runs stay quiet on a machine with a
# noisy neighbour, and does `gate --history` catch a real slowdown?
#
# RUNS runs of one 4-cell lat_fs scenario (ext4, the four tests, 1 task, one round each)
# while an intermittent CPU hog runs on one core (busy HOG_ON_S seconds, idle HOG_OFF_S,
# pinned with taskset), then:
#   U0  unpaired A/A gates of consecutive runs (1 vs 2, 3 vs 4, ...) at THRESHOLD with no
#       calibration: every cell must be `inconclusive` (never regressed or improved);
#   H0  `gate --history HISTORY` for each run after the first HISTORY: 0 `regressed`;
#   H1  one more run with fsbench in a cgroup v1 CPU quota (SLOW_QUOTA µs per 100 ms),
#       gated with --history HISTORY: `regressed`, with the slowdown it measured;
#   U1  `fsbench calibrate` (CAL_RUNS A/A runs, under the hog), then the U0 gates again:
#       0 regressed or improved, and how many came out `unchanged`.
# Needs root (loop devices, mount, cgroups). Not a test: its figures depend on the machine
# and go into benches/README.md. Run it on an otherwise idle machine.
#
# Knobs (environment): RUNS=16 HISTORY=10 THRESHOLD=5% SLOW_QUOTA=70000 CAL_RUNS=3
#                      HOG_ON_S=2 HOG_OFF_S=2 HOG_CPU=1 DURATION=150ms REPETITIONS=3
#                      FSBENCH=target/release/fsbench KEEP=0 (keep the results directory)
set -euo pipefail

RUNS=${RUNS:-16}
HISTORY=${HISTORY:-10}
THRESHOLD=${THRESHOLD:-5%}
SLOW_QUOTA=${SLOW_QUOTA:-70000}
CAL_RUNS=${CAL_RUNS:-3}
DURATION=${DURATION:-150ms}
REPETITIONS=${REPETITIONS:-3}
KEEP=${KEEP:-0}

source "$(dirname "$0")/hog.sh"
bench_setup gate_aa.sh "loop device, mount, cgroups"

work=$(mktemp -d /tmp/fsbench-gate-aa.XXXXXX)
slow_cg=""
cleanup() {
    stop_hog
    [ -n "$slow_cg" ] && rmdir "$slow_cg" 2>/dev/null || true
    [ "$KEEP" = 1 ] && echo "gate_aa.sh: results kept in $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat > "$work/aa.toml" <<EOF
schema = 1
name = "aa"
description = "A/A gate benchmark: one round per run"
[matrix]
fs = ["ext4"]
layout = ["S"]
tasks = [1]
test = ["open_close", "create_unlink", "chown", "write_truncate"]
[filesystems.ext4]
mkfs = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
mount = ["barrier=0", "noload"]
[backing]
kind = "tmpfs-loop"
image_size = "256MiB"
[workload]
kind = "lat_fs"
duration = "$DURATION"
repetitions = $REPETITIONS
EOF
res="$work/res"
label() { printf 'a%02d' "$1"; }
one_run() { "$FSBENCH" run "$work/aa.toml" --out "$res" --label "$1" --quiet >/dev/null 2>&1 || true; }
# verdicts FILE: one verdict per cell of a gate's JSON.
# A gate that printed no JSON (bad input, exit 2) counts as one `error`.
verdicts() {
    python3 -c 'import json,sys
try: rows = json.load(open(sys.argv[1]))["report"]["rows"]
except Exception: rows = [{"verdict": "error"}]
[print(r["verdict"]) for r in rows]' "$1"
}
# dir_of LABEL: the run directory labelled LABEL.
dir_of() { dirname "$(grep -l "\"label\": \"$1\"" "$res"/aa/*/run.json | head -1)"; }
count() { grep -c "^$1\$" "$2" || true; }

start_hog
echo "== $RUNS runs under the hog"
for i in $(seq 1 "$RUNS"); do one_run "$(label "$i")"; done

echo "== U0: unpaired A/A gates, no calibration"
: > "$work/u0"
for i in $(seq 1 2 $((RUNS - 1))); do
    "$FSBENCH" gate --baseline "$(dir_of "$(label "$i")")" --candidate "$(dir_of "$(label $((i + 1)))")" \
        --threshold "$THRESHOLD" --json > "$work/g.json" 2>/dev/null || true
    verdicts "$work/g.json" >> "$work/u0"
done

echo "== H0: gate --history $HISTORY"
: > "$work/h0"
for i in $(seq $((HISTORY + 1)) "$RUNS"); do
    "$FSBENCH" gate --history "$HISTORY" --candidate "$(dir_of "$(label "$i")")" \
        --threshold "$THRESHOLD" --json > "$work/g.json" 2>/dev/null || true
    verdicts "$work/g.json" >> "$work/h0"
done

echo "== H1: one run in a CPU quota of $SLOW_QUOTA us per 100 ms"
slow_cg=/sys/fs/cgroup/cpu/fsbench-gate-aa-slow
[ -d /sys/fs/cgroup/cpu ] || slow_cg=/sys/fs/cgroup/fsbench-gate-aa-slow
mkdir -p "$slow_cg"
if [ -e "$slow_cg/cpu.cfs_quota_us" ]; then
    echo 100000 > "$slow_cg/cpu.cfs_period_us"; echo "$SLOW_QUOTA" > "$slow_cg/cpu.cfs_quota_us"
else
    echo "$SLOW_QUOTA 100000" > "$slow_cg/cpu.max"
fi
sh -c "echo \$\$ > $slow_cg/cgroup.procs && exec $FSBENCH run $work/aa.toml --out $res --label slow --quiet" >/dev/null 2>&1 || true
"$FSBENCH" gate --history "$HISTORY" --candidate "$(dir_of slow)" --threshold "$THRESHOLD" --json > "$work/h1.json" 2>/dev/null || true
python3 - "$work/h1.json" <<'PY' || echo "H1: the gate printed no JSON"
import json, sys
for r in json.load(open(sys.argv[1]))["report"]["rows"]:
    b, c = r["baseline"]["mean"], r["candidate"]["mean"]
    print(f'H1 {r["name"]}: {r["verdict"]}, candidate/history {c / b:.3f}')
PY

echo "== U1: calibrate ($CAL_RUNS A/A runs), then the U0 gates again"
"$FSBENCH" calibrate "$work/aa.toml" --runs "$CAL_RUNS" --results "$res" --quiet >/dev/null 2>&1 || true
: > "$work/u1"
for i in $(seq 1 2 $((RUNS - 1))); do
    "$FSBENCH" gate --baseline "$(dir_of "$(label "$i")")" --candidate "$(dir_of "$(label $((i + 1)))")" \
        --threshold "$THRESHOLD" --json > "$work/g.json" 2>/dev/null || true
    verdicts "$work/g.json" >> "$work/u1"
done
stop_hog

for f in u0 h0 u1; do
    n=$(wc -l < "$work/$f")
    echo "$f: $n comparisons: regressed $(count regressed "$work/$f"), improved $(count improved "$work/$f"), unchanged $(count unchanged "$work/$f"), inconclusive $(count inconclusive "$work/$f"), missing $(count missing "$work/$f"), errors $(count error "$work/$f")"
done
