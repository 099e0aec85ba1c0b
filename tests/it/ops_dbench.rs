//! dbench loadfiles replayed by an ops group on a real ext4 over loop over tmpfs: the
//! shipped small loadfile by 2 clients (every op counted per client and pass, expected
//! errors counted, no mismatches, unknown handles counted), and the `dbench` package's
//! client.txt for about a second when it is installed.

use std::collections::BTreeMap;

use crate::support::kernel::assert_no_leaks;
use crate::support::sandbox::{Sandbox, cell_json};

const SCENARIO: &str = r#"schema = 1
name = "dbench-small"
[matrix]
fs = ["ext4"]
[filesystems.ext4]
mkfs = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
[backing]
kind = "tmpfs-loop"
image_size = "512MiB"
[workload]
kind = "ops"
STOP
repetitions = 1
disturbance = "off"
[[workload.group]]
name = "dbench"
threads = 2
loadfile = "LOADFILE"
"#;

/// dbench's summary name of a loadfile line's op.
fn report_name(op: &str) -> &str {
    match op {
        "QUERY_PATH_INFORMATION" => "Qpathinfo",
        "QUERY_FILE_INFORMATION" => "Qfileinfo",
        "QUERY_FS_INFORMATION" => "Qfsinfo",
        "SET_FILE_INFORMATION" => "Sfileinfo",
        "FIND_FIRST" => "Find",
        o => o,
    }
}

fn run_cell(sb: &Sandbox, text: &str) -> serde_json::Value {
    let c = cell_json(&sb.run_scenario("dbench.toml", text), "ext4-S-qoff-t1");
    assert_eq!(c["status"], "ok", "{c}");
    c
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn the_small_loadfile_replays_every_op_per_client_and_pass() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-dbench-");
    let shipped =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/loadfiles/client-small.txt")).unwrap();
    // One op on a handle never opened: counted, not performed.
    std::fs::write(sb.path().join("client.txt"), format!("{shipped}Close 4242 NT_STATUS_OK\n")).unwrap();
    let (mut per_op, mut errors) = (BTreeMap::<String, u64>::new(), 0u64);
    for l in shipped.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let mut w = l.split_whitespace().peekable();
        if w.peek().is_some_and(|t| t.starts_with(|c: char| c.is_ascii_digit())) {
            w.next();
        }
        *per_op.entry(report_name(w.next().unwrap()).to_string()).or_default() += 1;
        errors += u64::from(!l.ends_with("NT_STATUS_OK"));
    }
    assert_eq!(per_op.len(), 17, "the shipped loadfile has every op: {per_op:?}");
    assert!(errors > 0);
    let text = SCENARIO.replace("STOP", "loops = 3").replace("LOADFILE", "client.txt");
    let c = run_cell(&sb, &text);
    let rep = &c["ops"]["repetitions"][0];
    assert_eq!(rep["stop"], "loops", "{rep}");
    assert_eq!(rep["loops"], 6, "3 passes of 2 clients");
    let counts: BTreeMap<String, u64> = rep["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["op"].as_str().unwrap().to_string(), o["count"].as_u64().unwrap()))
        .collect();
    let want: BTreeMap<String, u64> = per_op.iter().map(|(k, v)| (k.clone(), v * 6)).collect();
    assert_eq!(counts, want);
    let lf = &rep["loadfile"];
    assert_eq!(lf["expected_errors"], errors * 6, "{lf}");
    assert_eq!(lf["status_mismatches"], 0, "{lf}");
    assert_eq!(lf["unknown_handles"], 6, "{lf}");
    assert_eq!(lf["ops"], per_op.values().sum::<u64>() * 6, "{lf}");
    assert!(lf["throughput_mb_s"].as_f64().unwrap() > 0.0, "{lf}");
    let clients = lf["clients"].as_array().unwrap();
    assert_eq!(clients.iter().map(|c| c["client"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2]);
    assert!(clients.iter().all(|c| c["passes"] == 3 && c["ops_per_s"].as_f64().unwrap() > 0.0), "{lf}");
    let report = crate::support::fsbench().args(["report", sb.runs()[0].to_str().unwrap()]).output().unwrap();
    let out = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success(), "{out}");
    assert!(out.lines().any(|l| l.starts_with("NTCreateX ")), "{out}");
    assert!(out.contains("Throughput") && out.contains("2 clients"), "{out}");
    assert_no_leaks(sb.path());
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn the_dbench_package_client_txt_replays_for_a_second() {
    skip_unless_root!();
    let path = "/usr/share/dbench/client.txt";
    if !std::path::Path::new(path).exists() {
        crate::support::skip(
            "the_dbench_package_client_txt_replays_for_a_second",
            "dbench is not installed (apt-get install dbench)",
        );
        return;
    }
    let sb = Sandbox::new("fsbench-dbench-full-");
    let c = run_cell(&sb, &SCENARIO.replace("STOP", "duration = \"1s\"").replace("LOADFILE", path));
    let rep = &c["ops"]["repetitions"][0];
    assert_eq!(rep["stop"], "duration", "{rep}");
    let count = |name: &str| {
        rep["ops"].as_array().unwrap().iter().find(|o| o["op"] == name).map(|o| o["count"].as_u64().unwrap())
    };
    for name in ["NTCreateX", "Close", "WriteX", "Deltree", "Mkdir"] {
        assert!(count(name).is_some_and(|n| n > 0), "{name}: {rep}");
    }
    assert!(rep["loadfile"]["throughput_mb_s"].as_f64().unwrap() > 0.0);
    assert_eq!(rep["loadfile"]["clients"].as_array().unwrap().len(), 2);
    assert_no_leaks(sb.path());
}

/// A client stops at its count of ops mid-pass, and paced per line it never runs ahead of
/// its schedule: 2 clients, 150 lines each at 500 lines/s take at least 0.3 s of window.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_paced_client_stops_at_its_count_of_ops() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-dbench-paced-");
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/loadfiles/client-small.txt");
    let text = SCENARIO.replace("STOP", "ops = 150\nrate = \"500 ops/s\"").replace("LOADFILE", shipped);
    let c = run_cell(&sb, &text);
    let rep = &c["ops"]["repetitions"][0];
    assert_eq!(rep["stop"], "ops", "{rep}");
    assert_eq!(rep["loadfile"]["ops"], 300, "{rep}");
    assert_eq!(rep["total"]["count"], 300, "{rep}");
    // Line k of a client is due k / 500 s after its first: the 150th at 298 ms.
    assert!(rep["elapsed_s"].as_f64().unwrap() >= 0.298, "{rep}");
    let pace = &rep["pace"];
    assert_eq!((pace["unit"].as_str(), pace["starts"].as_u64()), (Some("ops"), Some(300)), "{pace}");
    assert_eq!(pace["lateness"]["count"], 300, "{pace}");
    let report = crate::support::fsbench().args(["report", sb.runs()[0].to_str().unwrap()]).output().unwrap();
    let out = String::from_utf8_lossy(&report.stdout);
    assert!(out.contains("Pace 500 ops/s per worker: 300 starts"), "{out}");
    assert_no_leaks(sb.path());
}

/// A bundle's loadfile must be a file it carries: an absolute path (or one outside the
/// bundle) is refused by name before validation reads it, so no line of a file of this
/// machine is ever quoted back in an error.
#[test]
fn a_bundle_may_not_name_a_loadfile_of_this_machine() {
    let sb = Sandbox::new("fsbench-dbench-bundle-");
    let secret = sb.path().join("secret.txt");
    std::fs::write(&secret, "root:hunter2:0:0\n").unwrap();
    std::fs::create_dir(sb.path().join("recv")).unwrap();
    for file in [secret.to_str().unwrap(), "../secret.txt"] {
        let scenario = SCENARIO.replace("STOP", "loops = 1").replace("LOADFILE", file);
        let bundle = crate::bundle_fio_job::handmade(&[("scenario.toml", scenario.as_bytes())]);
        std::fs::write(sb.path().join("recv/lab.fsb"), bundle).unwrap();
        let out = crate::support::fsbench()
            .current_dir(sb.path().join("recv"))
            .args(["bundle", "verify", "lab.fsb"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        assert!(stderr.contains("is not a file of the bundle"), "{file}: {stderr}");
        assert!(!stderr.contains("hunter2"), "{file}: {stderr}");
    }
}

/// What `strace` saw of one pass of a small loadfile by one client under `resolve`:
/// stats of the loadfile's names, stats of fds, and the loadfile's directories opened.
#[derive(Debug, PartialEq)]
struct Calls {
    name_stats: usize,
    fd_stats: usize,
    dirs_opened: usize,
}

fn traced_pass(resolve: &str) -> Calls {
    let sb = Sandbox::new("fsbench-dbench-resolve-");
    std::fs::write(
        sb.path().join("client.txt"),
        concat!(
            "Mkdir \"\\clients\" NT_STATUS_OK\n",
            "NTCreateX \"\\clients\\client1\" 0x1 0x2 1 NT_STATUS_OK\n",
            "Close 1 NT_STATUS_OK\n",
            "NTCreateX \"\\clients\\client1\\a.txt\" 0x40 0x5 2 NT_STATUS_OK\n",
            "SET_FILE_INFORMATION 2 1004 NT_STATUS_OK\n",
            "Close 2 NT_STATUS_OK\n",
            "QUERY_PATH_INFORMATION \"\\clients\\client1\\A.TXT\" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND\n",
            "Rename \"\\clients\\client1\\a.txt\" \"\\clients\\client1\\b.txt\" NT_STATUS_OK\n",
            "Unlink \"\\clients\\client1\\b.txt\" NT_STATUS_OK\n",
        ),
    )
    .unwrap();
    let text = SCENARIO
        .replace("STOP", "loops = 1")
        .replace("threads = 2", "threads = 1")
        .replace("LOADFILE\"", &format!("client.txt\"\nresolve = \"{resolve}\""));
    let scenario = sb.path().join("resolve.toml");
    std::fs::write(&scenario, text).unwrap();
    let trace = sb.path().join("trace");
    let out = std::process::Command::new("strace")
        .args(["-f", "-qq", "-y", "-e", "trace=newfstatat,fstat,statx,openat", "-o"])
        .arg(&trace)
        .arg(crate::support::exe())
        .args(["run", "--quiet", "--out"])
        .arg(sb.path().join("results"))
        .arg("--workdir")
        .arg(sb.path().join("work"))
        .arg(&scenario)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = std::fs::read_to_string(&trace).unwrap();
    let stat = |l: &&str| l.contains("stat");
    Calls {
        name_stats: trace.lines().filter(stat).filter(|l| l.contains("\"clients")).count(),
        // `-y` shows the path of each fd: the fds of the loadfile's files.
        fd_stats: trace
            .lines()
            .filter(stat)
            .filter(|l| l.contains("/clients/client1") && (l.contains("AT_EMPTY_PATH") || l.contains("fstat(")))
            .count(),
        dirs_opened: trace
            .lines()
            .filter(|l| l.contains("openat(") && l.contains("O_DIRECTORY") && l.contains("\"clients"))
            .count(),
    }
}

/// A client looks an op's path up first as dbench's fileio backend does (its model of a
/// file server's name lookup), counted under `strace`: `stat` adds a stat of every path
/// an op names (Mkdir, two NTCreateX, Rename's two, Unlink; QUERY_PATH_INFORMATION's is
/// the op itself) and an fstat after each open and before SET_FILE_INFORMATION; `full`
/// adds, for each lookup that failed and has a directory above it, a read of that
/// directory (the two created names, the wrongly cased query and the rename's target).
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn resolve_adds_dbench_s_lookups_to_the_ops() {
    skip_unless_root!();
    if std::process::Command::new("strace").arg("-V").output().is_err() {
        return crate::support::skip(&test_name!(), "strace is not installed (scripts/test.sh installs it)");
    }
    let none = traced_pass("none");
    let stat = traced_pass("stat");
    let full = traced_pass("full");
    assert_eq!(stat.name_stats, none.name_stats + 6, "{none:?} {stat:?}");
    assert_eq!(stat.fd_stats, none.fd_stats + 3, "{none:?} {stat:?}");
    assert_eq!(stat.dirs_opened, none.dirs_opened, "{none:?} {stat:?}");
    assert_eq!((full.name_stats, full.fd_stats), (stat.name_stats, stat.fd_stats), "{stat:?} {full:?}");
    assert_eq!(full.dirs_opened, stat.dirs_opened + 4, "{stat:?} {full:?}");
}

/// `resolve` is a loadfile group's, with one of its three names.
#[test]
fn a_bad_resolve_is_an_input_error_naming_it() {
    let sb = Sandbox::new("fsbench-dbench-resolve-bad-");
    std::fs::write(sb.path().join("client.txt"), "Mkdir \"\\clients\" NT_STATUS_OK\n").unwrap();
    for (group, want) in [
        ("loadfile = \"client.txt\"\nresolve = \"fast\"", "resolve `fast`: use one of full, stat, none"),
        (
            "loop = [{ op = \"stat\", fileset = \"f\" }]\nresolve = \"stat\"\n[[workload.fileset]]\nname = \"f\"\n\
             entries = 1\nsize = \"1KiB\"",
            "`resolve` is for a group with a `loadfile`",
        ),
    ] {
        let text = format!(
            "schema = 1\nname = \"r\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n[workload]\nkind = \"ops\"\n\
             loops = 1\n[[workload.group]]\nthreads = 1\n{group}\n"
        );
        let file = sb.path().join("r.toml");
        std::fs::write(&file, text).unwrap();
        let out = crate::support::fsbench().arg("validate").arg(&file).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(want) && err.contains("r.toml:"), "{err}");
    }
}
