#!/usr/bin/env bash
# What the monitors cost, side by side in one sitting:
#
# 1. kernel-untar on ext4 (noload, barrier=0) over loop over tmpfs, the full-size
#    generated linux-2.5.63 tree: `fsbench run` with monitors on (the default) and
#    with `workload.monitors=false`, alternated ROUNDS times (who goes first alternates
#    too). Per iteration index, the ratio of medians of the iteration's elapsed time
#    (rm -rf + tar zxf + sync) on/off. Target: cost < 1%. The per-call cost from
#    `cargo bench --bench monitors` gives the same figure without the machine's noise.
# 2. lat_fs with `latency = "histogram"` against the default counted loop, alternated
#    ROUNDS times, 1 task, every test: ratio of median total_loops. Target >= 0.97.
#
# Usage: sudo benches/monitors.sh [ROUNDS]   (default 4). Needs root, mkfs.ext4.
# Knobs: ITERATIONS=3 DURATION=1s REPS=3; FSBENCH=path (a built binary: no build);
#        MICRO=0 skips the per-call bench; UNTAR=0 skips part 1;
#        BASELINE=path (an fsbench from before the monitors) adds part 3: the default
#        counted loop of FSBENCH against BASELINE's, alternated (target: unchanged).
set -euo pipefail

ROUNDS=${1:-4}
ITERATIONS=${ITERATIONS:-3}
DURATION=${DURATION:-1s}
REPS=${REPS:-3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "benches/monitors.sh: needs root (loop devices and mount)" >&2; exit 2; }
cd "$HERE"
if [ -z "${FSBENCH:-}" ]; then
    cargo build --release --quiet --bin fsbench
    FSBENCH=$HERE/target/release/fsbench
fi
WORK=$(mktemp -d /tmp/fsbench-monitors-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export XDG_CACHE_HOME=$HERE/target/fixture-cache-home

run() { # OUT_SUBDIR ARGS...
    local out=$WORK/$1; shift
    "${BIN:-$FSBENCH}" run --quiet --workdir "$WORK/work" --out "$out" "$@" >/dev/null 2>"$WORK/err" \
        || { cat "$WORK/err" >&2; exit 1; }
}

if [ "${MICRO:-1}" != 0 ]; then
    echo "== per call (cargo bench --bench monitors)"
    cargo bench --quiet --bench monitors 2>/dev/null
fi

for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="on off"; else order="off on"; fi
    if [ "${UNTAR:-1}" != 0 ]; then
        for m in $order; do
            flag=true; [ "$m" = off ] && flag=false
            run "untar-$m-$r" scenarios/kernel-untar.toml --only fs=ext4 \
                --set workload.iterations="$ITERATIONS" --set workload.monitors=$flag
        done
    fi
    for m in $order; do
        mode=histogram; [ "$m" = off ] && mode=mean
        run "latfs-$m-$r" scenarios/quickstart.toml --only fs=ext4,tasks=1 --set workload.latency=$mode \
            --set workload.warmup=300ms --set workload.duration="$DURATION" --set workload.repetitions="$REPS"
    done
    if [ -n "${BASELINE:-}" ]; then
        for m in $order; do
            bin=$FSBENCH; [ "$m" = off ] && bin=$BASELINE
            BIN=$bin run "base-$m-$r" scenarios/quickstart.toml --only fs=ext4,tasks=1 \
                --set workload.warmup=300ms --set workload.duration="$DURATION" --set workload.repetitions="$REPS"
        done
    fi
done

python3 - "$WORK" "$ROUNDS" <<'EOF'
import glob, json, os, statistics as st, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def cells(sub):
    return [json.load(open(p)) for p in glob.glob(f"{work}/{sub}/*/*/cells/*.json")]
per_it = {}
for m in ("on", "off"):
    for r in range(1, rounds + 1):
        for c in cells(f"untar-{m}-{r}"):
            for i, it in enumerate(c["steps"]["iterations"]):
                per_it.setdefault((m, i), []).append(sum(s["elapsed_us"] for s in it) / 1e6)
if per_it:
    print("== kernel-untar iteration elapsed, monitors on / off (median over rounds, per iteration)")
    ratios = []
    for i in sorted({i for (_, i) in per_it}):
        on, off = st.median(per_it[("on", i)]), st.median(per_it[("off", i)])
        spread = max(per_it[("off", i)]) / min(per_it[("off", i)])
        ratios.append(on / off)
        print(f"iteration {i+1}: on {on:.3f}s off {off:.3f}s ratio {on/off:.3f} (off max/min {spread:.2f})")
    print(f"median ratio over iterations: {st.median(ratios):.3f}")
def latfs(prefix, title, a, b):
    tl, rounds_of = {}, {}
    for m in ("on", "off"):
        for r in range(1, rounds + 1):
            for c in cells(f"{prefix}-{m}-{r}"):
                if c["status"] != "ok":
                    continue
                for rep in c["latfs"]["repetitions"]:
                    tl.setdefault((m, c["params"]["test"]), []).append(rep["total_loops_per_ms"])
                    rounds_of.setdefault((m, c["params"]["test"], r), []).append(rep["total_loops_per_ms"])
    if not tl:
        return
    print(title)
    for t in ("open_close", "create_unlink", "chown", "write_truncate"):
        if ("on", t) in tl and ("off", t) in tl:
            h, p = st.median(tl[("on", t)]), st.median(tl[("off", t)])
            cv = st.pstdev(tl[("off", t)]) / st.mean(tl[("off", t)])
            # Paired by round (the two ran back to back): drift between rounds cancels.
            paired = [st.median(rounds_of[("on", t, r)]) / st.median(rounds_of[("off", t, r)])
                      for r in range(1, rounds + 1) if ("on", t, r) in rounds_of and ("off", t, r) in rounds_of]
            print(f"{t}: {a} {h:.1f} {b} {p:.1f} ratio {h/p:.3f}, paired by round {st.median(paired):.3f} "
                  f"({b} CV {cv*100:.1f}%, n={len(tl[('off', t)])})")
latfs("latfs", "== lat_fs total_loops, histogram / mean (median over rounds x repetitions)", "histogram", "mean")
latfs("base", "== lat_fs default loop, this build / BASELINE", "this", "baseline")
EOF
echo "load average during the run: $(cut -d' ' -f1-3 /proc/loadavg)"
