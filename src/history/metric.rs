//! What a history measures of one cell in one run: a metric with its unit, its direction
//! and its value, below both the series ([`super::series`]) and the paired ratios
//! ([`super::paired`]) that produce them. Names, units, directions and samples are the
//! metric catalogue's ([`crate::catalogue`]).

use crate::catalogue::Direction;

/// The value of one metric of a measured cell in one run (the metric itself is the
/// catalogue's [`crate::catalogue::Metric`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MetricValue {
    /// Its name (`total_loops`, `step1 rm_rf linux-2.5.63 elapsed`, `iops`,
    /// `paired ratio total_loops`).
    pub name: String,
    /// Unit of the value.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Direction,
    /// The run's value: the mean of its samples by the catalogue's rule (steady, undisturbed:
    /// [`crate::catalogue::samples`]); a paired ratio: the ratio.
    pub value: f64,
    /// The samples behind it (a paired ratio: its pairs).
    pub n: usize,
    /// Its place among the cell's metrics, counting those left out for a value that is not
    /// finite (paired ratios from `paired::PAIRED_POSITION` on): series are ordered by it.
    pub position: usize,
    /// A paired ratio's interval, as `series::Point::interval`.
    pub interval: Option<(f64, f64)>,
}

/// Unit of a paired ratio.
pub const RATIO_UNIT: &str = "ratio";

/// The unit named `text`, as the same `&'static str` a measured metric has: one of the
/// catalogue's [`crate::catalogue::UNITS`], or a paired ratio's.
pub fn unit_named(text: &str) -> Option<&'static str> {
    crate::catalogue::UNITS.into_iter().chain([RATIO_UNIT]).find(|u| *u == text)
}
