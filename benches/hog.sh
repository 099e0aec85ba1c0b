# Sourced by the benchmarks that run beside a noisy neighbour (noise.sh, paired.sh,
# gate_aa.sh): the root check, the fsbench binary, and the intermittent CPU hog.
#
#   bench_setup NAME WHY   exit 2 unless root (WHY: what needs it); cd to the repository;
#                          FSBENCH = $FSBENCH or a release build, as an absolute path
#   start_hog / stop_hog   one core (HOG_CPU) busy HOG_ON_S seconds, idle HOG_OFF_S, in a
#                          loop; its own process group, so stop_hog stops it and nothing else

HOG_ON_S=${HOG_ON_S:-2}
HOG_OFF_S=${HOG_OFF_S:-2}
HOG_CPU=${HOG_CPU:-1}
hog=""

bench_setup() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "$1: needs root ($2)" >&2
        exit 2
    fi
    cd "$(dirname "${BASH_SOURCE[0]}")/.."
    FSBENCH=${FSBENCH:-target/release/fsbench}
    [ -x "$FSBENCH" ] || cargo build --release
    FSBENCH=$(realpath "$FSBENCH")
}

start_hog() {
    setsid bash -c "while :; do timeout $HOG_ON_S taskset -c $HOG_CPU sh -c 'while :; do :; done'; sleep $HOG_OFF_S; done" &
    hog=$!
}

stop_hog() {
    [ -n "$hog" ] && kill -- -"$hog" 2>/dev/null || true
    hog=""
}
