//! Against a real Slurm: start munged, slurmctld and slurmd on loopback with a
//! generated one-node configuration in a private directory, submit a 4-shard
//! array with `fsbench submit slurm --submit`, wait for it and its merge job,
//! and check that the merge holds every cell exactly once and equals a
//! single-machine run in cell set and layout. Everything started here is
//! stopped by a guard, on success and on failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::sandbox::{cell_ids, runs_in};
use crate::support::{fsbench, is_root, skip};

/// Whether we are root and the Slurm and munge programs are there; otherwise skips `test` (see [`skip`]).
fn can_run(test: &str) -> bool {
    let reason = if !is_root() {
        Some("needs root to run slurmctld, slurmd and munged".to_string())
    } else {
        let missing: Vec<&str> = [
            "/usr/sbin/munged",
            "/usr/sbin/mungekey",
            "/usr/sbin/slurmctld",
            "/usr/sbin/slurmd",
            "/usr/bin/sbatch",
            "/usr/bin/squeue",
            "/usr/bin/sinfo",
        ]
        .into_iter()
        .filter(|p| !Path::new(p).exists())
        .collect();
        (!missing.is_empty()).then(|| {
            format!("missing {} (Debian: apt-get install slurmctld slurmd slurm-client munge)", missing.join(", "))
        })
    };
    match reason {
        None => true,
        Some(r) => {
            skip(test, &r);
            false
        }
    }
}

/// One private cluster at a time: two slurmd for one node name on one machine would confuse each other's logs.
static ONE_CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A private one-node Slurm cluster. Dropping it cancels its jobs, stops its
/// daemons, kills any process still referring to its directory, and removes it.
struct Cluster {
    dir: tempfile::TempDir,
    daemons: Vec<(&'static str, Child)>,
}

impl Cluster {
    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn start() -> Cluster {
        let dir = tempfile::Builder::new().prefix("fsbench-slurm-").tempdir().unwrap();
        // munged insists that everyone can traverse to its socket, and that its key is private.
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let mut c = Cluster { dir, daemons: Vec::new() };
        for d in ["munge", "state", "spool", "log"] {
            std::fs::create_dir(c.path(d)).unwrap();
        }
        std::fs::set_permissions(c.path("munge"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let key = c.path("munge/munge.key");
        let st = Command::new("/usr/sbin/mungekey").arg("--create").arg("--keyfile").arg(&key).status().unwrap();
        assert!(st.success() && key.exists(), "mungekey failed");
        let socket = c.path("munge/munge.socket");
        let munged = Command::new("/usr/sbin/munged")
            .args(["--foreground", "--force"])
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--log-file={}", c.path("log/munged.log").display()))
            .arg(format!("--pid-file={}", c.path("munge/munged.pid").display()))
            .arg(format!("--seed-file={}", c.path("munge/seed").display()))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(c.path("log/munged.out")).unwrap())
            .spawn()
            .unwrap();
        c.daemons.push(("munged", munged));
        c.wait_until("munged socket", Duration::from_secs(10), |c| c.path("munge/munge.socket").exists());

        let mem_mib = std::fs::read_to_string("/proc/meminfo")
            .unwrap()
            .lines()
            .find_map(|l| {
                l.strip_prefix("MemTotal:")
                    .map(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap() / 1024)
            })
            .unwrap();
        let d = c.dir.path().display().to_string();
        let conf = format!(
            "ClusterName=fsbenchtest\n\
             SlurmctldHost=localhost(127.0.0.1)\n\
             SlurmctldPort={ctld}\nSlurmdPort={slurmd}\n\
             SlurmUser=root\nSlurmdUser=root\n\
             AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={socket}\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nSchedulerType=sched/backfill\n\
             JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\n\
             MpiDefault=none\nSwitchType=switch/none\nReturnToService=2\n\
             NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory={mem} State=UNKNOWN\n\
             PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n",
            ctld = free_port(),
            slurmd = free_port(),
            socket = socket.display(),
            mem = mem_mib / 2,
        );
        std::fs::write(c.conf(), conf).unwrap();
        let ctld = Command::new("/usr/sbin/slurmctld")
            .args(["-D", "-i", "-f"])
            .arg(c.conf())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(c.path("log/slurmctld.out")).unwrap())
            .spawn()
            .unwrap();
        c.daemons.push(("slurmctld", ctld));
        let slurmd = Command::new("/usr/sbin/slurmd")
            .args(["-D", "-N", "localhost", "-f"])
            .arg(c.conf())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(c.path("log/slurmd.out")).unwrap())
            .spawn()
            .unwrap();
        c.daemons.push(("slurmd", slurmd));
        c.wait_until("node idle", Duration::from_secs(60), |c| {
            c.slurm("sinfo", &["-h", "-o", "%T"]).is_some_and(|s| s.trim() == "idle")
        });
        c
    }

    /// Run a Slurm client against this cluster; its stdout when it succeeded.
    fn slurm(&self, program: &str, args: &[&str]) -> Option<String> {
        let out = Command::new(program).args(args).env("SLURM_CONF", self.conf()).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn wait_until(&mut self, what: &str, timeout: Duration, ok: impl Fn(&Cluster) -> bool) {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if ok(self) {
                return;
            }
            let exited = self
                .daemons
                .iter_mut()
                .find_map(|(name, child)| child.try_wait().ok().flatten().map(|st| format!("{name} exited ({st})")));
            if let Some(e) = exited {
                panic!("{e} while waiting for {what}\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("timed out after {timeout:?} waiting for {what}\n{}", self.logs());
    }

    /// The daemons' logs and the jobs' output, for failure messages.
    fn logs(&self) -> String {
        let mut out = String::new();
        for entry in walkdir::WalkDir::new(self.dir.path()).into_iter().flatten() {
            let p = entry.path();
            let name = p.to_string_lossy();
            if entry.file_type().is_file() && (name.contains("/log/") || name.contains("/slurm/")) {
                let text = std::fs::read_to_string(p).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(25).collect();
                out.push_str(&format!(
                    "==> {} <==\n{}\n",
                    p.display(),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                ));
            }
        }
        out
    }

    /// Processes (other than the daemons) whose command line or environment names our directory: job steps.
    fn strays(&self) -> Vec<i32> {
        let needle = self.dir.path().to_string_lossy().into_owned();
        let me = std::process::id() as i32;
        let mut pids = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
            if pid == me {
                continue;
            }
            let read = |f: &str| std::fs::read(entry.path().join(f)).unwrap_or_default();
            let hit = |b: Vec<u8>| b.windows(needle.len()).any(|w| w == needle.as_bytes());
            if hit(read("cmdline")) || hit(read("environ")) {
                pids.push(pid);
            }
        }
        pids
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        // Jobs first, so slurmd does not leave job steps behind.
        let _ = self.slurm("scancel", &["--full", "--user=root"]);
        std::thread::sleep(Duration::from_millis(300));
        for (_, child) in self.daemons.iter_mut().rev() {
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
        }
        let start = Instant::now();
        for (_, child) in self.daemons.iter_mut().rev() {
            while start.elapsed() < Duration::from_secs(10) {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        for pid in self.strays() {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

const TINY: &str = r#"schema = 1
name = "shardtiny"
description = "8 lat_fs cells with short windows, for the Slurm array test"
[matrix]
fs = ["ext4", "ext2"]
tasks = [1, 2]
test = ["open_close", "create_unlink"]
[backing]
kind = "dir"
[workload]
kind = "lat_fs"
warmup = "10ms"
duration = "30ms"
repetitions = 2
disturbance = "off"
"#;

/// What a report's JSON says about layout: tables (fs, layout, test, columns, task rows) and cells without a number.
fn layout_of(v: &serde_json::Value) -> serde_json::Value {
    let tables: Vec<serde_json::Value> = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let cols: Vec<&serde_json::Value> = t["columns"].as_array().unwrap().iter().map(|c| &c["name"]).collect();
            let present: Vec<Vec<bool>> = t["values"].as_array().unwrap().iter().map(|r| r.as_array().unwrap().iter().map(|x| !x.is_null()).collect()).collect();
            serde_json::json!({ "fs": t["fs"], "layout": t["layout"], "test": t["test"], "columns": cols, "tasks": t["tasks"], "present": present })
        })
        .collect();
    let mut nm: Vec<String> =
        v["not_measured"].as_array().unwrap().iter().map(|n| format!("{} {}", n["id"], n["status"])).collect();
    nm.sort();
    serde_json::json!({ "tables": tables, "not_measured": nm })
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn four_shard_array_merges_to_the_single_machine_run() {
    if !can_run(&test_name!()) {
        return;
    }
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let mut cluster = Cluster::start();
    let scenario = cluster.path("tiny.toml");
    std::fs::write(&scenario, TINY).unwrap();
    let res = cluster.path("results");
    let work = cluster.path("work");

    let out = fsbench()
        .args(["submit", "slurm"])
        .arg(&scenario)
        .args(["--shards", "4", "--partition", "debug", "--submit", "--out"])
        .arg(&res)
        .arg("--output")
        .arg(cluster.path("array.sh"))
        .env("SLURM_CONF", cluster.conf())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "submit failed: {stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cluster.logs()
    );
    // `submitted array job 1 (4 shards) and merge job 2`
    let words: Vec<&str> = stdout.split_whitespace().collect();
    let array_id = words.get(3).expect("array job id").to_string();
    let merge_id = words.last().expect("merge job id").to_string();
    let script = std::fs::read_to_string(cluster.path("array.sh")).unwrap();
    assert!(script.contains("#SBATCH --array=1-4") && script.contains("#SBATCH --partition=debug"), "{script}");

    let merge_out = res.join(format!("slurm/merge-{merge_id}.out"));
    let started = Instant::now();
    cluster.wait_until("the array and its merge job", Duration::from_secs(300), |c| {
        let q = c.slurm("squeue", &["-h", "-o", "%i %T %r"]).unwrap_or_else(|| "squeue failed".into());
        // The merge job depends on afterany: it must never be stuck behind a failed shard.
        assert!(!q.contains("DependencyNeverSatisfied"), "merge job stuck:\n{q}\n{}", c.logs());
        q.trim().is_empty()
    });
    eprintln!("array and merge finished in {:.1}s", started.elapsed().as_secs_f64());
    let merged_text = std::fs::read_to_string(&merge_out)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", merge_out.display(), cluster.logs()));
    assert!(
        merged_text.contains(&format!("merged 4 of 4 shards of run slurm-{array_id}")),
        "merge job output:\n{merged_text}\n{}",
        cluster.logs()
    );

    // Four run directories, one per shard number, and every planned cell in exactly one.
    let shard_dirs = runs_in(&res.join("shardtiny"));
    assert_eq!(shard_dirs.len(), 4, "{shard_dirs:?}\n{}", cluster.logs());
    let mut numbers: Vec<String> = shard_dirs
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().rsplit('-').next().unwrap().to_string())
        .collect();
    numbers.sort();
    assert_eq!(numbers, ["shard1of4", "shard2of4", "shard3of4", "shard4of4"]);
    let mut all: Vec<String> = shard_dirs.iter().flat_map(|d| cell_ids(d)).collect();
    all.sort();
    let total = all.len();
    all.dedup();
    assert_eq!(all.len(), total, "a cell ran in two shards");
    assert_eq!(total, 8, "{all:?}");
    for d in &shard_dirs {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("run.json")).unwrap()).unwrap();
        assert_eq!(meta["shard"]["key"], format!("slurm-{array_id}"));
        assert_eq!(meta["shard"]["count"], 4);
        assert_eq!(cell_ids(d).len(), 2, "8 equal cells over 4 shards: 2 each ({})", d.display());
    }

    // The same scenario on one machine, unsharded.
    let single_root = cluster.path("single");
    let st = fsbench()
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(&single_root)
        .arg("--workdir")
        .arg(&work)
        .arg("--quiet")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let single = runs_in(&single_root.join("shardtiny"));
    assert_eq!(single.len(), 1);
    let mut single_cells = cell_ids(&single[0]);
    single_cells.sort();
    assert_eq!(single_cells, all, "merge and single run hold the same cells");

    let merged = fsbench().arg("merge").arg(res.join("shardtiny")).args(["--format", "json"]).output().unwrap();
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    let report = fsbench().arg("report").arg(&single[0]).args(["--format", "json"]).output().unwrap();
    assert!(report.status.success());
    let merged = crate::schemas::conforming("merge.schema.json", &merged.stdout, "merge --json");
    assert_eq!(merged["merged"][0]["complete"], true, "{merged}");
    let report = crate::schemas::conforming("report.schema.json", &report.stdout, "report --json");
    let (m, s) = (layout_of(&merged["merged"][0]["report"]), layout_of(&report));
    assert_eq!(m, s, "merged report and single-machine report differ in layout");
    assert!(!m["tables"].as_array().unwrap().is_empty());

    drop(cluster);
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn cluster_guard_leaves_nothing_running() {
    if !can_run(&test_name!()) {
        return;
    }
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = Cluster::start();
    let dir = cluster.dir.path().to_path_buf();
    let pids: Vec<u32> = cluster.daemons.iter().map(|(_, c)| c.id()).collect();
    assert_eq!(pids.len(), 3);
    drop(cluster);
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z"),
            "daemon {pid} still running"
        );
    }
    assert!(!dir.exists(), "temporary directory removed");
}
