//! Descriptive statistics of one measured value over a cell's samples.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Descriptive statistics over a cell's samples (its repetitions, or its rounds' means).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n-1).
    pub stddev: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Lower bound of the 95% confidence interval of the mean (Student's t).
    pub ci95_low: f64,
    /// Upper bound of the 95% confidence interval of the mean (Student's t).
    pub ci95_high: f64,
    /// Coefficient of variation (stddev / |mean|; 0 when the mean is 0).
    pub cv: f64,
}
