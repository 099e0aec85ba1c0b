//! Sharding a run over job engines (Slurm arrays, Kubernetes indexed Jobs) and merging the shards.
//!
//! A shard is one of N disjoint parts of a scenario's plan. The partition is a
//! pure function of the plan (the cells after `--only`, with their index in the
//! full expansion) and of N, so every task of an array job computes the same
//! partition without talking to the others: a greedy longest-processing-time
//! assignment by estimated cell cost, ties broken by plan index then shard
//! number. Each shard runs its cells in plan order and writes its own run
//! directory; `fsbench merge` puts the shards back together.
//!
//! Submodules: [`env`] (which shard am I, from `--shard` or engine variables),
//! [`merge`] (grouping, completeness, rendering), [`slurm`] and [`k8s`] (job
//! generation).

pub mod env;
pub mod k8s;
pub mod merge;
pub mod slurm;

use std::time::Duration;

use crate::plan::Cell;
use crate::results::RunShard;
use crate::scenario::Scenario;

pub use env::{ShardEnvError, resolve_shard, run_key};

/// One shard: the `index`-th (from 0) of `count` parts. Displayed as `K/N` with K from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShardSpec {
    /// Shard index, from 0.
    pub index: u32,
    /// Number of shards, at least 1.
    pub count: u32,
}

impl ShardSpec {
    /// A shard from its 0-based index; `None` unless `index < count`.
    pub fn new(index: u32, count: u32) -> Option<ShardSpec> {
        (count >= 1 && index < count).then_some(ShardSpec { index, count })
    }

    /// The shard number as users write it (from 1).
    pub fn number(&self) -> u32 {
        self.index + 1
    }

    /// Parse `K/N` (K from 1 to N).
    pub fn parse(text: &str) -> Result<ShardSpec, ShardEnvError> {
        let bad = || ShardEnvError::BadSpec(text.to_string());
        let (k, n) = text.trim().split_once('/').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if k == 0 {
            return Err(bad());
        }
        ShardSpec::new(k - 1, n).ok_or_else(bad)
    }
}

impl std::fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.number(), self.count)
    }
}

pub use crate::plan::cell_cost;

/// Assign every cell to a shard: `result[i]` is the 0-based shard of `cells[i]`.
///
/// Greedy longest-processing-time: cells by decreasing cost (ties: lower plan
/// index first) each go to the least-loaded shard (ties: lower shard). Costs are
/// compared in whole microseconds so the result does not depend on float
/// rounding, and every shard gets a cell whenever `count <= cells.len()`.
pub fn assign(costs: &[(usize, Duration)], count: u32) -> Vec<u32> {
    let count = count.max(1) as usize;
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by(|&a, &b| costs[b].1.as_micros().cmp(&costs[a].1.as_micros()).then(costs[a].0.cmp(&costs[b].0)));
    let mut load = vec![0u128; count];
    let mut out = vec![0u32; costs.len()];
    for i in order {
        let (shard, _) = load.iter().enumerate().min_by_key(|(k, l)| (**l, *k)).expect("count >= 1");
        load[shard] += costs[i].1.as_micros().max(1);
        out[i] = shard as u32;
    }
    out
}

/// What is assigned to a shard as one: a cell, or in a paired scenario a whole pair
/// group (its members must run back to back on one machine); positions in `cells`, in
/// order of first appearance.
fn units(s: &Scenario, cells: &[Cell]) -> Vec<Vec<usize>> {
    let Some(spec) = &s.compare else { return (0..cells.len()).map(|i| vec![i]).collect() };
    let arms = s.matrix.axis_values(&spec.arms).unwrap_or_default();
    let position = |c: &Cell| cells.iter().position(|x| x.index == c.index).expect("a cell of the plan");
    let mut units: Vec<Vec<usize>> = crate::plan::pair_groups(cells, spec, &arms)
        .iter()
        .map(|g| g.members.iter().map(|c| position(c)).collect())
        .collect();
    let grouped: std::collections::BTreeSet<usize> = units.iter().flatten().copied().collect();
    units.extend((0..cells.len()).filter(|i| !grouped.contains(i)).map(|i| vec![i]));
    units.sort_by_key(|u| u.iter().min().copied());
    units
}

/// The units of a plan ([`units`]), what each costs, and the shard each goes to.
struct Assigned {
    units: Vec<Vec<usize>>,
    costs: Vec<(usize, Duration)>,
    owner: Vec<u32>,
}

/// The shard of each unit of [`units`] and the units' costs.
fn assign_units(s: &Scenario, cells: &[Cell], count: u32) -> Assigned {
    let units = units(s, cells);
    let costs: Vec<(usize, Duration)> =
        units.iter().map(|u| (cells[u[0]].index, u.iter().map(|&i| cell_cost(s, &cells[i])).sum())).collect();
    let owner = assign(&costs, count);
    Assigned { units, costs, owner }
}

/// The cells of one shard, in plan order; a paired scenario's pair groups stay whole.
pub fn select(s: &Scenario, cells: &[Cell], shard: ShardSpec) -> Vec<Cell> {
    let Assigned { units, owner, .. } = assign_units(s, cells, shard.count);
    let mut mine: Vec<usize> =
        units.into_iter().zip(owner).filter(|(_, o)| *o == shard.index).flat_map(|(u, _)| u).collect();
    mine.sort_unstable();
    mine.into_iter().map(|i| cells[i].clone()).collect()
}

/// The cells of one shard of a plan and what `run.json` records about it.
pub fn shard_plan(
    s: &Scenario,
    cells: Vec<Cell>,
    shard: ShardSpec,
    env: &dyn Fn(&str) -> Option<String>,
) -> (Vec<Cell>, RunShard) {
    let total_cells = cells.len();
    let mine = select(s, &cells, shard);
    let sha = crate::results::sha256_hex(s.source.text.as_bytes());
    let meta = RunShard {
        index: shard.number(),
        count: shard.count,
        key: run_key(env, &sha, shard.count),
        total_cells,
        cell_indices: mine.iter().map(|c| c.index).collect(),
    };
    (mine, meta)
}

/// Estimated wall time of each shard (for `plan`-like summaries and the balance test).
pub fn shard_loads(s: &Scenario, cells: &[Cell], count: u32) -> Vec<Duration> {
    let Assigned { costs, owner, .. } = assign_units(s, cells, count);
    let mut loads = vec![Duration::ZERO; count.max(1) as usize];
    for (i, shard) in owner.into_iter().enumerate() {
        loads[shard as usize] += costs[i].1;
    }
    loads
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(matrix: &str, backing: &str) -> Scenario {
        let workload = if backing.contains("[workload]") { "" } else { "[workload]\nkind = \"lat_fs\"\n" };
        let text = format!("schema = 1\nname = \"t\"\n[matrix]\n{matrix}\n[backing]\n{backing}\n{workload}");
        crate::scenario::parse_str(&text, "t.toml").unwrap()
    }

    #[test]
    fn a_paired_scenarios_pair_groups_stay_whole_in_one_shard() {
        let s = scenario(
            "fs = [\"ext4\", \"ext2\"]\ntest = [\"chown\", \"open_close\", \"create_unlink\"]\n[compare]\narms = \"fs\"",
            "kind = \"tmpfs-loop\"\nimage_size = \"64MiB\"",
        );
        let cells = crate::plan::expand(&s).cells;
        let mut seen = Vec::new();
        for k in 0..3 {
            let mine = select(&s, &cells, ShardSpec { index: k, count: 3 });
            // One group per shard: both arms of one test.
            assert_eq!(mine.len(), 2, "{mine:?}");
            assert_eq!(mine[0].params.test, mine[1].params.test);
            seen.extend(mine.iter().map(|c| c.index));
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..6).collect::<Vec<_>>());
    }

    #[test]
    fn parse_and_display_k_of_n() {
        assert_eq!(ShardSpec::parse("3/8").unwrap(), ShardSpec { index: 2, count: 8 });
        assert_eq!(ShardSpec::parse(" 1 / 1 ").unwrap().to_string(), "1/1");
        for bad in ["0/4", "5/4", "1/0", "3", "a/4", "1/-2", "/", ""] {
            assert!(ShardSpec::parse(bad).is_err(), "{bad}");
        }
    }

    /// Every cell in exactly one shard, for every N from 1 to the cell count (and beyond).
    #[test]
    fn sharding_is_a_partition_for_every_n() {
        let s = scenario(
            "fs = [\"ext4\", \"ext2\"]\nlayout = [\"M\", \"S\"]\ntasks = [1, 2, 4, 8]\ntest = [\"chown\", \"open_close\", \"create_unlink\"]",
            "kind = \"tmpfs-loop\"",
        );
        let cells = crate::plan::expand(&s).cells;
        assert_eq!(cells.len(), 48);
        for n in 1..=cells.len() as u32 + 2 {
            let mut seen = vec![0u32; cells.len()];
            for k in 0..n {
                let part = select(&s, &cells, ShardSpec::new(k, n).unwrap());
                if n as usize <= cells.len() {
                    assert!(!part.is_empty(), "N={n}: shard {} is empty", k + 1);
                }
                assert!(part.windows(2).all(|w| w[0].index < w[1].index), "N={n}: plan order inside a shard");
                for c in part {
                    seen[c.index] += 1;
                }
            }
            assert!(seen.iter().all(|&x| x == 1), "N={n}: counts {seen:?}");
            // Deterministic: the same input gives the same partition.
            let again = select(&s, &cells, ShardSpec::new(0, n).unwrap());
            assert_eq!(again, select(&s, &cells, ShardSpec::new(0, n).unwrap()));
        }
    }

    #[test]
    fn filtered_plans_partition_their_own_cells() {
        let s = scenario("fs = [\"ext4\", \"ext2\"]\ntasks = [1, 2, 4]", "kind = \"dir\"\npath = \"/tmp\"");
        let plan = crate::plan::expand(&s);
        let kept: Vec<Cell> = plan.cells.into_iter().filter(|c| c.params.tasks != 2).collect();
        for n in 1..=kept.len() as u32 {
            let mut all: Vec<usize> =
                (0..n).flat_map(|k| select(&s, &kept, ShardSpec::new(k, n).unwrap())).map(|c| c.index).collect();
            all.sort();
            assert_eq!(all, kept.iter().map(|c| c.index).collect::<Vec<_>>());
        }
    }

    #[test]
    fn layout_m_costs_more_and_is_balanced() {
        // Short windows: provisioning (one image per task in layout M) dominates.
        let s = scenario(
            "fs = [\"ext4\"]\nlayout = [\"M\", \"S\"]\ntasks = [1, 8]\ntest = [\"chown\"]",
            "kind = \"tmpfs-loop\"\n[workload]\nkind = \"lat_fs\"\nwarmup = \"10ms\"\nduration = \"50ms\"\nrepetitions = 1",
        );
        let cells = crate::plan::expand(&s).cells;
        let m8 = cells.iter().find(|c| c.params.layout == crate::model::Layout::M && c.params.tasks == 8).unwrap();
        let s1 = cells.iter().find(|c| c.params.layout == crate::model::Layout::S && c.params.tasks == 1).unwrap();
        assert!(cell_cost(&s, m8) > cell_cost(&s, s1));
        // LPT: the expensive M×8 cell is alone in its shard; the three cheap ones share the other.
        let loads = shard_loads(&s, &cells, 2);
        let total: Duration = loads.iter().sum();
        let max = *loads.iter().max().unwrap();
        let biggest = cells.iter().map(|c| cell_cost(&s, c)).max().unwrap();
        // LPT's guarantee: the largest shard is at most max(average + biggest cell) — here tight.
        assert!(max <= total / 2 + biggest, "{loads:?}");
        assert_eq!(select(&s, &cells, ShardSpec::new(0, 2).unwrap()).len(), 1);
        assert_eq!(select(&s, &cells, ShardSpec::new(1, 2).unwrap()).len(), 3);
    }

    /// The bundled 128-cell scenario over 8 machines: LPT keeps every shard within
    /// one (largest) cell of the ideal, where contiguous slices of the plan would not.
    #[test]
    fn quota_smp_over_eight_shards_is_balanced() {
        let s = crate::scenario::parse_str(crate::scenario::file::embedded("quota-smp").unwrap().text, "q").unwrap();
        let cells = crate::plan::expand(&s).cells;
        let loads = shard_loads(&s, &cells, 8);
        let total: Duration = loads.iter().sum();
        let ideal = total / 8;
        let biggest = cells.iter().map(|c| cell_cost(&s, c)).max().unwrap();
        let (min, max) = (*loads.iter().min().unwrap(), *loads.iter().max().unwrap());
        eprintln!("quota-smp, 8 shards: ideal {ideal:?}, min {min:?}, max {max:?}, biggest cell {biggest:?}");
        assert!(max <= ideal + biggest && min + biggest >= ideal, "{loads:?}");
        // Contiguous slices (plan order) put all layout-M cells, the expensive ones, together.
        let slice: Vec<Duration> = cells.chunks(16).map(|ch| ch.iter().map(|c| cell_cost(&s, c)).sum()).collect();
        eprintln!("contiguous slices: min {:?}, max {:?}", slice.iter().min().unwrap(), slice.iter().max().unwrap());
        assert!(slice.iter().max().unwrap() >= &max, "{slice:?} vs {loads:?}");
    }

    #[test]
    fn equal_costs_spread_round_robin_in_plan_order() {
        let costs: Vec<(usize, Duration)> = (0..7).map(|i| (i, Duration::from_secs(1))).collect();
        assert_eq!(assign(&costs, 3), vec![0, 1, 2, 0, 1, 2, 0]);
    }
}
