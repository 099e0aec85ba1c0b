//! `[compare]`: the axis whose values are the arms of a paired comparison, and the
//! sequential bounds on its pairs.

use crate::scenario::diagnose::{Ctx, p};
use crate::scenario::error::did_you_mean;
use crate::scenario::file::CompareFile;
use crate::scenario::*;

/// Most pairs a pair group may run: every pair provisions two cells afresh, so more would
/// be hours per group, and a typo (`max = 3200`) should not plan a week.
const MAX_PAIRS: i64 = 1000;

pub(super) fn validate_compare(ctx: &Ctx, c: &CompareFile, matrix: &Matrix) -> Result<CompareSpec, ScenarioError> {
    let arms = c.arms.trim();
    // The kernels are arms only in `run --paired`, which checks there are two or more.
    if arms != KERNEL_ARMS {
        let Some(values) = matrix.axis_values(arms) else {
            let axes: Vec<&str> =
                crate::scenario::AXES.iter().copied().filter(|a| matrix.axis_values(a).is_some()).collect();
            return Err(ctx.at(
                &p("compare.arms"),
                false,
                format!("`{arms}` is not an axis of this scenario's matrix"),
                did_you_mean(arms, &axes).or(Some(format!(
                    "arms are the values of one axis: {} (or `{KERNEL_ARMS}`: the kernels of `run --paired`)",
                    axes.join(", ")
                ))),
            ));
        };
        if values.len() < 2 {
            return Err(ctx.value_help(
                &p("compare.arms"),
                format!("axis `matrix.{arms}` has one value (`{}`), but arms need at least two", values[0]),
                format!(
                    "give `matrix.{arms}` a baseline and a candidate value, e.g. `{arms} = [\"{}\", ...]`",
                    values[0]
                ),
            ));
        }
    }
    let pairs = c.pairs.as_ref();
    let min = pairs.and_then(|x| x.min).unwrap_or(DEFAULT_MIN_PAIRS as i64);
    let max = pairs.and_then(|x| x.max).unwrap_or((DEFAULT_MAX_PAIRS as i64).max(min));
    if min < 2 {
        return Err(ctx.value_help(
            &p("compare.pairs.min"),
            format!("`min` is {min}, but a paired interval needs at least 2 pairs"),
            "use 6 or more: the Wilcoxon check needs 6 pairs",
        ));
    }
    if max > MAX_PAIRS {
        return Err(
            ctx.value(&p("compare.pairs.max"), format!("`max` is {max}, more than the {MAX_PAIRS} pairs allowed"))
        );
    }
    if min > max {
        let key = if pairs.and_then(|x| x.max).is_some() { "compare.pairs.max" } else { "compare.pairs.min" };
        return Err(ctx.value(&p(key), format!("pairs `min` ({min}) is more than `max` ({max})")));
    }
    let seed = match c.seed {
        Some(n) if n < 0 => {
            return Err(ctx.value_help(
                &p("compare.seed"),
                format!("seed {n} is negative"),
                "use 0 or more, or leave it out to draw one when the run starts",
            ));
        }
        n => n.map(|n| n as u64),
    };
    Ok(CompareSpec { arms: arms.to_string(), min_pairs: min as u32, max_pairs: max as u32, seed })
}

/// Pairs replace rounds: every member of a pair is a round of its cell already, so a
/// paired scenario with `workload.rounds > 1` would mean two things at once.
pub(super) fn refuse_rounds_with_pairs(ctx: &Ctx, workload: &Workload) -> Result<(), ScenarioError> {
    match super::by_kind::rounds(workload) {
        Some(rounds) if rounds > 1 => Err(ctx.value_help(
            &p("workload.rounds"),
            format!("`rounds = {rounds}` with `[compare]`: in a paired run the pairs are the rounds"),
            "remove `rounds`: each pair member is stored as one round of its cell, and `compare.pairs` says how many",
        )),
        _ => Ok(()),
    }
}

/// A paired steps cell holds every member's iterations: `iterations × (pairs.max + reruns)`
/// at most, which must fit what a cell file may hold ([`crate::model::MAX_SAMPLES`]), or the
/// run would write cells no reader loads.
pub(super) fn refuse_oversized_steps_cells(
    ctx: &Ctx,
    workload: &Workload,
    spec: &CompareSpec,
) -> Result<(), ScenarioError> {
    let Some(iterations) = super::by_kind::iterations_per_member(workload) else { return Ok(()) };
    let members = u64::from(spec.max_pairs) + u64::from(PAIR_RERUNS_WITHOUT_BUDGET);
    let most = u64::from(iterations) * members;
    if most <= crate::model::MAX_SAMPLES as u64 {
        return Ok(());
    }
    Err(ctx.value_help(
        &p("workload.iterations"),
        format!(
            "`iterations = {}` with up to {members} members per cell ({} pairs and {PAIR_RERUNS_WITHOUT_BUDGET} reruns) \
             is {most} iterations in one cell file, more than the {} a cell may hold",
            iterations,
            spec.max_pairs,
            crate::model::MAX_SAMPLES
        ),
        "lower `workload.iterations` or `compare.pairs.max`",
    ))
}

#[cfg(test)]
mod tests {
    use crate::scenario::*;

    const BASE: &str = "schema = 1\nname = \"t\"\n[matrix]\nfs = [\"ext4\", \"ext2\"]\n[backing]\nkind = \"dir\"\npath = \"/tmp\"\n[workload]\nkind = \"lat_fs\"\n";

    fn with_compare(body: &str) -> String {
        format!("{BASE}[compare]\n{body}\n")
    }

    #[test]
    fn arms_name_an_axis_and_pairs_default_to_6_to_32() {
        let s = parse_str(&with_compare("arms = \"fs\""), "t.toml").unwrap();
        assert_eq!(s.compare, Some(CompareSpec { arms: "fs".into(), min_pairs: 6, max_pairs: 32, seed: None }));
        assert_eq!(s.matrix.axis_values("fs").unwrap(), ["ext4", "ext2"]);
        let s = parse_str(&with_compare("arms = \"test\"\npairs = { min = 2, max = 4 }"), "t.toml").unwrap();
        assert_eq!(s.compare, Some(CompareSpec { arms: "test".into(), min_pairs: 2, max_pairs: 4, seed: None }));
        // A min above the default max raises the default max with it.
        let s = parse_str(&with_compare("arms = \"fs\"\npairs = { min = 40 }"), "t.toml").unwrap();
        assert_eq!(s.compare.map(|c| (c.min_pairs, c.max_pairs)), Some((40, 40)));
        assert_eq!(parse_str(BASE, "t.toml").unwrap().compare, None);
    }

    #[test]
    fn arms_on_a_one_value_axis_point_at_the_key() {
        let e = parse_str(&with_compare("arms = \"quota\""), "t.toml").unwrap_err();
        assert_eq!((e.line, e.column), (Some(11), Some(8)), "{e}");
        assert!(e.message.contains("has one value (`off`)"), "{e}");
    }

    #[test]
    fn arms_naming_no_axis_suggest_the_nearest() {
        let e = parse_str(&with_compare("arms = \"fss\""), "t.toml").unwrap_err();
        assert_eq!((e.line, e.column), (Some(11), Some(8)), "{e}");
        assert!(e.message.contains("`fss` is not an axis"), "{e}");
        assert_eq!(e.help.as_deref(), Some("did you mean `fs`?"));
        // A steps workload has no `test` axis.
        let steps = BASE.replace("kind = \"lat_fs\"", "kind = \"steps\"\nsteps = [{ op = \"sync\" }]");
        let e = parse_str(&format!("{steps}[compare]\narms = \"test\"\n"), "t.toml").unwrap_err();
        assert!(e.message.contains("`test` is not an axis"), "{e}");
    }

    #[test]
    fn pairs_bounds_are_checked() {
        let e = parse_str(&with_compare("arms = \"fs\"\npairs = { min = 8, max = 4 }"), "t.toml").unwrap_err();
        assert_eq!(e.line, Some(12), "{e}");
        assert_eq!(e.key.as_deref(), Some("compare.pairs.max"));
        assert!(e.message.contains("`min` (8) is more than `max` (4)"), "{e}");
        let e = parse_str(&with_compare("arms = \"fs\"\npairs = { min = 1 }"), "t.toml").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("compare.pairs.min"));
        assert!(e.message.contains("at least 2 pairs"), "{e}");
        let e = parse_str(&with_compare("arms = \"fs\"\npairs = { mn = 3 }"), "t.toml").unwrap_err();
        assert!(e.message.contains("unknown key `mn`"), "{e}");
    }

    #[test]
    fn the_paired_example_scenario_pairs_ext4_with_its_nodelalloc_variant() {
        let text = include_str!("../../../scenarios/paired-nodelalloc.toml");
        let s = parse_str(text, "paired-nodelalloc.toml").unwrap();
        assert_eq!(s.compare, Some(CompareSpec { arms: "fs".into(), min_pairs: 6, max_pairs: 32, seed: None }));
        assert_eq!(s.fs_type("ext4-nodelalloc"), "ext4");
    }

    #[test]
    fn the_paired_untar_example_pairs_the_seed_loop_on_ext4_and_its_nodelalloc_variant() {
        let text = include_str!("../../../scenarios/paired-untar.toml");
        assert!(text.starts_with("#:schema ../schemas/scenario.schema.json"));
        let s = parse_str(text, "paired-untar.toml").unwrap();
        assert_eq!(s.compare, Some(CompareSpec { arms: "fs".into(), min_pairs: 6, max_pairs: 20, seed: None }));
        assert!(matches!(&s.workload, Workload::Steps(st) if st.iterations == 2 && st.steps.len() == 3));
    }

    #[test]
    fn a_seed_is_kept_and_rounds_are_refused_since_pairs_are_the_rounds() {
        let s = parse_str(&with_compare("arms = \"fs\"\nseed = 42"), "t.toml").unwrap();
        assert_eq!(s.compare.and_then(|c| c.seed), Some(42));
        let e = parse_str(&with_compare("arms = \"fs\"\nseed = -1"), "t.toml").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("compare.seed"), "{e}");
        let rounds = with_compare("arms = \"fs\"").replace("kind = \"lat_fs\"\n", "kind = \"lat_fs\"\nrounds = 3\n");
        let e = parse_str(&rounds, "t.toml").unwrap_err();
        assert_eq!((e.key.as_deref(), e.line), (Some("workload.rounds"), Some(10)), "{e}");
        assert!(e.message.contains("the pairs are the rounds"), "{e}");
    }

    #[test]
    fn a_paired_steps_scenario_whose_cells_could_outgrow_a_cell_file_is_refused() {
        let steps = |iterations: u32, max: u32| {
            let w = format!("kind = \"steps\"\niterations = {iterations}\nsteps = [{{ op = \"sync\" }}]");
            let text = BASE.replace("kind = \"lat_fs\"", &w);
            parse_str(&format!("{text}[compare]\narms = \"fs\"\npairs = {{ min = 2, max = {max} }}\n"), "t.toml")
        };
        // 10 000 iterations × (32 pairs + 3 reruns) would be 350 000 iterations in one cell.
        let e = steps(10_000, 32).unwrap_err();
        assert_eq!((e.key.as_deref(), e.line), (Some("workload.iterations"), Some(10)), "{e}");
        assert!(e.message.contains("is 350000 iterations in one cell file, more than the 100000"), "{e}");
        // 2 000 × 35 = 70 000 fits; so do the seed's 5 iterations with 1000 pairs.
        assert!(steps(2_000, 32).is_ok());
        assert!(steps(5, 1000).is_ok());
    }

    #[test]
    fn set_compare_arms_creates_the_table() {
        let s = parse_overridden(BASE, "t.toml", std::path::Path::new("/"), &["compare.arms=fs".to_string()]).unwrap();
        assert_eq!(s.compare.map(|c| c.arms), Some("fs".to_string()));
    }
}
