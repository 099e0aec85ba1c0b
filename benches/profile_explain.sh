#!/usr/bin/env bash
# Profile explanation benchmark (issue #39): does the paired profile diff explain a real
# change? RUNS paired runs of lat_fs write_truncate, arm A ext4 data=ordered, arm B ext4
# data=journal (both barrier=0), PAIRS pairs each (every pair profiled, both arms, one
# uncounted repetition per member), DURATION windows. A run counts as explained when its
# `report`'s "Profile diff of S-qoff-t1-write_truncate (ordered → journal)" lists the
# journalled write path (ext4_journalled_write_end or a jbd2_ function) among its top 10
# grown functions AND the delayed-allocation path (an ext4_da_ function) among the shrunk.
# Target: >= 9 of 10 runs. Prints one line per run and the count.
# Needs root (loop device, mount, perf). Not a test: it goes into benches/README.md.
#
# Knobs (environment): RUNS=10 PAIRS=5 DURATION=1s FSBENCH=target/release/fsbench KEEP=0
#                      REPORTS=DIR (keep each run's report there)
set -euo pipefail

RUNS=${RUNS:-10}
PAIRS=${PAIRS:-5}
DURATION=${DURATION:-1s}
KEEP=${KEEP:-0}

source "$(dirname "$0")/hog.sh"
bench_setup profile_explain.sh "loop device, mount, perf"

work=$(mktemp -d /tmp/fsbench-profile-bench.XXXXXX)
cleanup() { [ "$KEEP" = 1 ] && echo "profile_explain.sh: results kept in $work" >&2 || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

cat > "$work/arms.toml" <<EOF
schema = 1
name = "journal-vs-ordered"
[matrix]
fs = ["ordered", "journal"]
layout = ["S"]
tasks = [1]
test = ["write_truncate"]
[filesystems.ordered]
type = "ext4"
mount = ["barrier=0", "data=ordered"]
[filesystems.journal]
type = "ext4"
mount = ["barrier=0", "data=journal"]
[backing]
kind = "tmpfs-loop"
image_size = "64MiB"
[workload]
kind = "lat_fs"
warmup = "20ms"
duration = "$DURATION"
repetitions = 1
disturbance = "off"
profile = "cpu"
[compare]
arms = "fs"
pairs = { min = $PAIRS, max = $PAIRS }
[gate]
threshold = "5%"
EOF

explained=0
for i in $(seq 1 "$RUNS"); do
    start=$(date +%s)
    "$FSBENCH" run "$work/arms.toml" --out "$work/results" --quiet >/dev/null 2>"$work/err"
    run=$(ls -d "$work"/results/*/*/ | tail -1)
    "$FSBENCH" report "$run" > "$work/report.txt"
    verdict=$(python3 - "$work/report.txt" <<'PY'
import sys
text = open(sys.argv[1]).read()
at = text.find("Profile diff of S-qoff-t1-write_truncate (ordered → journal)")
if at < 0:
    print("no-diff"); sys.exit()
sec = text[at:]
nxt = sec.find("Profile diff of", 10)
sec = sec if nxt < 0 else sec[:nxt]
def table(title):
    i = sec.find(title)
    if i < 0:
        return []
    rows = sec[i:].split("\n\n")[0].splitlines()[1:]
    return [r.split()[0] for r in rows if r.strip()]
grown, shrunk = table("function (grew)")[:10], table("function (shrank)")
j = [f for f in grown if f == "ext4_journalled_write_end" or f.startswith("jbd2_")]
d = [f for f in shrunk if f.startswith("ext4_da_")]
print(("yes" if j and d else "no"), "grown:", ",".join(j) or "-", "shrunk:", ",".join(d[:3]) or "-")
PY
)
    [ "${verdict%% *}" = yes ] && explained=$((explained + 1))
    echo "run $i: $verdict ($(( $(date +%s) - start )) s)"
    cp "$work/report.txt" "${REPORTS:-$work}/report-$i.txt" 2>/dev/null || true
    rm -rf "$run"
done
echo "explained: $explained of $RUNS runs"
