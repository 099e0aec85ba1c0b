//! The axes of the matrix and the cell they identify.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the filesystems of one cell are laid out across tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub enum Layout {
    /// One filesystem (superblock) per task, mounted at `<mnt>/<task>`.
    M,
    /// One shared filesystem with a directory per task.
    S,
}

/// Whether disk quota is switched on while the cell runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum QuotaMode {
    /// Quota accounting off (`qoff` in the seed).
    Off,
    /// Quota accounting and enforcement on (`qon` in the seed).
    On,
}

/// How quota is implemented on the filesystem when a cell asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "lowercase")]
pub enum QuotaImpl {
    /// Quota files (`aquota.user`, `aquota.group`) made by `quotacheck -cug`, as the seed did.
    #[default]
    Files,
    /// The ext4 `quota` feature (hidden quota inodes, `mkfs -O quota`).
    Feature,
}

/// One of the four lmbench lat_fs loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LatfsTest {
    /// `open(O_WRONLY)` (`O_RDONLY` with `open_for_write = false`); `close`.
    OpenClose,
    /// `open(O_CREAT)`; `close`; `unlink`.
    CreateUnlink,
    /// `fchown(uid)`; `fchown(uid+1)`.
    Chown,
    /// `pwrite(4096 @ 40960)`; `ftruncate(8192)`.
    WriteTruncate,
}

impl LatfsTest {
    /// All tests in the seed's order.
    pub const ALL: [LatfsTest; 4] =
        [LatfsTest::OpenClose, LatfsTest::CreateUnlink, LatfsTest::Chown, LatfsTest::WriteTruncate];

    /// The name used in scenario files and result files (`open_close`).
    pub fn name(self) -> &'static str {
        match self {
            LatfsTest::OpenClose => "open_close",
            LatfsTest::CreateUnlink => "create_unlink",
            LatfsTest::Chown => "chown",
            LatfsTest::WriteTruncate => "write_truncate",
        }
    }
}

impl fmt::Display for LatfsTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LatfsTest {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        LatfsTest::ALL.into_iter().find(|t| t.name() == s).ok_or_else(|| format!("unknown lat_fs test `{s}`"))
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::M => "M",
            Layout::S => "S",
        })
    }
}

impl fmt::Display for QuotaMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QuotaMode::Off => "off",
            QuotaMode::On => "on",
        })
    }
}

impl QuotaMode {
    /// The seed's short name: `qoff` / `qon`.
    pub fn seed_name(self) -> &'static str {
        match self {
            QuotaMode::Off => "qoff",
            QuotaMode::On => "qon",
        }
    }
}

/// One point of the matrix: the axis values that identify a cell.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellParams {
    /// Filesystem type as given to `mkfs.<fs>` and mount(2).
    pub fs: String,
    /// Layout M (superblock per task) or S (shared superblock).
    pub layout: Layout,
    /// Quota off or on.
    pub quota: QuotaMode,
    /// Number of parallel tasks.
    pub tasks: u32,
    /// The lat_fs test, for lat_fs workloads; `None` for step workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<LatfsTest>,
    /// fio workloads: the value of each swept fio option (`[matrix] fio.bs`), by option name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fio: BTreeMap<String, String>,
    /// The kernel's label when the cell is an arm of a kernel-paired run (`run --kernel
    /// A=… --kernel B=… --paired`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

impl CellParams {
    /// Stable identifier, used as the cell's file name: `ext4-S-qoff-t2-chown`, and for fio
    /// sweeps `ext4-S-qoff-t1-bs=4k-iodepth=16` (options in alphabetical order); an arm of a
    /// kernel-paired run ends in `-kernel=LABEL`.
    pub fn id(&self) -> String {
        let mut id = format!("{}-{}-{}-t{}", self.fs, self.layout, self.quota.seed_name(), self.tasks);
        if let Some(t) = self.test {
            id.push('-');
            id.push_str(t.name());
        }
        for (option, value) in &self.fio {
            id.push_str(&format!("-{option}={value}"));
        }
        if let Some(k) = &self.kernel {
            id.push_str(&format!("-kernel={k}"));
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_id_is_stable() {
        let p = CellParams {
            fs: "ext4".into(),
            layout: Layout::S,
            quota: QuotaMode::Off,
            tasks: 2,
            test: Some(LatfsTest::Chown),
            fio: BTreeMap::new(),
            kernel: None,
        };
        assert_eq!(p.id(), "ext4-S-qoff-t2-chown");
        let arm = CellParams { kernel: Some("V3".into()), ..p.clone() };
        assert_eq!(arm.id(), "ext4-S-qoff-t2-chown-kernel=V3");
        let fio = BTreeMap::from([("iodepth".to_string(), "16".to_string()), ("bs".to_string(), "4k".to_string())]);
        let p = CellParams { test: None, fio, ..p };
        assert_eq!(p.id(), "ext4-S-qoff-t2-bs=4k-iodepth=16");
    }

    #[test]
    fn a_cell_file_without_a_kernel_loads_and_is_written_without_one() {
        let old = r#"{"fs":"ext4","layout":"S","quota":"off","tasks":1,"test":"chown"}"#;
        let p: CellParams = serde_json::from_str(old).unwrap();
        assert_eq!(p.kernel, None);
        assert!(!serde_json::to_string(&p).unwrap().contains("kernel"));
        let arm = CellParams { kernel: Some("B".into()), ..p };
        let back: CellParams = serde_json::from_str(&serde_json::to_string(&arm).unwrap()).unwrap();
        assert_eq!(back, arm);
    }
}
