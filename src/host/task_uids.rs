//! The uids and gids lat_fs workers run as with `per_task_uid`: task i as `base + (i << 3)`
//! (and `+ 1` for the chown test's second owner), lmbench `-U`'s spacing.
//!
//! lmbench's own base is 100 (seed 000: uid = gid = (task << 3) + 100), but on a real host
//! those ids belong to system users (uid 100 is `messagebus` on Debian), whose processes may
//! then signal, ptrace or read the workers, and whose files the quota numbers would mix in.
//! So the base is chosen from [`CANDIDATES`], far above the ranges distributions and
//! container runtimes hand out: the first whose whole range no user or group in
//! /etc/passwd and /etc/group holds and no running process has as a real, effective, saved
//! or filesystem id. The quota work a task does is the same for any id it holds alone.

use std::sync::OnceLock;

/// lmbench `-U`'s base (seed 000's uids: 100, 108, 116, ...); documented, not used.
pub const LMBENCH_BASE: u32 = 100;

/// The bases tried in order: 0x7000_0000 and up, 2^24 apart, all below 2^31 (tools that
/// read ids as signed 32-bit numbers still see them as positive).
pub const CANDIDATES: [u32; 8] =
    [0x7000_0000, 0x7100_0000, 0x7200_0000, 0x7300_0000, 0x7400_0000, 0x7500_0000, 0x7600_0000, 0x7700_0000];

/// How many ids a base reserves: tasks up to 65,536 at 8 ids apart.
pub const RANGE: u32 = 1 << 19;

/// The uid and gid of task `task` (`base + (task << 3)`, both the same).
pub fn task_ids(task: u32) -> (u32, u32) {
    let id = base().wrapping_add(task << 3);
    (id, id)
}

/// The per-task uids of `tasks` tasks, as [`task_ids`] gives them.
pub fn task_uids(tasks: u32) -> Vec<u32> {
    (0..tasks).map(|t| task_ids(t).0).collect()
}

/// The base this process uses, chosen once (workers get their ids on their command line).
pub fn base() -> u32 {
    static BASE: OnceLock<u32> = OnceLock::new();
    *BASE.get_or_init(|| match choose(&HostIds::read()) {
        Ok(b) => b,
        Err(why) => {
            // Every candidate taken: the risk cannot be avoided here, so it is said.
            let last = CANDIDATES[CANDIDATES.len() - 1];
            eprintln!("fsbench: warning: per-task uids: {why}; using {last} and up: processes of those ids can signal the lat_fs workers");
            last
        }
    })
}

/// The ids in use on a host: by users, groups and running processes.
#[derive(Debug, Default, Clone)]
pub struct HostIds {
    /// uids in /etc/passwd.
    pub users: Vec<u32>,
    /// gids in /etc/group (and users' primary groups).
    pub groups: Vec<u32>,
    /// Every real, effective, saved and filesystem uid and gid of a running process.
    pub processes: Vec<u32>,
}

impl HostIds {
    /// Read this host's /etc/passwd, /etc/group and /proc/*/status (what cannot be read counts as empty).
    pub fn read() -> HostIds {
        let text = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let (passwd, group) = (text("/etc/passwd"), text("/etc/group"));
        let mut ids = HostIds {
            users: field_ids(&passwd, 2),
            groups: field_ids(&group, 2).into_iter().chain(field_ids(&passwd, 3)).collect(),
            processes: Vec::new(),
        };
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for e in dir.flatten() {
                if !e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
                    continue;
                }
                let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
                ids.processes.extend(process_ids(&status));
            }
        }
        ids
    }

    fn holds_any(&self, lo: u32, hi: u32) -> Option<String> {
        let within = |v: &u32| (lo..hi).contains(v);
        if let Some(u) = self.users.iter().find(|v| within(v)) {
            return Some(format!("uid {u} is a user in /etc/passwd"));
        }
        if let Some(g) = self.groups.iter().find(|v| within(v)) {
            return Some(format!("gid {g} is a group"));
        }
        self.processes.iter().find(|v| within(v)).map(|p| format!("a running process has id {p}"))
    }
}

/// The first candidate base whose range nobody holds; `Err` saying what holds each when none is free.
pub fn choose(ids: &HostIds) -> Result<u32, String> {
    let mut taken = Vec::new();
    for b in CANDIDATES {
        match ids.holds_any(b, b + RANGE) {
            None => return Ok(b),
            Some(why) => taken.push(format!("{b}: {why}")),
        }
    }
    Err(format!("every candidate range is in use ({})", taken.join("; ")))
}

/// The numeric `field` (0-based, `:`-separated) of each line of a passwd/group file.
fn field_ids(text: &str, field: usize) -> Vec<u32> {
    text.lines().filter_map(|l| l.split(':').nth(field)?.trim().parse().ok()).collect()
}

/// The ids on the `Uid:` and `Gid:` lines of a /proc/<pid>/status.
fn process_ids(status: &str) -> Vec<u32> {
    status
        .lines()
        .filter(|l| l.starts_with("Uid:") || l.starts_with("Gid:"))
        .flat_map(|l| l.split_whitespace().skip(1).filter_map(|v| v.parse().ok()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_base_would_collide_with_system_users_and_is_not_used() {
        // Debian's passwd: messagebus is uid 100, and lmbench -U's task 0 would run as it.
        let passwd = "root:x:0:0:root:/root:/bin/bash\nmessagebus:x:100:107::/nonexistent:/usr/sbin/nologin\n";
        let ids = HostIds { users: field_ids(passwd, 2), groups: field_ids(passwd, 3), processes: vec![] };
        assert!(ids.holds_any(LMBENCH_BASE, LMBENCH_BASE + RANGE).unwrap().contains("uid 100"));
        assert_eq!(choose(&ids), Ok(CANDIDATES[0]));
    }

    #[test]
    fn a_range_held_by_a_user_group_or_process_is_skipped() {
        let ids = HostIds {
            users: vec![CANDIDATES[0] + 8],
            groups: vec![CANDIDATES[1] + RANGE - 1],
            processes: vec![CANDIDATES[2]],
        };
        assert_eq!(choose(&ids), Ok(CANDIDATES[3]));
        let all = HostIds { processes: CANDIDATES.to_vec(), ..HostIds::default() };
        let e = choose(&all).unwrap_err();
        assert!(e.contains("every candidate") && e.contains("running process"), "{e}");
        // Just past a range does not count.
        assert_eq!(choose(&HostIds { users: vec![CANDIDATES[0] + RANGE], ..HostIds::default() }), Ok(CANDIDATES[0]));
    }

    #[test]
    fn process_ids_are_read_from_every_uid_and_gid_column() {
        let status = "Name:\tsleep\nUid:\t0\t1879048200\t0\t0\nGid:\t5\t5\t5\t1879048201\nGroups:\t99\n";
        assert_eq!(process_ids(status), vec![0, 1_879_048_200, 0, 0, 5, 5, 5, 1_879_048_201]);
    }

    #[test]
    fn on_this_host_the_chosen_range_is_nobody_s() {
        let ids = HostIds::read();
        assert!(!ids.users.is_empty(), "no /etc/passwd read");
        let b = base();
        assert!(CANDIDATES.contains(&b));
        // Our own workers may be running in other tests: users and groups must be free.
        assert!(!ids.users.iter().chain(&ids.groups).any(|v| (b..b + RANGE).contains(v)));
        assert_eq!(task_ids(1), (b + 8, b + 8));
        assert_eq!(task_uids(3), vec![b, b + 8, b + 16]);
    }
}
