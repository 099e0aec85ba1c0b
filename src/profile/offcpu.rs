//! Off-CPU stacks (`profile = "cpu+offcpu"`): where the cell's workers waited.
//!
//! `perf record` attached to fsbench samples the `sched:sched_switch` tracepoint (every
//! switch away from a worker, with its stack: the wait it went to sleep in) and records
//! `--switch-events` (when each worker ran again). `perf script` prints both in time
//! order; for each worker thread a switch-out is matched with its next switch-in, and the
//! time between is the stack's weight, in microseconds. A switch-out with `prev_state=R`
//! (preempted while runnable) is waiting for a CPU, not for the filesystem: it is counted
//! apart (`runnable_us`), not as a stack. Kernel threads (`+kthreads`, a system-wide
//! session) count only their uninterruptible waits ([`Whose::counts_wait`]). Why perf and not BPF: the tracepoint works in
//! VMs and needs no BPF build of perf (Debian's has none: `--off-cpu` is ignored there).

use std::collections::HashMap;
use std::io::BufRead;

use super::folded::Folded;
use super::whose::Whose;

/// The tracepoint an off-CPU profile samples (recorded as its `event`).
pub const EVENT: &str = "sched:sched_switch";

/// What one window's off-CPU record holds for the cell's workers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OffCpu {
    /// Stacks (root first, the process's name as the root frame) with microseconds blocked.
    pub blocked: Folded,
    /// Microseconds switched out while runnable (preempted).
    pub runnable_us: u64,
}

/// A switch-out waiting for its switch-in.
struct Out {
    at_us: u64,
    runnable: bool,
    stack: Vec<String>,
}

/// `comm pid/tid time: rest` (comm may hold spaces): (comm, pid, tid, microseconds, rest).
fn header(line: &str) -> Option<(&str, u32, u32, u64, &str)> {
    let colon = line.find(": ")?;
    let (head, rest) = (&line[..colon], line[colon + 2..].trim_start());
    let mut words = head.split_whitespace().rev();
    let time = words.next()?;
    let ids = words.next()?;
    let comm = head[..head.rfind(ids)?].trim_end();
    let (pid, tid) = ids.split_once('/')?;
    let (secs, frac) = time.split_once('.')?;
    let us = secs.parse::<u64>().ok()? * 1_000_000 + format!("{frac:0<6}")[..6].parse::<u64>().ok()?;
    Some((comm, pid.parse().ok()?, tid.parse().ok()?, us, rest))
}

/// A stack line of `perf script` (`\tffffffff8224 __schedule`): the function's name.
fn frame(line: &str) -> Option<String> {
    let mut parts = line.split_whitespace();
    let _addr = parts.next()?;
    let sym = parts.next().unwrap_or("[unknown]");
    let sym = sym.split("+0x").next().unwrap_or(sym);
    Some(crate::text::escape_control(sym))
}

/// Fold `perf script --show-switch-events -F comm,pid,tid,time,event,trace,ip,sym` output
/// into the off-CPU stacks of `whose` (fsbench's own threads left out unless in-process).
pub fn fold(script: impl BufRead, whose: Whose) -> std::io::Result<OffCpu> {
    let mut pending: HashMap<u32, Out> = HashMap::new();
    let mut blocked: HashMap<Vec<String>, u64> = HashMap::new();
    let mut runnable_us = 0u64;
    // The switch-out whose stack lines are being read: (tid, its record).
    let mut reading: Option<(u32, Out)> = None;
    for line in script.lines() {
        let line = line?;
        if line.starts_with(char::is_whitespace) {
            if let Some((_, out)) = reading.as_mut()
                && let Some(f) = frame(&line)
            {
                out.stack.push(f);
            }
            continue;
        }
        if let Some((tid, out)) = reading.take() {
            pending.insert(tid, out);
        }
        let Some((comm, pid, tid, at_us, rest)) = header(&line) else { continue };
        let Some(root) = whose.root(pid, comm) else { continue };
        if rest.starts_with("sched:sched_switch") {
            let state = rest.split_whitespace().find_map(|w| w.strip_prefix("prev_state=")).unwrap_or("");
            let runnable = state.starts_with('R');
            if !runnable && !whose.counts_wait(state) {
                // A kernel thread gone to sleep for work: its next switch-in ends nothing.
                pending.remove(&tid);
                continue;
            }
            let root = crate::text::escape_control(&root);
            reading = Some((tid, Out { at_us, runnable, stack: vec![root] }));
        } else if rest.starts_with("PERF_RECORD_SWITCH IN") || rest.starts_with("PERF_RECORD_SWITCH_CPU_WIDE IN") {
            let Some(out) = pending.remove(&tid) else { continue };
            let d = at_us.saturating_sub(out.at_us);
            if out.runnable {
                runnable_us += d;
            } else if d > 0 {
                // perf prints the leaf first: the folded line is root first.
                let mut stack = vec![out.stack[0].clone()];
                stack.extend(out.stack[1..].iter().rev().cloned());
                *blocked.entry(stack).or_default() += d;
            }
        }
    }
    let stacks = blocked.into_iter().collect();
    Ok(OffCpu { blocked: Folded { stacks }.normalise(), runnable_us })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
fsbench 100/101  10.000000:  sched:sched_switch: prev_comm=w prev_pid=101 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0
\tffffffff82248208 __schedule
\tffffffff82248b73 schedule
\tffffffff8174626f jbd2_log_wait_commit
\tffffffff817d7db6 ext4_sync_file

fsbench 100/101  10.000010: PERF_RECORD_SWITCH OUT
fsbench 100/101  10.004010: PERF_RECORD_SWITCH IN
w 200/200  10.100000:  sched:sched_switch: prev_comm=w prev_pid=200 prev_prio=120 prev_state=R+ ==> next_comm=x next_pid=7
\tffffffff82248208 __schedule

w 200/200  10.100500: PERF_RECORD_SWITCH IN
w 200/201  10.200000:  sched:sched_switch: prev_comm=w prev_pid=201 prev_prio=120 prev_state=S ==> next_comm=x next_pid=7
\tffffffff82248208 __schedule
\tffffffff8174626f jbd2_log_wait_commit+0x12
\tffffffff817d7db6 ext4_sync_file

w 200/201  10.203000: PERF_RECORD_SWITCH IN
w 200/202  10.300000:  sched:sched_switch: prev_comm=w prev_pid=202 prev_prio=120 prev_state=S ==> next_comm=x next_pid=7
\tffffffff82248208 __schedule
";

    #[test]
    fn blocked_time_goes_to_the_stack_it_slept_in_and_preemption_apart() {
        let o = fold(SCRIPT.as_bytes(), Whose::Workers { pid: 100, own_process: false, threads: None }).unwrap();
        // fsbench's own thread (pid 100) left out; w's 3 ms in jbd2; 0.5 ms preempted; the
        // switch-out with no switch-in before the end (tid 202) has no duration.
        assert_eq!(o.runnable_us, 500);
        assert_eq!(o.blocked.stacks.len(), 1, "{:?}", o.blocked);
        let (stack, us) = &o.blocked.stacks[0];
        assert_eq!(stack.join(";"), "w;ext4_sync_file;jbd2_log_wait_commit;__schedule");
        assert_eq!(*us, 3000);
        // In-process: fsbench's own threads are the workers: 4.01 ms more, in its own stack.
        let o = fold(SCRIPT.as_bytes(), Whose::Workers { pid: 100, own_process: true, threads: None }).unwrap();
        assert_eq!(o.blocked.samples(), 7010);
    }

    #[test]
    fn headers_with_spaces_in_the_name_parse() {
        let (comm, pid, tid, us, rest) = header("V8 Worker 24636/25607  94564.109216: PERF_RECORD_SWITCH IN").unwrap();
        assert_eq!((comm, pid, tid, us, rest), ("V8 Worker", 24636, 25607, 94_564_109_216, "PERF_RECORD_SWITCH IN"));
    }
}
