//! A lat_fs cell as one member of a pair (`[compare] arms`): its value for the sequential
//! stop, and a stored round read back out of the cell (a resumed paired run's pairs).

use crate::host::pair_load::MemberLoad;
use crate::model::{CellResult, LatfsRepetition};
use crate::workload::kind::Member;

/// What a member contributes to its pair, or why it voids the pair: the mean of a lat_fs
/// cell's repetitions (loops/ms), disturbed ones included, with the load they saw (the
/// pair decides whether that load voids it: `host::pair_load`); failed and skipped cells,
/// and cells without repetitions, void it.
pub fn member_value(r: &CellResult) -> Result<Member, String> {
    r.measured()?;
    let Some(l) = &r.latfs else { return Err("no lat_fs samples".into()) };
    let value = reps_value(l.repetitions.iter())?;
    Ok(Member { value, loads: vec![MemberLoad::of(l.repetitions.iter().filter_map(|x| x.disturbance.as_ref()))] })
}

/// The value round `round` of a stored lat_fs cell contributed to its pair, as
/// [`member_value`] computed it when the round was measured.
pub fn round_value(r: &CellResult, round: u32) -> Result<f64, String> {
    let Some(l) = &r.latfs else { return Err("no lat_fs samples".into()) };
    reps_value(l.repetitions.iter().filter(|x| x.round == round))
}

/// The mean loops/ms of `reps`, or why they make no member value.
fn reps_value<'r>(reps: impl Iterator<Item = &'r LatfsRepetition>) -> Result<f64, String> {
    let v: Vec<f64> = reps.map(|x| x.total_loops_per_ms).collect();
    if v.is_empty() {
        return Err("no repetitions".into());
    }
    Ok(v.iter().sum::<f64>() / v.len() as f64)
}
