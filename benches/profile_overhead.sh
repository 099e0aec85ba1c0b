#!/usr/bin/env bash
# Profile overhead benchmark (issue #39): are a profiled run's timed members slowed?
# An A/A paired run (arm B's filesystem identical to arm A's) of lat_fs cells TESTS at 1
# task, once with `profile = "cpu"` (the first pairs of each group also run one uncounted
# profiled repetition per member) and once without; each gated on its own (`gate RUN`) at
# THRESHOLD. Target: every group `unchanged` with the profile on, as with it off (a
# profiled member between timed ones must not bias either arm), and the run-to-run ratio
# of the arms' means (profile on / off) is printed for each cell.
# Needs root (loop device, mount, perf). Not a test: it goes into benches/README.md.
#
# Knobs (environment): TESTS="chown write_truncate" THRESHOLD=2% MIN=6 MAX=16 DURATION=300ms
#                      REPETITIONS=2 FSBENCH=target/release/fsbench KEEP=0
set -euo pipefail

TESTS=${TESTS:-chown write_truncate}
THRESHOLD=${THRESHOLD:-2%}
MIN=${MIN:-6}
MAX=${MAX:-16}
DURATION=${DURATION:-300ms}
REPETITIONS=${REPETITIONS:-2}
KEEP=${KEEP:-0}

source "$(dirname "$0")/hog.sh"
bench_setup profile_overhead.sh "loop device, mount, perf"

work=$(mktemp -d /tmp/fsbench-profile-overhead.XXXXXX)
cleanup() { [ "$KEEP" = 1 ] && echo "profile_overhead.sh: results kept in $work" >&2 || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

tests=$(printf '"%s", ' $TESTS)
cat > "$work/aa.toml" <<EOF
schema = 1
name = "aa"
[matrix]
fs = ["a", "b"]
layout = ["S"]
tasks = [1]
test = [${tests%, }]
[filesystems.a]
type = "ext4"
mount = ["barrier=0"]
[filesystems.b]
type = "ext4"
mount = ["barrier=0"]
[backing]
kind = "tmpfs-loop"
image_size = "64MiB"
[workload]
kind = "lat_fs"
warmup = "20ms"
duration = "$DURATION"
repetitions = $REPETITIONS
[compare]
arms = "fs"
pairs = { min = $MIN, max = $MAX }
[gate]
threshold = "$THRESHOLD"
EOF

for mode in off on; do
    set -- "$FSBENCH" run "$work/aa.toml" --out "$work/$mode" --quiet
    [ "$mode" = on ] && set -- "$@" --profile
    start=$(date +%s)
    "$@" >/dev/null 2>"$work/$mode.err"
    run=$(ls -d "$work/$mode"/*/*/ | tail -1)
    echo "profile $mode: $(( $(date +%s) - start )) s"
    "$FSBENCH" gate "$run" > "$work/gate-$mode.txt" || true
    grep -E "^(unchanged|regressed|improved|inconclusive)|verdict" "$work/gate-$mode.txt" | head -20 || cat "$work/gate-$mode.txt"
done
