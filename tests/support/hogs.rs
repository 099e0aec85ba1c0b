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
