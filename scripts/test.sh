#!/usr/bin/env bash
# Run the whole fsbench test suite. As root it first installs what the real-kernel
# tests need when it is missing (mkfs tools, quota tools, strace, GNU tar/time, qemu,
# Slurm, headless Chromium for the HTML report, and a Debian kernel with quota support
# for the qemu tests), and makes root-only tests fail instead of skip.
#
#   scripts/test.sh [CARGO TEST ARGS]   install what is missing (as root), then test
#   scripts/test.sh --check             only say what is missing (exit 1 if anything is); install and test nothing
set -euo pipefail
cd "$(dirname "$0")/.."

# The Slurm integration test (tests/it/slurm_array.rs) starts its own munged, slurmctld and slurmd.
# The HTML report test (tests/it/report_html.rs) renders pages in headless Chromium.
# The fio workload's tests (tests/it/fio_run.rs) run fio itself; the profile tests
# (tests/it/profile_run.rs) run perf (linux-perf). The dbench loadfile test
# (tests/it/ops_dbench.rs) replays the dbench package's /usr/share/dbench/client.txt.
packages=(e2fsprogs xfsprogs btrfs-progs quota strace tar gzip time qemu-system-x86 munge slurmctld slurmd slurm-client chromium fio linux-perf dbench)
commands=(mkfs.ext4 mkfs.xfs mkfs.btrfs quotacheck strace tar gzip /usr/bin/time qemu-system-x86_64 /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch chromium fio perf dbench)

missing=()
for i in "${!commands[@]}"; do
    command -v "${commands[$i]}" >/dev/null 2>&1 || missing+=("${packages[$i]}")
done
have_kernel=no
ls target/kernels/*/boot/vmlinuz-* >/dev/null 2>&1 && have_kernel=yes

if [ "${1:-}" = "--check" ]; then
    # Exit 1 when anything the tests need is missing, so a script can act on the answer.
    missing_any=no
    if [ ${#missing[@]} -gt 0 ]; then
        echo "test.sh: missing Debian packages: ${missing[*]}"
        missing_any=yes
    fi
    if [ "$have_kernel" = no ]; then
        echo "test.sh: missing: a Debian kernel under target/kernels/ for the qemu tests (downloaded with apt-get download, unpacked there)"
        missing_any=yes
    fi
    [ "$(id -u)" = 0 ] || echo "test.sh: not root: tests that need tmpfs, loop devices, mkfs and mount would be ignored"
    if [ "$missing_any" = yes ]; then
        echo "test.sh: something the tests need is missing: as root, \`scripts/test.sh\` installs it"
        exit 1
    fi
    echo "test.sh: everything the tests need is installed"
    exit 0
fi

if [ "$(id -u)" = 0 ]; then
    if [ ${#missing[@]} -gt 0 ]; then
        echo "test.sh: will install with apt-get: ${missing[*]} (run \`scripts/test.sh --check\` to only list them)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    # A Debian kernel with quota format v2 for the qemu tests (this host's kernel
    # lacks it), unpacked once into target/kernels/ (no depmod needed: fsbench
    # reads module dependencies from the .ko files when modules.dep is missing).
    if [ "$have_kernel" = no ]; then
        pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -1)
        if [ -z "$pkg" ]; then
            apt-get update -qq
            pkg=$(apt-cache depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -1)
        fi
        echo "test.sh: downloading $pkg for the qemu tests" >&2
        mkdir -p target/kernels
        (cd target/kernels && apt-get download -q "$pkg" >/dev/null 2>&1 && dpkg-deb -x "$pkg"_*.deb "$pkg" && rm -f "$pkg"_*.deb)
    fi
    # As root every real-kernel test must run: a skip is a failure.
    export FSBENCH_REQUIRE_ROOT_TESTS=1
else
    echo "test.sh: not root: tests that need tmpfs, loop devices, mkfs and mount are ignored (counted as skipped below)" >&2
fi

# The newest kernel image under target/kernels/, for tests/it/qemu_*.rs.
kernel=$(ls target/kernels/*/boot/vmlinuz-* 2>/dev/null | sort -V | tail -1 || true)
if [ -n "$kernel" ]; then
    export FSBENCH_TEST_KERNEL="$PWD/$kernel"
fi

# Formatting is part of the contract: fail early, with the fix, rather than review by hand.
if ! cargo fmt --version >/dev/null 2>&1; then
    echo "test.sh: rustfmt is not installed (rustup component add rustfmt): formatting not checked" >&2
elif ! cargo fmt --check >/dev/null 2>&1; then
    echo "test.sh: the tree is not formatted: run \`cargo fmt\` and commit" >&2
    cargo fmt --check 2>&1 | head -40 >&2
    exit 1
fi

# Lints too, for the same reason (the tests build with the same flags, so this costs a check build).
if ! cargo clippy --version >/dev/null 2>&1; then
    echo "test.sh: clippy is not installed (rustup component add clippy): lints not checked" >&2
elif ! cargo clippy --locked --all-targets --quiet -- -D warnings; then
    echo "test.sh: clippy found the warnings above: fix them and commit" >&2
    exit 1
fi

# Keep cargo's output as it is, then close with the totals over every test binary
# (cargo's own last line is the doc-test binary's, which has no tests of its own).
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --locked "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) s += $i } }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
exit "$status"
