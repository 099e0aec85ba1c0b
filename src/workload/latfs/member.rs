//! A lat_fs cell as one member of a pair (`[compare] arms`): its value for the sequential
//! stop, and a stored round read back out of the cell (a resumed paired run's pairs).

use crate::model::{CellResult, LatfsRepetition};

/// The value a member contributes to its pair, or why it voids the pair: the mean of a
/// lat_fs cell's repetitions (loops/ms); failed, skipped and disturbed cells (one
/// disturbed repetition is enough) void it.
pub fn member_value(r: &CellResult) -> Result<f64, String> {
    r.usable()?;
    let Some(l) = &r.latfs else { return Err("no lat_fs samples".into()) };
    reps_value(l.repetitions.iter())
}

/// The value round `round` of a stored lat_fs cell contributed to its pair, as
/// [`member_value`] computed it when the round was measured.
pub fn round_value(r: &CellResult, round: u32) -> Result<f64, String> {
    let Some(l) = &r.latfs else { return Err("no lat_fs samples".into()) };
    reps_value(l.repetitions.iter().filter(|x| x.round == round))
}

/// The mean loops/ms of `reps`, or why they make no member value.
fn reps_value<'r>(reps: impl Iterator<Item = &'r LatfsRepetition>) -> Result<f64, String> {
    let mut sum = 0.0;
    let mut n = 0usize;
    for x in reps {
        if !x.counts() {
            return Err("disturbed".into());
        }
        sum += x.total_loops_per_ms;
        n += 1;
    }
    if n == 0 {
        return Err("no repetitions".into());
    }
    Ok(sum / n as f64)
}
