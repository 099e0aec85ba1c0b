#!/usr/bin/env python3
"""Randomized fault trials of fsbench's lifecycle.

Each trial starts a short real run (lat_fs, steps or fio on ext4 over loop over tmpfs, or
a kernel-paired lat_fs run whose guests are a stand-in qemu: a script that says it boots
and hangs, as tests/it/qemu_paired.rs uses; or `kernel`: a kernel-paired run booting a real
kernel in real qemu; `--kinds` picks them), waits a random time (up to 60 s for `kernel`),
and then either
  - sends SIGINT, SIGTERM or SIGHUP to the main process only (`kill <pid>`, what
    docker stop, systemd and Kubernetes do),
  - sends it to fsbench's whole process group (a terminal's Ctrl-C), or
  - sends SIGKILL to the main process and starts a new run on the same work root,
    which must clean up what the killed one left.
After each trial it counts what was left behind under the trial's private
directories: mounts, loop devices, processes and files in the work root, and cells
stored `ok` that should not be (incomplete samples, or written after the signal).
It also counts cgroups fsbench made during the trial that are still there (lat_fs and
fio cells run in a cell cgroup: `cgroup = { "cpu.max" = "max" }`), and, after a SIGKILL,
what the next run on the same work root did not clean. It reports those counts (all must
be 0), every exit code that is not 130 after a handled signal, and the 95th percentile of
the time from the signal to the exit of fsbench (target <= 3 s, --max-exit).

Everything lives under one private temporary directory (its own --workdir, --out
and fixture cache per trial): objects of other runs are never looked at or touched.

Usage: sudo benches/fault-trials.py [TRIALS] [--seed N] [--exe PATH] [--json]
                                    [--kinds latfs,steps,fio,paired,kernel] [--max-exit S]
                                    [--kernel-image PATH]
Default: 50 trials, the release binary (built if missing). Needs root.
"""

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIGNALS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "HUP": signal.SIGHUP}
LATFS_REPS = 2
STEPS_ITERATIONS = 4
FIO_REPS = 2
CGROUP_LIMIT = ["--set", 'filesystems.ext4.cgroup={"cpu.max"="max"}']
KINDS = ["latfs", "steps", "fio", "paired", "kernel"]
# `kernel` trials boot a real kernel (--kernel-image) in real qemu (TCG here): slower.
KERNEL_IMAGE = None
FIO_SCENARIO = """schema = 1
name = "fio-trial"
[matrix]
fs = ["ext4"]
tasks = [2]
[backing]
kind = "tmpfs-loop"
image_size = "128MiB"
[workload]
kind = "fio"
duration = "1s"
repetitions = 2
numjobs = "tasks"
job = \"\"\"
[randwrite]
rw=randwrite
bs=4k
size=8m
fsync=1
ioengine=psync
\"\"\"
"""
# A stand-in qemu: says it boots, then hangs like a guest running a cell.
STANDIN_QEMU = "#!/bin/sh\necho booting\nexec sleep 600\n"


def paired_files(d):
    """A fake kernel tree and the stand-in qemu, under the trial's directory."""
    k = os.path.join(d, "k")
    os.makedirs(os.path.join(k, "boot"))
    os.makedirs(os.path.join(k, "lib/modules/9.9.9"))
    open(os.path.join(k, "lib/modules/9.9.9/modules.dep"), "w").close()
    image = os.path.join(k, "boot/vmlinuz-9.9.9")
    with open(image, "wb") as f:
        f.write(b"not really a kernel")
    qemu = os.path.join(d, "qemu")
    with open(qemu, "w") as f:
        f.write(STANDIN_QEMU)
    os.chmod(qemu, 0o755)
    return image, qemu


def scenario_args(kind, rng, d):
    """The run's arguments: short cells that still last long enough to be hit anywhere."""
    if kind == "fio":
        path = os.path.join(d, "fio-trial.toml")
        with open(path, "w") as f:
            f.write(FIO_SCENARIO)
        return ["run", path] + CGROUP_LIMIT
    if kind == "paired":
        image, _ = paired_files(d)
        return [
            "run", "scenarios/quickstart.toml", "--only", "fs=ext4,tasks=1,test=open_close",
            "--paired", "--kernel", f"A={image}", "--kernel", f"B={image}",
        ]
    if kind == "kernel":
        # A real kernel-paired run: each member boots the image in qemu (initramfs, guest image).
        return [
            "run", "scenarios/quickstart.toml", "--only", "fs=ext4,tasks=1,test=open_close",
            "--set", "workload.warmup=0ms", "--set", "workload.duration=300ms",
            "--set", "workload.repetitions=1",
            "--paired", "--kernel", f"A={KERNEL_IMAGE}", "--kernel", f"B={KERNEL_IMAGE}",
        ]
    if kind == "latfs":
        test = rng.choice(["open_close", "create_unlink", "chown", "write_truncate"])
        return [
            "run", "scenarios/quickstart.toml", "--only", f"fs=ext4,tasks=2,test={test}",
            "--set", "workload.warmup=50ms", "--set", "workload.duration=1s",
            "--set", f"workload.repetitions={LATFS_REPS}", "--set", "backing.image_size=128MiB",
        ] + CGROUP_LIMIT
    return [
        "run", "scenarios/kernel-untar.toml", "--only", "fs=ext4",
        "--set", "archive.scale=0.3", "--set", f"workload.iterations={STEPS_ITERATIONS}",
        "--set", "backing.image_size=256MiB",
        "--set", "archive.on_target=" + rng.choice(["true", "false"]),
    ]


def mounts_under(path):
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp.startswith(path):
                out.append(mp)
    return out


def loops_under(path):
    out = []
    base = "/sys/block"
    for name in os.listdir(base):
        if not name.startswith("loop"):
            continue
        try:
            with open(f"{base}/{name}/loop/backing_file") as f:
                backing = f.read().strip()
        except OSError:
            continue
        if backing.startswith(path):
            out.append(f"/dev/{name} ({backing})")
    return out


def processes_naming(path):
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if path in cmd and state != "Z":
            out.append(f"{pid}: {cmd.strip()}")
    return out


def run_ids(out_root):
    """The run directories' names under a results root (`<out>/<scenario>/<run-id>`)."""
    ids = set()
    if os.path.isdir(out_root):
        for sc in os.listdir(out_root):
            p = os.path.join(out_root, sc)
            if os.path.isdir(p):
                ids.update(n for n in os.listdir(p) if os.path.isdir(os.path.join(p, n)))
    return ids


def cgroups_made_since(t0, ids):
    """The trial's cell cgroups (`<hierarchy>/fsbench/<run-id>.<cell>`) still there: made since
    t0 by one of the trial's runs (`ids`; other fsbench runs on the machine are not ours)."""
    out = []
    base = "/sys/fs/cgroup"
    for h in os.listdir(base):
        parent = os.path.join(base, h, "fsbench")
        if not os.path.isdir(parent):
            continue
        for g in os.listdir(parent):
            p = os.path.join(parent, g)
            try:
                ours = any(g.startswith(i + ".") for i in ids)
                if ours and os.path.isdir(p) and os.stat(p).st_mtime >= t0 - 1:
                    out.append(p)
            except OSError:
                pass
    return out


def files_in(root):
    left = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            left.append(os.path.join(dirpath, n))
    return left


def wrongly_ok(out_root, kind, t_signal):
    """Cells stored ok with incomplete samples, or stored after the signal arrived."""
    wrong = []
    for dirpath, _, filenames in os.walk(out_root):
        if os.path.basename(dirpath) != "cells":
            continue
        for n in filenames:
            if not n.endswith(".json") or n.startswith("."):
                continue
            p = os.path.join(dirpath, n)
            with open(p) as f:
                cell = json.load(f)
            if cell.get("status") != "ok":
                continue
            if kind in ("latfs", "paired", "kernel"):
                # A paired run's cells hold their pairs: complete when stored at all before the signal.
                complete = kind in ("paired", "kernel") or len((cell.get("latfs") or {}).get("repetitions", [])) == LATFS_REPS
            elif kind == "fio":
                complete = len((cell.get("fio") or {}).get("repetitions", [])) == FIO_REPS
            else:
                complete = len((cell.get("steps") or {}).get("iterations", [])) == STEPS_ITERATIONS
            # 20 ms: a cell finished just before the signal may still be in its rename.
            late = t_signal is not None and os.stat(p).st_mtime > t_signal + 0.02
            if not complete or late:
                wrong.append(f"{p}: complete={complete} late={late}")
    return wrong


def wait_exit(proc, timeout):
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def trial(i, exe, base, rng, cache, kinds, max_exit):
    d = tempfile.mkdtemp(prefix=f"t{i:03d}-", dir=base)
    work, out = os.path.join(d, "work"), os.path.join(d, "results")
    kind = rng.choice(kinds)
    t_start = time.time()
    mode = rng.choice(["pid", "pid", "group", "kill"])
    sig_name = "KILL" if mode == "kill" else rng.choice(list(SIGNALS))
    # A real guest takes tens of seconds to boot under TCG: hit boots, cells and teardowns.
    delay = rng.uniform(0.5, 60.0) if kind == "kernel" else rng.uniform(0.05, 2.5)
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    args = [exe] + scenario_args(kind, rng, d) + ["--workdir", work, "--out", out, "--quiet"]
    if kind == "paired":
        env["FSBENCH_QEMU"] = os.path.join(d, "qemu")
    # Its own session: the group signal reaches fsbench and its group, nothing of ours.
    proc = subprocess.Popen(args, cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    time.sleep(delay)
    t_signal = None
    exited_before = proc.poll() is not None
    record = {"trial": i, "kind": kind, "mode": mode, "signal": sig_name, "delay_s": round(delay, 3)}
    if not exited_before:
        t_signal = time.time()
        t0 = time.monotonic()
        if mode == "kill":
            proc.send_signal(signal.SIGKILL)
        elif mode == "group":
            os.killpg(proc.pid, SIGNALS[sig_name])
        else:
            proc.send_signal(SIGNALS[sig_name])
        if not wait_exit(proc, 60):
            proc.kill()
            proc.wait()
            record["hung"] = True
        record["exit_s"] = round(time.monotonic() - t0, 3)
    else:
        record["finished_before_signal"] = True
    record["code"] = proc.returncode
    record["stderr_tail"] = proc.stderr.read().decode(errors="replace")[-400:]
    if mode == "kill" and not exited_before:
        # The killed run's workers die with it (parent-death signal); its mounts and
        # loops stay until the next start on the same work root cleans them.
        time.sleep(0.3)
        record["left_by_sigkill"] = len(mounts_under(d)) + len(loops_under(d))
        nxt = subprocess.run(
            [exe, "run", "scenarios/quickstart.toml", "--set", "backing.kind=dir", "--only",
             "fs=ext4,tasks=1,test=open_close", "--set", "workload.warmup=0ms", "--set",
             "workload.duration=20ms", "--set", "workload.repetitions=1",
             # Its exit code says whether it could clean and run, not whether the host was quiet.
             "--set", "workload.disturbance=off", "--workdir", work,
             "--out", os.path.join(d, "results-next"), "--quiet"],
            cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        record["next_run_code"] = nxt.returncode
        record["left_after_next_run"] = len(mounts_under(work)) + len(loops_under(work))
    else:
        record["wrongly_ok"] = wrongly_ok(out, kind, t_signal)
        if (proc.returncode != 130 and not exited_before) or (exited_before and proc.returncode != 0):
            record["unexpected_code"] = True
    record["mounts"] = mounts_under(d)
    record["loops"] = loops_under(d)
    record["processes"] = processes_naming(d)
    ids = run_ids(out) | run_ids(os.path.join(d, "results-next"))
    record["cgroups"] = cgroups_made_since(t_start, ids) if kind in ("latfs", "fio") else []
    if "exit_s" in record and mode != "kill" and record["exit_s"] > max_exit:
        record["slow_exit"] = True
    record["work_files"] = files_in(work) if os.path.isdir(work) else []
    leaked = record["mounts"] or record["loops"] or record["processes"] or record["work_files"] or record["cgroups"]
    if not leaked:
        shutil.rmtree(d, ignore_errors=True)
    else:
        record["kept"] = d
    return record


def p95(xs):
    if not xs:
        return None
    xs = sorted(xs)
    k = max(0, int(round(0.95 * len(xs) + 0.5)) - 1)
    return xs[min(k, len(xs) - 1)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trials", nargs="?", type=int, default=50)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--exe", default=None)
    ap.add_argument("--json", action="store_true", help="print every trial's record as JSON")
    ap.add_argument("--kinds", default="latfs,steps", help="comma-separated: latfs, steps, fio, paired, kernel")
    ap.add_argument("--kernel-image", default=os.environ.get("FSBENCH_TEST_KERNEL"),
                    help="the kernel `kernel` trials boot (default: $FSBENCH_TEST_KERNEL)")
    ap.add_argument("--max-exit", type=float, default=3.0, help="seconds from a handled signal to exit (p95 and each)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("benches/fault-trials.py: needs root (loop devices and mounts)", file=sys.stderr)
        return 2
    exe = a.exe or os.path.join(HERE, "target/release/fsbench")
    if a.exe is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "fsbench"], cwd=HERE, check=True)
    kinds = [k for k in a.kinds.split(",") if k]
    if not kinds or any(k not in KINDS for k in kinds):
        print(f"--kinds: choose from {','.join(KINDS)}", file=sys.stderr)
        return 2
    if "kernel" in kinds:
        if not a.kernel_image or not os.path.isfile(a.kernel_image):
            print("--kinds kernel needs --kernel-image PATH (or FSBENCH_TEST_KERNEL): a kernel to boot", file=sys.stderr)
            return 2
        global KERNEL_IMAGE
        KERNEL_IMAGE = os.path.abspath(a.kernel_image)
    seed = a.seed if a.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    base = tempfile.mkdtemp(prefix="fsbench-faults-")
    cache = os.path.join(base, "cache")
    records = []
    for i in range(a.trials):
        r = trial(i, exe, base, rng, cache, kinds, a.max_exit)
        records.append(r)
        brief = f"{r['kind']:5} {r['mode']:5} SIG{r['signal']:4} after {r['delay_s']:.2f}s"
        if r.get("finished_before_signal"):
            brief += " (finished first)"
        elif "exit_s" in r:
            brief += f" -> exit {r['code']} in {r['exit_s']:.2f}s"
        bad = [k for k in ("mounts", "loops", "processes", "work_files", "cgroups", "wrongly_ok", "slow_exit") if r.get(k)]
        if r.get("unexpected_code") or r.get("hung") or (r["mode"] == "kill" and r.get("next_run_code") not in (None, 0)):
            bad.append("exit code")
        print(f"[{i + 1}/{a.trials}] {brief}{'  LEAK/BAD: ' + ','.join(bad) if bad else ''}", file=sys.stderr)
    exits = [r["exit_s"] for r in records if "exit_s" in r and r["mode"] != "kill"]
    summary = {
        "seed": seed,
        "trials": len(records),
        "by_mode": {m: sum(1 for r in records if r["mode"] == m) for m in ("pid", "group", "kill")},
        "by_kind": {k: sum(1 for r in records if r["kind"] == k) for k in KINDS},
        "finished_before_signal": sum(1 for r in records if r.get("finished_before_signal")),
        "leaked_mounts": sum(len(r["mounts"]) for r in records),
        "leaked_loops": sum(len(r["loops"]) for r in records),
        "leaked_processes": sum(len(r["processes"]) for r in records),
        "leaked_work_root_files": sum(len(r["work_files"]) for r in records),
        "leaked_cgroups": sum(len(r["cgroups"]) for r in records),
        "left_after_the_next_run_of_a_sigkill": sum(r.get("left_after_next_run", 0) for r in records),
        "exits_slower_than_max": sum(1 for r in records if r.get("slow_exit")),
        "cells_wrongly_ok": sum(len(r.get("wrongly_ok", [])) for r in records),
        "unexpected_exit_codes": sum(1 for r in records if r.get("unexpected_code") or r.get("hung")),
        "sigkill_trials_that_left_objects_for_the_next_run": sum(1 for r in records if r.get("left_by_sigkill")),
        "failed_runs_after_sigkill": sum(1 for r in records if r["mode"] == "kill" and r.get("next_run_code") not in (None, 0)),
        "signal_to_exit_s": {
            "n": len(exits),
            "median": round(statistics.median(exits), 3) if exits else None,
            "p95": round(p95(exits), 3) if exits else None,
            "max": round(max(exits), 3) if exits else None,
        },
    }
    if a.json:
        print(json.dumps({"summary": summary, "trials": records}, indent=2))
    else:
        print(json.dumps(summary, indent=2))
    kept = [r["kept"] for r in records if "kept" in r]
    if kept:
        print("kept for inspection (something was left):", *kept, sep="\n  ", file=sys.stderr)
    else:
        shutil.rmtree(base, ignore_errors=True)
    ok = (
        summary["leaked_mounts"] == summary["leaked_loops"] == summary["leaked_processes"] == 0
        and summary["leaked_work_root_files"] == summary["cells_wrongly_ok"] == 0
        and summary["leaked_cgroups"] == summary["left_after_the_next_run_of_a_sigkill"] == 0
        and summary["unexpected_exit_codes"] == summary["failed_runs_after_sigkill"] == 0
        and summary["exits_slower_than_max"] == 0
        and (not exits or p95(exits) <= a.max_exit)
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
