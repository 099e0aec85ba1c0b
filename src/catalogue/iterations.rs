//! Which iterations of a steps cell a statistic reads: `steady` (the samples rule of the
//! catalogue, [`super::samples`]), or `compare --iterations all|last|N`.

use std::str::FromStr;

use schemars::JsonSchema;
use serde::Serialize;

use crate::model::StepTiming;

/// Which iterations of each cell a comparison uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Iterations {
    /// Every iteration.
    All,
    /// Every iteration whose `rm_rf` removed something (from the second on when not recorded).
    #[default]
    Steady,
    /// The last iteration.
    Last,
    /// Iteration N, from 1.
    Nth(usize),
}

impl FromStr for Iterations {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(Self::All),
            "steady" => Ok(Self::Steady),
            "last" => Ok(Self::Last),
            n => match n.parse::<usize>() {
                Ok(k) if k >= 1 => Ok(Self::Nth(k)),
                _ => Err(format!("`{s}`: use all, steady, last, or an iteration number from 1")),
            },
        }
    }
}

impl std::fmt::Display for Iterations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::All => f.write_str("all"),
            Self::Steady => f.write_str("steady"),
            Self::Last => f.write_str("last"),
            Self::Nth(k) => write!(f, "{k}"),
        }
    }
}

impl Iterations {
    /// The chosen iteration indices (from 0) of one cell's iterations.
    pub fn select(self, iterations: &[Vec<StepTiming>]) -> Vec<usize> {
        let n = iterations.len();
        match self {
            Self::All => (0..n).collect(),
            Self::Last => n.checked_sub(1).into_iter().collect(),
            Self::Nth(k) => (k <= n).then_some(k - 1).into_iter().collect(),
            Self::Steady => {
                if n <= 1 {
                    return (0..n).collect();
                }
                let removed = |it: &Vec<StepTiming>| {
                    let rm: Vec<Option<u64>> = it.iter().filter(|s| s.op == "rm_rf").map(|s| s.entries).collect();
                    if rm.is_empty() || rm.iter().any(Option::is_none) {
                        None
                    } else {
                        Some(rm.iter().any(|e| *e > Some(0)))
                    }
                };
                let known: Vec<Option<bool>> = iterations.iter().map(removed).collect();
                if known.iter().all(Option::is_some) {
                    let steady: Vec<usize> = (0..n).filter(|i| known[*i] == Some(true)).collect();
                    // A loop without rm_rf (or one that never finds its tree) has no
                    // steady state by this rule: fall back to "from the second on".
                    if !steady.is_empty() {
                        return steady;
                    }
                }
                (1..n).collect()
            }
        }
    }

    /// The samples of step `j` that statistics use, as (iteration from 0, timing): the chosen
    /// iterations' step `j`, less the disturbed ones ([`StepTiming::counts`]). `compare`'s
    /// tables and the gate both read a step's samples here, so they are over one set.
    pub fn step_samples(self, iterations: &[Vec<StepTiming>], j: usize) -> Vec<(usize, &StepTiming)> {
        self.select(iterations)
            .into_iter()
            .filter_map(|i| iterations[i].get(j).map(|s| (i, s)))
            .filter(|(_, s)| s.counts())
            .collect()
    }

    /// The one iteration whose time(1) lines stand for a cell in the seed's layout:
    /// the last chosen one (the seed reported its 5th and last run).
    pub fn representative(self, iterations: &[Vec<StepTiming>]) -> Option<usize> {
        self.select(iterations).last().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn it(rm: Option<u64>, untar_ms: u64) -> Vec<StepTiming> {
        let t = |label: &str, op: &str, ms: u64, entries| StepTiming {
            label: label.into(),
            op: op.into(),
            user_us: 0,
            system_us: 0,
            elapsed_us: ms * 1000,
            max_rss_kib: 0,
            entries,
            ..Default::default()
        };
        vec![
            t("rm -rf x", "rm_rf", 10, rm),
            t("tar zxf x.tar.gz", "untar", untar_ms, Some(100)),
            t("sync", "sync", 5, None),
        ]
    }

    #[test]
    fn steady_follows_what_rm_rf_removed_and_falls_back_to_the_second_on() {
        let counted = vec![it(Some(0), 1), it(Some(100), 2), it(Some(100), 3)];
        assert_eq!(Iterations::Steady.select(&counted), [1, 2]);
        let uncounted = vec![it(None, 1), it(None, 2), it(None, 3)];
        assert_eq!(Iterations::Steady.select(&uncounted), [1, 2]);
        assert_eq!(Iterations::Steady.select(&uncounted[..1]), [0]);
        // rm_rf on a path the archive never creates: no steady iteration by the rule.
        let wrong_path = vec![it(Some(0), 1), it(Some(0), 2)];
        assert_eq!(Iterations::Steady.select(&wrong_path), [1]);
        assert_eq!(Iterations::Last.select(&counted), [2]);
        assert_eq!(Iterations::Nth(1).select(&counted), [0]);
        assert!(Iterations::Nth(9).select(&counted).is_empty());
        assert_eq!("5".parse::<Iterations>(), Ok(Iterations::Nth(5)));
        assert!("0".parse::<Iterations>().is_err() && "most".parse::<Iterations>().is_err());
    }
}
