//! Busy neighbours for tests of disturbance: CPU hogs that are not fsbench's.

/// Busy loops that are not fsbench's: `sh -c 'while :; do :; done'` in a process group of
/// their own, killed as a group and reaped on drop, so a failing test leaves none behind.
pub struct Hogs {
    group: i32,
    children: Vec<std::process::Child>,
}

impl Hogs {
    /// `n` busy loops, in one new process group.
    pub fn start(n: usize) -> Hogs {
        use std::os::unix::process::CommandExt;
        let mut hogs = Hogs { group: 0, children: Vec::new() };
        for _ in 0..n {
            let child = std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .stdin(std::process::Stdio::null())
                .process_group(hogs.group)
                .spawn()
                .unwrap();
            if hogs.group == 0 {
                hogs.group = child.id() as i32;
            }
            hogs.children.push(child);
        }
        hogs
    }

    /// Wait until every hog has been on a CPU (a barrier, not a sleep): a window opened
    /// after this sees them all running. Panics after 30 s.
    pub fn wait_running(self) -> Hogs {
        let cpu_ticks = |pid: u32| -> u64 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let f: Vec<&str> = stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect()).unwrap_or_default();
            // utime and stime: fields 14 and 15 of stat, 12 and 13 after the comm.
            let field = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            field(11) + field(12)
        };
        let ran = super::poll(std::time::Duration::from_secs(30), std::time::Duration::from_millis(5), || {
            self.children.iter().all(|c| cpu_ticks(c.id()) > 0).then_some(())
        });
        assert!(ran.is_some(), "the hogs never ran");
        self
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        // The whole group, then each child reaped.
        let _ = std::process::Command::new("kill").args(["-KILL", "--", &format!("-{}", self.group)]).status();
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
