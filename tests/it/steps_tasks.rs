//! `tasks = 2` on kernel-untar runs two copies of the loop at once, each timed
//! like time(1) in its own process, in its own directory (S) or filesystem (M).

use crate::support::kernel::assert_no_leaks;
use crate::support::sandbox::Sandbox;
use crate::support::small_fixture;

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn two_tasks_run_two_concurrent_untar_loops() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-steps-tasks-");
    let fixture = small_fixture();
    let out = sb
        .fsbench(&[
            "run",
            "kernel-untar",
            "--archive",
            fixture.to_str().unwrap(),
            "--set",
            "matrix.fs=ext4",
            "--set",
            "matrix.tasks=[2]",
            "--set",
            "matrix.layout=[\"S\", \"M\"]",
            "--set",
            "workload.iterations=2",
            "--set",
            "backing.image_size=64MiB",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let run = &sb.runs()[0];
    for id in ["ext4-S-qoff-t2", "ext4-M-qoff-t2"] {
        let cell: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join(format!("cells/{id}.json"))).unwrap()).unwrap();
        assert_eq!(cell["status"], "ok", "{cell:#}");
        let steps = &cell["steps"];
        let copies = steps["copies"].as_array().unwrap();
        assert_eq!(copies.len(), 2, "{id}");
        // Overlapping: each copy started before the other finished.
        let (s0, f0) =
            (copies[0]["started_unix_us"].as_u64().unwrap(), copies[0]["finished_unix_us"].as_u64().unwrap());
        let (s1, f1) =
            (copies[1]["started_unix_us"].as_u64().unwrap(), copies[1]["finished_unix_us"].as_u64().unwrap());
        assert!(s0 < f1 && s1 < f0, "{id}: copies did not overlap: {s0}..{f0} and {s1}..{f1}");
        for i in 0..2 {
            let untar = |c: &serde_json::Value| c["iterations"][i][1].clone();
            let (a, b, agg) = (untar(&copies[0]), untar(&copies[1]), steps["iterations"][i][1].clone());
            let e = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap();
            // Each copy unpacked the whole tree in its own process, with CPU of its own.
            assert_eq!(e(&a, "entries"), e(&b, "entries"), "{id}");
            assert!(e(&a, "user_us") + e(&a, "system_us") > 0 && e(&b, "user_us") + e(&b, "system_us") > 0);
            // The aggregate: slowest elapsed, summed CPU.
            assert_eq!(e(&agg, "elapsed_us"), e(&a, "elapsed_us").max(e(&b, "elapsed_us")), "{id}");
            assert_eq!(e(&agg, "user_us"), e(&a, "user_us") + e(&b, "user_us"), "{id}");
            assert_eq!(e(&agg, "system_us"), e(&a, "system_us") + e(&b, "system_us"), "{id}");
        }
        // Each copy read the cell's devices around its own steps.
        for c in copies {
            let untar = &c["iterations"][0][1];
            assert!(untar["counters"]["devices"].as_array().is_some_and(|d| !d.is_empty()), "{id}: {untar:#}");
        }
        // Steady iterations: iteration 2's rm_rf removed each copy's tree.
        assert!(copies.iter().all(|c| c["iterations"][1][0]["entries"].as_u64().unwrap() > 0), "{id}");
        if id.contains("-M-") {
            let fss = cell["filesystems"].as_array().unwrap();
            assert_eq!(fss.len(), 2, "layout M: a filesystem per copy");
        }
    }
    // The report shows the per-copy lines under the aggregate ones.
    let rep = crate::support::fsbench().arg("report").arg(run).output().unwrap();
    let text = String::from_utf8_lossy(&rep.stdout);
    assert!(
        text.contains("2 copies at once") && text.contains("  task 0: tar zxf") && text.contains("  task 1: rm -rf"),
        "{text}"
    );
    assert!(text.contains("ext4-M task 1: devices and dirty memory per step"), "{text}");
    assert_no_leaks(sb.path());
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn the_copies_of_a_cell_are_each_others_own_cpu_not_a_disturbance() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-steps-tasks-own-");
    // Each copy keeps a CPU busy for 0.6 s; they start together at the barrier.
    let scenario = sb.path().join("busy.toml");
    std::fs::write(
        &scenario,
        "schema = 1\nname = \"busy\"\n[matrix]\nfs = [\"ext4\"]\ntasks = [2]\n[backing]\nkind = \"dir\"\n\
         [workload]\nkind = \"steps\"\niterations = 1\n\
         steps = [{ op = \"exec\", argv = [\"sh\", \"-c\", \"timeout 0.6 sh -c 'while :; do :; done'; exit 0\"] }]\n",
    )
    .unwrap();
    // Disturbance is measured (the sandbox turns it off otherwise); what the neighbours of
    // this test do changes the foreign time, never the own time asserted below.
    let args = ["run", scenario.to_str().unwrap(), "--allow-exec", "--set", "workload.disturbance=25%"];
    let out = sb.fsbench(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = &sb.runs()[0];
    let id = &crate::support::sandbox::cell_ids(run)[0];
    let cell: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join(format!("cells/{id}.json"))).unwrap()).unwrap();
    let copies = cell["steps"]["copies"].as_array().unwrap_or_else(|| panic!("{cell:#}"));
    let step = |c: usize| &copies[c]["iterations"][0][0];
    let cpu = |c: usize| step(c)["user_us"].as_u64().unwrap() + step(c)["system_us"].as_u64().unwrap();
    for (me, other) in [(0, 1), (1, 0)] {
        let own = step(me)["disturbance"]["own_cpu_us"].as_u64().unwrap_or_else(|| panic!("{cell:#}"));
        // The window of one copy counts its own loop and (most of) its sibling's, which
        // ran at the same time: the sibling is the run, not a neighbour.
        assert!(own as f64 >= cpu(me) as f64 + 0.5 * cpu(other) as f64, "copy {me}: own {own} µs\n{cell:#}");
    }
    assert_no_leaks(sb.path());
}

/// An `exec` command that prints was read as a copy's reply (`steps worker broke the
/// protocol: unreadable reply ... "hello"`): a copy's stdout was its protocol pipe. What the
/// command prints now goes to stderr.
#[test]
fn what_an_exec_step_prints_in_a_copy_does_not_break_its_reply() {
    let sb = Sandbox::new("fsbench-steps-tasks-print-");
    let scenario = sb.path().join("print.toml");
    std::fs::write(
        &scenario,
        "schema = 1\nname = \"print\"\n[matrix]\nfs = [\"ext4\"]\ntasks = [2]\n[backing]\nkind = \"dir\"\n\
         [workload]\nkind = \"steps\"\niterations = 1\n\
         steps = [{ op = \"exec\", argv = [\"echo\", \"hello from a copy\"] }]\n",
    )
    .unwrap();
    let out = sb.fsbench(&["run", scenario.to_str().unwrap(), "--allow-exec"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("hello from a copy\n").count(), 2, "{stderr}");
    assert_no_leaks(sb.path());
}
