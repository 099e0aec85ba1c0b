#!/usr/bin/env bash
# Real bisection benchmark: does `fsbench bisect` name the right kernel in qemu?
#
# N candidates (8 by default) built from one real Debian kernel image: V0 .. V(K-1) booted
# plainly, VK .. V(N-1) with SLOW_CMDLINE (slub_debug=FZPU by default: SLUB's sanity checks,
# red zones, poisoning and owner tracking on every allocation, which costs lat_fs open_close
# about 70% of its loops under TCG; measured by tests/it/qemu_bisect.rs and again by this
# run's endpoints step). The true culprit is VK. One open_close cell on ext4, threshold
# THRESHOLD, pairs MIN..MAX a step. It runs `fsbench bisect --kernels FILE --json`, checks the
# named culprit is VK (exit 1 otherwise), and prints the steps, the boots, the wall time and
# the load average before and after.
#
# Needs root (loop device, mount), qemu-system-x86_64 and a kernel image (KERNEL, else the
# newest under target/kernels/, as scripts/test.sh downloads it). Not a test: it takes 15–40
# minutes under TCG, and its figures go into benches/README.md.
#
# Knobs (environment): N=8 K=5 SLOW_CMDLINE=slub_debug=FZPU THRESHOLD=50% MIN=4 MAX=32
#                      DURATION=500ms REPETITIONS=3 KERNEL=… FSBENCH=target/release/fsbench
#                      KEEP=0 (keep the results directory)
set -euo pipefail

N=${N:-8}
K=${K:-5}
SLOW_CMDLINE=${SLOW_CMDLINE:-slub_debug=FZPU}
THRESHOLD=${THRESHOLD:-50%}
MIN=${MIN:-4}
MAX=${MAX:-32}
DURATION=${DURATION:-500ms}
REPETITIONS=${REPETITIONS:-3}
KEEP=${KEEP:-0}

source "$(dirname "$0")/hog.sh"
bench_setup bisect_real.sh "loop device, mount, qemu"

if [ "$K" -lt 1 ] || [ "$K" -ge "$N" ]; then
    echo "bisect_real.sh: K=$K must be in 1..$((N - 1)) (V0 is the good endpoint, V$((N - 1)) the bad one)" >&2
    exit 2
fi
KERNEL=${KERNEL:-$(ls target/kernels/*/boot/vmlinuz-* 2>/dev/null | sort -V | tail -1 || true)}
if [ -z "$KERNEL" ] || [ ! -f "$KERNEL" ]; then
    echo "bisect_real.sh: no kernel image (set KERNEL, or run scripts/test.sh as root once to download one)" >&2
    exit 2
fi
KERNEL=$(realpath "$KERNEL")

work=$(mktemp -d /tmp/fsbench-bisect-bench.XXXXXX)
cleanup() {
    [ "$KEEP" = 1 ] && echo "bisect_real.sh: results kept in $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat > "$work/bisect-real.toml" <<EOF
schema = 1
name = "bisect-real"
description = "real bisection benchmark: one open_close cell"
[matrix]
fs = ["ext4"]
layout = ["S"]
quota = ["off"]
tasks = [1]
test = ["open_close"]
[filesystems.ext4]
mkfs = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
[backing]
kind = "tmpfs-loop"
image_size = "64MiB"
[workload]
kind = "lat_fs"
warmup = "50ms"
duration = "$DURATION"
repetitions = $REPETITIONS
disturbance = "off"
[gate]
threshold = "$THRESHOLD"
EOF

{
    echo "# $N candidates: V0..V$((K - 1)) plain, V$K..V$((N - 1)) with $SLOW_CMDLINE"
    for i in $(seq 0 $((N - 1))); do
        if [ "$i" -lt "$K" ]; then
            echo "V$i=$KERNEL"
        else
            echo "V$i=$KERNEL,cmdline=$SLOW_CMDLINE"
        fi
    done
} > "$work/candidates.txt"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)
set +e
"$FSBENCH" bisect "$work/bisect-real.toml" --kernels "$work/candidates.txt" --out "$work/results" \
    --workdir "$work/work" --min-pairs "$MIN" --max-pairs "$MAX" --json > "$work/bisect.json" 2> "$work/stderr"
code=$?
set -e
wall=$(($(date +%s) - start))
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

if [ ! -s "$work/bisect.json" ]; then
    echo "bisect_real.sh: fsbench bisect printed no log (exit $code):" >&2
    tail -20 "$work/stderr" >&2
    exit 1
fi

python3 - "$work/bisect.json" "$K" "$code" "$wall" "$load_before" "$load_after" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
k, code, wall = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
steps = doc["steps"]
pairs = sum(s["measure"]["pairs"] + s["measure"]["dropped"] for s in steps)
print(f"bisect_real.sh: {len(doc['candidates'])} candidates, true culprit V{k}; "
      f"threshold {doc['threshold'] * 100:.0f}%, {doc['min_pairs']}..{doc['max_pairs']} pairs a step")
for i, s in enumerate(steps, 1):
    m = s["measure"]
    ratio, lo, hi = m.get("ratio"), m.get("ratio_low"), m.get("ratio_high")
    shown = f"ratio {ratio:.3f} [{lo:.3f}, {hi:.3f}]" if None not in (ratio, lo, hi) else "no ratio"
    print(f"  {i}. {s['role']:<9} V{s['candidate']} against V{s['baseline']}: {m['verdict']}, {shown}, "
          f"{m['pairs']} pairs ({m['dropped']} dropped), {s['seconds']:.0f} s")
culprit = doc.get("culprit")
print(f"found: {culprit} (true: V{k}); exit {code}")
print(f"steps: {len(steps)}, pairs: {pairs}, guest boots: {2 * pairs} (2 a pair; retries of a failed boot not counted), wall time: {wall // 60}m{wall % 60:02d}s "
      f"({wall / max(2 * pairs, 1):.1f} s a boot)")
print(f"load average before: {sys.argv[5]}, after: {sys.argv[6]}")
sys.exit(0 if culprit == f"V{k}" else 1)
PY
