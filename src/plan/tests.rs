//! Tests of the plan: expansion order, `--only`, kernel filters and the paired plan's text.

use std::time::Duration;

use super::*;

#[test]
fn kernel_filters_are_picked_out_of_only_and_must_stand_alone() {
    let only = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (rest, k) = kernel_filters(&only(&["fs=ext4", "kernel=A,B", " kernel = C"])).unwrap();
    assert_eq!(rest, ["fs=ext4"]);
    assert_eq!(k, [vec!["A".to_string(), "B".to_string()], vec!["C".to_string()]]);
    let e = kernel_filters(&only(&["kernel=A,fs=ext4"])).unwrap_err();
    assert!(e.0.contains("an --only of its own"), "{}", e.0);
    // An axis named first keeps the option for the cells (and `kernel` there is unknown).
    assert_eq!(kernel_filters(&only(&["fs=ext4,kernel=A"])).unwrap().0, ["fs=ext4,kernel=A"]);
}

#[test]
fn a_paired_plan_names_its_groups_and_what_the_pairs_cost() {
    let text = include_str!("../../scenarios/paired-nodelalloc.toml");
    let s = crate::scenario::parse_str(text, "paired-nodelalloc.toml").unwrap();
    let plan = plan_for(&s, &["test=chown,open_close".to_string()]).unwrap();
    let out = render_pairing(&s, &plan, 200).unwrap();
    assert!(out.contains("paired: arms fs = ext4, ext4-nodelalloc (baseline first); 6–32 pairs per group, verdict looked at after 6, 9, 14, 21, 32 pairs"), "{out}");
    assert!(out.contains("pair groups (2): S-qoff-t1-open_close, S-qoff-t1-chown"), "{out}");
    assert!(
        out.contains("at best (every group decided after 6 pairs)")
            && out.contains("(32 pairs and 3 void pairs rerun per group)"),
        "{out}"
    );
    assert!(!out.contains("unpaired"), "{out}");
    let narrowed = plan_for(&s, &["test=chown".to_string(), "fs=ext4".to_string()]).unwrap();
    let out = render_pairing(&s, &narrowed, 200).unwrap();
    assert!(out.contains("pair groups (0)") && out.contains("run unpaired: ext4-S-qoff-t1-chown"), "{out}");
    let unpaired = Scenario { compare: None, ..s };
    assert_eq!(render_pairing(&unpaired, &plan, 200), None);
}

#[test]
fn a_paired_steps_plan_names_its_groups_and_costs_its_members_with_their_reruns() {
    let text = "schema = 1\nname = \"t\"\n[matrix]\nfs = [\"ext4\", \"xfs\"]\ntasks = [1, 2]\n[backing]\nkind = \"dir\"\n\
                path = \"/tmp\"\n[workload]\nkind = \"steps\"\niterations = 2\nsteps = [{ op = \"sync\" }]\n\
                [compare]\narms = \"fs\"\npairs = { min = 2, max = 4 }\n";
    let s = crate::scenario::parse_str(text, "t.toml").unwrap();
    let plan = plan_for(&s, &[]).unwrap();
    let out = render_pairing(&s, &plan, 200).unwrap();
    assert!(out.contains("pair groups (2): S-qoff-t1, S-qoff-t2"), "{out}");
    // Dir backing: a member costs its steps' estimate, 2 s per step and iteration.
    let member = estimate(&s);
    assert_eq!(member, Duration::from_secs(4));
    let best = crate::text::human_duration(member * 2 * 2 * 2);
    let worst = crate::text::human_duration(member * 2 * 2 * (4 + 3));
    assert!(out.contains(&format!("pairs take about {best} at best")), "{out}");
    assert!(out.contains(&format!("and {worst} at worst (4 pairs and 3 void pairs rerun per group)")), "{out}");
}

fn scenario(matrix: &str) -> Scenario {
    let text = format!(
        "schema = 1\nname = \"t\"\n[matrix]\n{matrix}\n[backing]\nkind = \"dir\"\npath = \"/tmp\"\n[workload]\nkind = \"lat_fs\"\n"
    );
    crate::scenario::parse_str(&text, "t.toml").unwrap()
}

#[test]
fn expansion_order_is_fs_layout_quota_tasks_test() {
    let s = scenario(
        "fs = [\"ext4\", \"ext2\"]\nlayout = [\"M\", \"S\"]\ntasks = [1, 2]\ntest = [\"chown\", \"open_close\"]",
    );
    let ids: Vec<String> = expand(&s).cells.iter().map(Cell::id).collect();
    assert_eq!(ids.len(), 16);
    assert_eq!(ids[0], "ext4-M-qoff-t1-chown");
    assert_eq!(ids[1], "ext4-M-qoff-t1-open_close");
    assert_eq!(ids[2], "ext4-M-qoff-t2-chown");
    assert_eq!(ids[4], "ext4-S-qoff-t1-chown");
    assert_eq!(ids[8], "ext2-M-qoff-t1-chown");
}

#[test]
fn only_filters_with_and_across_keys_or_within() {
    let s = scenario("fs = [\"ext4\", \"ext2\"]\ntasks = [1, 2, 4]");
    let plan = expand(&s);
    let f = CellFilter::parse(&["fs=ext4,tasks=1,tasks=4".into()], &plan).unwrap();
    let kept = f.apply(plan.clone());
    assert_eq!(kept.cells.len(), 8);
    assert!(kept.cells.iter().all(|c| c.params.fs == "ext4" && c.params.tasks != 2));
    let f = CellFilter::parse(&["quota=qoff".into(), "test=lat_fs_chown".into()], &plan).unwrap();
    assert_eq!(f.apply(plan.clone()).cells.len(), 6);
}

#[test]
fn a_bare_value_in_only_continues_the_key_before_it() {
    let s = scenario("fs = [\"ext4\", \"ext2\"]\ntasks = [1, 2, 4]");
    let plan = expand(&s);
    let short = CellFilter::parse(&["fs=ext2,ext4,tasks=1,4".into()], &plan).unwrap();
    let long = CellFilter::parse(&["fs=ext2,fs=ext4,tasks=1,tasks=4".into()], &plan).unwrap();
    assert_eq!(short, long);
    assert_eq!(short.apply(plan.clone()).cells.len(), 16);
    let e = CellFilter::parse(&["ext4,tasks=1".into()], &plan).unwrap_err();
    assert!(e.0.contains("expected AXIS=VALUE first, found `ext4`"), "{}", e.0);
    // A continued value is checked like any other.
    let e = CellFilter::parse(&["fs=ext4,xfs".into()], &plan).unwrap_err();
    assert!(e.0.contains("no cell has fs=xfs"), "{}", e.0);
}

#[test]
fn only_rejects_unknown_axes_and_absent_values() {
    let s = scenario("fs = [\"ext4\"]");
    let plan = expand(&s);
    let e = CellFilter::parse(&["taks=1".into()], &plan).unwrap_err();
    assert!(e.0.contains("did you mean `tasks`"), "{}", e.0);
    let e = CellFilter::parse(&["fs=xfs".into()], &plan).unwrap_err();
    assert!(e.0.contains("no cell has fs=xfs (this scenario's values: ext4)"), "{}", e.0);
}

#[test]
fn quota_smp_has_128_cells() {
    let s = crate::scenario::parse_str(crate::scenario::file::embedded("quota-smp").unwrap().text, "q").unwrap();
    assert_eq!(expand(&s).cells.len(), 128);
}

/// `profile = "cpu"` costs one more, uncounted repetition per cell: the plan counts it and says so.
#[test]
fn a_profiled_plan_counts_the_profiled_repetition_of_each_cell() {
    let text = "schema = 1\nname = \"t\"\n[matrix]\nfs = [\"ext4\"]\ntasks = [1]\ntest = [\"chown\"]\n[backing]\nkind = \"dir\"\n\
                path = \"/tmp\"\n[workload]\nkind = \"lat_fs\"\nduration = \"1s\"\nwarmup = \"0ms\"\nrepetitions = 3\n";
    let plain = crate::scenario::parse_str(text, "t.toml").unwrap();
    let profiled = crate::scenario::parse_str(&format!("{text}profile = \"cpu\"\n"), "t.toml").unwrap();
    assert_eq!(profiled_estimate(&plain), Duration::ZERO);
    // Three timed repetitions of 1 s, and one profiled (of 1 s too).
    let one = profiled_estimate(&profiled);
    assert!(one >= Duration::from_secs(1) && one * 2 < estimate(&profiled), "{one:?}");
    let plan = plan_for(&profiled, &[]).unwrap();
    let out = render_plan_table(&profiled, &plan, &[None], 200, true);
    let total = crate::text::human_duration(estimate(&profiled) + one);
    assert!(
        out.contains(&format!("estimated {total} of measurement (one profiled repetition per cell included)")),
        "{out}"
    );
}
