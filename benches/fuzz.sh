#!/bin/sh
# Nightly fuzzing of fsbench's front doors, longer than CI's: mutated scenarios (with
# --set overrides) and mutated result files (hostile numbers, Markdown, terminal escapes,
# 65,536-character strings) read by report, compare, gate and merge. Any panic fails.
#
#   benches/fuzz.sh [CASES]     # default 5000 cases per fuzzer
#
# Prints the cases run per fuzzer and the wall-clock time; exit status is the test's.
set -eu
cases="${1:-5000}"
cd "$(dirname "$0")/.."
start=$(date +%s)
FSBENCH_FUZZ_CASES="$cases" cargo test --release --test it -- --test-threads=2 \
    fuzz_front_door::mutated_scenarios_and_overrides_never_panic_and_rejections_are_located \
    fuzz_front_door::mutated_result_files_never_panic_in_report_compare_gate_or_merge
echo "fuzz: $cases cases per fuzzer, 0 panics, $(( $(date +%s) - start )) s"
