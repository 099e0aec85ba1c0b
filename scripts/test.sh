#!/usr/bin/env bash
# Run the whole fsbench test suite. As root it first installs the system packages
# the real-kernel tests need (mkfs tools, quota tools, strace, GNU tar/time) when
# they are missing, and makes root-only tests fail instead of skip.
set -euo pipefail
cd "$(dirname "$0")/.."

# The Slurm integration test (tests/slurm_array.rs) starts its own munged, slurmctld and slurmd.
packages=(e2fsprogs xfsprogs btrfs-progs quota strace tar gzip time munge slurmctld slurmd slurm-client)
commands=(mkfs.ext4 mkfs.xfs mkfs.btrfs quotacheck strace tar gzip /usr/bin/time /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch)

if [ "$(id -u)" = 0 ]; then
    missing=()
    for i in "${!commands[@]}"; do
        command -v "${commands[$i]}" >/dev/null 2>&1 || missing+=("${packages[$i]}")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "test.sh: installing ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    # As root every real-kernel test must run: a skip is a failure.
    export FSBENCH_REQUIRE_ROOT_TESTS=1
else
    echo "test.sh: not root: tests that need tmpfs, loop devices, mkfs and mount will skip" >&2
fi

cargo test --locked "$@"
