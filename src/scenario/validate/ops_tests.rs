//! Bad op-mix scenarios are refused with the place and the reason.

use crate::scenario::ops_spec::*;
use crate::scenario::parse_str;

fn scenario(image: &str, workload: &str) -> String {
    format!(
        "schema = 1\nname = \"t\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"tmpfs-loop\"\nimage_size = \"{image}\"\n\
         [workload]\nkind = \"ops\"\nduration = \"1s\"\n{workload}"
    )
}

const SET: &str = "[[workload.fileset]]\nname = \"set\"\nentries = 100\nsize = \"gamma(16KiB, 1.5)\"\nprealloc = 80\n";

fn err(text: &str) -> String {
    parse_str(text, "t.toml").expect_err("refused").to_string()
}

fn ok(text: &str) -> OpsWorkload {
    match parse_str(text, "t.toml").unwrap().workload {
        crate::scenario::Workload::Ops(o) => o,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_valid_loop_becomes_the_engine_spec() {
    let o = ok(&scenario(
        "1GiB",
        &format!(
            "scale = 2.0\n{SET}[[workload.group]]\nthreads = 4\nloop = [\n  {{ op = \"open\", fileset = \"set\", fd = 1, pick = \"zipf(1.2)\" }},\n  \
             {{ op = \"read\", fd = 1, io_size = \"64KiB\" }},\n  {{ op = \"close\", fd = 1 }},\n]\n"
        ),
    ));
    assert_eq!(o.spec.filesets[0].entries, 200);
    assert_eq!(o.spec.filesets[0].size, SizeDist::Gamma { mean: 16384.0, shape: 1.5 });
    assert_eq!(o.spec.stop.duration, Some(std::time::Duration::from_secs(1)));
    let Flow::Loop(ops) = &o.spec.groups[0].flow else { panic!() };
    assert_eq!(ops[0], Op::Open { fileset: 0, slot: 1, pick: Pick::Zipf(1.2) });
    assert_eq!(ops[1], Op::Read { slot: 1, len: ReadLen::Whole, io_size: 65536 });
}

#[test]
fn an_unknown_op_is_named_with_its_place_and_the_nearest_op() {
    let e = err(&scenario(
        "1GiB",
        &format!("{SET}[[workload.group]]\nthreads = 1\nloop = [{{ op = \"opne\", fileset = \"set\", fd = 1 }}]\n"),
    ));
    assert!(e.starts_with("t.toml:18:16:"), "{e}");
    assert!(e.contains("unknown op `opne`") && e.contains("did you mean `open`?"), "{e}");
}

#[test]
fn a_slot_used_before_it_is_opened_is_refused() {
    let e = err(&scenario(
        "1GiB",
        &format!("{SET}[[workload.group]]\nthreads = 1\nloop = [{{ op = \"read\", fd = 3 }}]\n"),
    ));
    assert!(e.contains("uses fd slot 3, which is not open"), "{e}");
    assert!(e.contains("t.toml:18:29:"), "{e}");
    // Opened in the loop but closed only later: fine. Left open and opened again next turn: refused.
    let e = err(&scenario(
        "1GiB",
        &format!("{SET}[[workload.group]]\nthreads = 1\nloop = [{{ op = \"open\", fileset = \"set\", fd = 1 }}]\n"),
    ));
    assert!(e.contains("opens fd slot 1, which is still open"), "{e}");
}

#[test]
fn an_undeclared_fileset_and_too_many_threads_are_refused() {
    let e = err(&scenario(
        "1GiB",
        &format!("{SET}[[workload.group]]\nthreads = 1\nloop = [{{ op = \"stat\", fileset = \"sett\" }}]\n"),
    ));
    assert!(e.contains("no fileset is named `sett`") && e.contains("did you mean `set`?"), "{e}");
    let e = err(&scenario(
        "1GiB",
        &format!("{SET}[[workload.group]]\nthreads = 5000\nloop = [{{ op = \"stat\", fileset = \"set\" }}]\n"),
    ));
    assert!(e.contains("threads 5000 is outside 1..=4096"), "{e}");
}

#[test]
fn a_fileset_bigger_than_the_image_is_refused_with_the_arithmetic() {
    // 100,000 × 16 KiB × 80% = 1.22 GiB in a 1 GiB image.
    let set = SET.replace("entries = 100", "entries = 100000");
    let e = err(&scenario(
        "1GiB",
        &format!("{set}[[workload.group]]\nthreads = 1\nloop = [{{ op = \"stat\", fileset = \"set\" }}]\n"),
    ));
    assert!(e.contains("100000 entries × 16384 B mean × 80%"), "{e}");
    assert!(e.contains("more than the 1GiB image"), "{e}");
}

#[test]
fn ops_keys_are_refused_in_other_kinds_and_tasks_must_be_one() {
    let t = "schema = 1\nname = \"t\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\npath = \"/tmp\"\n[workload]\nkind = \"lat_fs\"\nloops = 3\n";
    assert!(err(t).contains("`loops` is not an option of lat_fs workloads"));
    let t = scenario(
        "1GiB",
        &format!("{SET}[[workload.group]]\nthreads = 1\nloop = [{{ op = \"stat\", fileset = \"set\" }}]\n"),
    )
    .replace("fs = [\"ext4\"]", "fs = [\"ext4\"]\ntasks = [1, 2]");
    assert!(err(&t).contains("`matrix.tasks` must be [1]"));
}

#[test]
fn a_mix_transaction_must_close_what_it_opens() {
    let e = err(&scenario(
        "1GiB",
        &format!(
            "{SET}[[workload.group]]\nthreads = 1\nmix = [{{ weight = 1, ops = [{{ op = \"create\", fileset = \"set\", fd = 0 }}] }}]\n"
        ),
    ));
    assert!(e.contains("leaves fd slot 0 open"), "{e}");
}

#[test]
fn counts_and_a_rate_become_the_stop_and_bad_ones_name_their_key() {
    let stat = "[[workload.group]]\nthreads = 1\nloop = [{ op = \"stat\", fileset = \"set\" }]\n";
    let o = ok(&scenario("1GiB", &format!("ops = 500\nbytes = \"1MiB\"\nrate = \"250 ops/s\"\n{SET}{stat}")));
    assert_eq!(o.spec.stop.ops, Some(500));
    assert_eq!(o.spec.stop.bytes, Some(1 << 20));
    assert_eq!(o.spec.stop.rate, Some(Rate { per_s: 250.0, unit: RateUnit::Ops }));
    let o = ok(&scenario("1GiB", &format!("rate = \"0.5/s\"\n{SET}{stat}")));
    assert_eq!(o.spec.stop.rate, Some(Rate { per_s: 0.5, unit: RateUnit::Loops }));
    let o = ok(&scenario("1GiB", &format!("rate = \"100 loops/s\"\n{SET}{stat}")));
    assert_eq!(o.spec.stop.rate, Some(Rate { per_s: 100.0, unit: RateUnit::Loops }));
    for (line, key, says) in [
        ("ops = 0", "workload.ops", "must be 1 to"),
        ("bytes = \"0\"", "workload.bytes", "more than 0 bytes"),
        ("bytes = \"lots\"", "workload.bytes", "workload.bytes"),
        ("rate = \"100\"", "workload.rate", "a rate per second"),
        ("rate = \"100 files/s\"", "workload.rate", "unknown unit `files`"),
        ("rate = \"-1/s\"", "workload.rate", "outside (0,"),
        ("rate = \"fast/s\"", "workload.rate", "not a number"),
    ] {
        let e = err(&scenario("1GiB", &format!("{line}\n{SET}{stat}")));
        assert!(e.starts_with("t.toml:11:"), "{line}: {e}");
        assert!(e.contains(says), "{line} ({key}): {e}");
    }
    // Another kind refuses them by name.
    let e = parse_str(
        "schema = 1\nname = \"t\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"tmpfs-loop\"\n[workload]\nkind = \"lat_fs\"\nrate = \"1/s\"\n",
        "t.toml",
    )
    .expect_err("refused")
    .to_string();
    assert!(e.contains("`rate`") && e.contains("t.toml:9:"), "{e}");
}

#[test]
fn a_count_alone_needs_no_duration() {
    let text = scenario(
        "1GiB",
        &format!("ops = 10\n{SET}[[workload.group]]\nthreads = 1\nloop = [{{ op = \"stat\", fileset = \"set\" }}]\n"),
    )
    .replace("duration = \"1s\"\n", "");
    assert_eq!(ok(&text).spec.stop.duration, None);
}

#[test]
fn an_append_takes_an_io_size_and_a_bad_one_names_its_key_and_group() {
    let group = |append: &str| {
        format!(
            "{SET}[[workload.group]]\nname = \"pm\"\nthreads = 1\nloop = [\n  {{ op = \"open\", fileset = \"set\", fd = 1 }},\n  \
             {{ op = \"append\", fd = 1, size = \"10000B\"{append} }},\n  {{ op = \"close\", fd = 1 }},\n]\n"
        )
    };
    let append = |o: &OpsWorkload| match &o.spec.groups[0].flow {
        Flow::Loop(ops) => ops[1].clone(),
        other => panic!("{other:?}"),
    };
    let o = ok(&scenario("1GiB", &group(", io_size = \"512B\"")));
    assert_eq!(append(&o), Op::Append { slot: 1, len: AppendLen::Uniform(10000), io_size: 512, fileset: None });
    // Not declared: the whole append in one call, as before.
    let o = ok(&scenario("1GiB", &group(", random = false")));
    assert_eq!(append(&o), Op::Append { slot: 1, len: AppendLen::Fixed(10000), io_size: 10000, fileset: None });
    for (io_size, says) in
        [("\"0\"", "io_size is outside 1..=16MiB"), ("\"17MiB\"", "io_size is outside 1..=16MiB"), ("\"lots\"", "")]
    {
        let e = err(&scenario("1GiB", &group(&format!(", io_size = {io_size}"))));
        assert!(e.starts_with("t.toml:21:"), "{io_size}: {e}");
        assert!(e.contains(says) && e.contains("workload.group[0].loop[1].io_size"), "{io_size}: {e}");
    }
}

#[test]
fn a_warm_up_goes_before_a_duration_and_not_with_counts() {
    let stat = "[[workload.group]]\nthreads = 1\nloop = [{ op = \"stat\", fileset = \"set\" }]\n";
    let o = ok(&scenario("1GiB", &format!("warmup = \"4s\"\n{SET}{stat}")));
    assert_eq!(o.spec.stop.warmup, Some(std::time::Duration::from_secs(4)));
    assert_eq!(o.spec.stop.duration, Some(std::time::Duration::from_secs(1)));
    assert_eq!(ok(&scenario("1GiB", &format!("warmup = \"0s\"\n{SET}{stat}"))).spec.stop.warmup, None);
    for line in ["warmup = \"4s\"\nloops = 10", "warmup = \"4s\"\nfirst_done = true", "warmup = \"soon\""] {
        let e = err(&scenario("1GiB", &format!("{line}\n{SET}{stat}")));
        assert!(e.starts_with("t.toml:11:") && e.contains("workload.warmup"), "{line}: {e}");
    }
}

#[test]
fn an_append_up_to_a_size_excludes_size_and_random() {
    let group = |append: &str| {
        format!(
            "{SET}[[workload.group]]\nthreads = 1\nloop = [\n  {{ op = \"open\", fileset = \"set\", fd = 1 }},\n  \
             {{ op = \"append\", fd = 1{append} }},\n  {{ op = \"close\", fd = 1 }},\n]\n"
        )
    };
    let o = ok(&scenario("1GiB", &group(", up_to = \"10000B\", io_size = \"512B\"")));
    let Flow::Loop(ops) = &o.spec.groups[0].flow else { panic!() };
    assert_eq!(ops[1], Op::Append { slot: 1, len: AppendLen::UpTo(10000), io_size: 512, fileset: None });
    for (extra, says) in [
        (", up_to = \"10000B\", size = \"1KiB\"", "`up_to` and `size` exclude each other"),
        (", up_to = \"10000B\", random = false", "`up_to` and `random` exclude each other"),
        (", up_to = \"0\"", "an append is 1 byte to 16MiB"),
    ] {
        let e = err(&scenario("1GiB", &group(extra)));
        assert!(e.starts_with("t.toml:20:") && e.contains(says), "{extra}: {e}");
    }
}

#[test]
fn processes_multiply_the_threads_within_the_worker_cap() {
    let group = |extra: &str| {
        scenario(
            "1GiB",
            &format!("{SET}[[workload.group]]\nthreads = 2\n{extra}loop = [{{ op = \"stat\", fileset = \"set\" }}]\n"),
        )
    };
    let o = ok(&group("processes = 3\n"));
    assert_eq!((o.spec.groups[0].threads, o.spec.groups[0].processes, o.spec.groups[0].workers()), (2, Some(3), 6));
    assert_eq!(ok(&group("")).spec.groups[0].processes, None);
    let e = err(&group("processes = 0\n"));
    assert!(e.contains("processes 0 is outside 1..=4096"), "{e}");
    assert!(e.contains("t.toml:"), "{e}");
    let e = err(&group("processes = 2049\n"));
    assert!(e.contains("more than 4096 workers together (threads × processes)"), "{e}");
    assert!(e.contains("t.toml:") && e.contains("workload.group[0].processes"), "{e}");
}

#[test]
fn processes_are_refused_for_a_loadfile_group() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("client.txt"), "0 Close 1 NT_STATUS_OK\n").unwrap();
    let text = scenario(
        "1GiB",
        &format!(
            "[[workload.group]]\nthreads = 2\nprocesses = 2\nloadfile = \"{}\"\n",
            dir.path().join("client.txt").display()
        ),
    );
    let e = err(&text);
    assert!(e.contains("`processes` is not supported with a `loadfile` group"), "{e}");
}
