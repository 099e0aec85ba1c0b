//! Monitors: what the kernel itself counted while a workload ran.
//!
//! A [`Watch`] names the block devices of one cell; [`Watch::snapshot`] reads
//! their `/sys/dev/block/<maj:min>/stat`, the `/proc/vmstat` counters we keep
//! and the `ctxt` line of `/proc/stat`, and [`Snapshot::delta`] turns two
//! snapshots into the [`Counters`] of the window between them. A [`Sampler`]
//! thread reads `/proc/meminfo` Dirty/Writeback and the devices' in-flight and
//! sector counts every 100 ms, for the timeline of a steps cell.
//!
//! Everything here reads files the kernel writes, but they are still parsed as
//! untrusted text: sizes capped, unknown lines and fields ignored, a missing file
//! is "no data" rather than an error, so a monitor can never fail a cell.
//! A snapshot costs a handful of small reads (tens of microseconds); the
//! sampler one read of meminfo and one per device every interval.

pub mod latency;
pub mod parse;
pub mod sampler;

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::model::{Counters, DeviceCounters, FilesystemInfo, VmCounters};

pub use parse::{BlockStat, VmStat};
pub use sampler::{SAMPLE_INTERVAL, Sampler};

/// Largest kernel counter file we read; vmstat is ~6 KiB on 6.x kernels.
pub const MAX_PROC_FILE: u64 = 256 * 1024;

/// One block device to watch: its kernel name and its `stat` file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WatchedDevice {
    /// Kernel name (`loop3`), as reported in results.
    pub name: String,
    /// `/sys/dev/block/<maj>:<min>/stat`.
    pub stat: PathBuf,
}

/// The devices of one cell, and where the system-wide counters live (tests point these elsewhere).
/// Serialized for the copies of a steps cell, which watch the cell's devices themselves.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Watch {
    /// Block devices under test, deduplicated.
    pub devices: Vec<WatchedDevice>,
    /// `/proc` (or a fake for tests).
    pub proc_root: PathBuf,
}

impl Default for Watch {
    fn default() -> Watch {
        Watch { devices: Vec::new(), proc_root: PathBuf::from("/proc") }
    }
}

/// Counters read at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    devices: Vec<(String, Option<BlockStat>)>,
    vm: Option<VmStat>,
    ctxt: Option<u64>,
}

impl Watch {
    /// Watch the block devices behind a cell's filesystems: the loop device provisioning
    /// attached (or the named device), else whatever device holds the mountpoint.
    /// Filesystems without a block device (tmpfs, a plain directory) add none.
    pub fn for_filesystems(filesystems: &[FilesystemInfo]) -> Watch {
        let mut w = Watch::default();
        for f in filesystems {
            let dev = f
                .device
                .as_deref()
                .and_then(|d| block_rdev(Path::new(d)))
                .or_else(|| std::fs::metadata(&f.mountpoint).ok().map(|m| std::os::unix::fs::MetadataExt::dev(&m)));
            if let Some(d) = dev.and_then(device_of) {
                w.add(d);
            }
        }
        w
    }

    /// Add one device, unless it is watched already.
    pub fn add(&mut self, d: WatchedDevice) {
        if !self.devices.iter().any(|x| x.stat == d.stat) {
            self.devices.push(d);
        }
    }

    /// Read every counter now.
    pub fn snapshot(&self) -> Snapshot {
        let devices = self
            .devices
            .iter()
            .map(|d| (d.name.clone(), parse::read_capped(&d.stat).and_then(|t| BlockStat::parse(&t))))
            .collect();
        let vm = parse::read_capped(&self.proc_root.join("vmstat")).map(|t| VmStat::parse(&t));
        let ctxt = parse::read_capped(&self.proc_root.join("stat")).and_then(|t| parse::ctxt(&t));
        Snapshot { at: Instant::now(), devices, vm, ctxt }
    }

    /// Start a sampler thread over these devices (see [`Sampler`]).
    pub fn sampler(&self) -> Sampler {
        Sampler::start(self.clone(), SAMPLE_INTERVAL)
    }
}

/// `st_rdev` of a block device node.
fn block_rdev(p: &Path) -> Option<u64> {
    let m = std::fs::metadata(p).ok()?;
    m.file_type().is_block_device().then(|| std::os::unix::fs::MetadataExt::rdev(&m))
}

/// The sysfs entry of a device number, if the kernel has one (tmpfs's anonymous device has none).
fn device_of(rdev: u64) -> Option<WatchedDevice> {
    let (maj, min) = (libc::major(rdev), libc::minor(rdev));
    let dir = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    let stat = dir.join("stat");
    if !stat.is_file() {
        return None;
    }
    // The link's target ends in the kernel name (`.../block/loop3`).
    let name = std::fs::read_link(&dir)
        .ok()
        .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| format!("{maj}:{min}"));
    Some(WatchedDevice { name, stat })
}

impl Snapshot {
    /// The counters of the window from `self` to `later`. Devices or files that could
    /// not be read at either end are left out rather than guessed.
    pub fn delta(&self, later: &Snapshot) -> Counters {
        let devices = self
            .devices
            .iter()
            .zip(&later.devices)
            .filter_map(|((name, a), (_, b))| Some(device_delta(name, a.as_ref()?, b.as_ref()?)))
            .collect();
        let vm = match (&self.vm, &later.vm) {
            (Some(a), Some(b)) => Some(vm_delta(a, b)),
            _ => None,
        };
        let context_switches = match (self.ctxt, later.ctxt) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        Counters {
            window_us: later.at.saturating_duration_since(self.at).as_micros() as u64,
            devices,
            vm,
            context_switches,
            peak_dirty_kib: None,
            peak_writeback_kib: None,
            peak_in_flight: None,
        }
    }
}

fn device_delta(name: &str, a: &BlockStat, b: &BlockStat) -> DeviceCounters {
    let d = |x: u64, y: u64| y.saturating_sub(x);
    DeviceCounters {
        device: name.to_string(),
        read_ios: d(a.read_ios, b.read_ios),
        read_merges: d(a.read_merges, b.read_merges),
        read_sectors: d(a.read_sectors, b.read_sectors),
        read_ticks_ms: d(a.read_ticks, b.read_ticks),
        write_ios: d(a.write_ios, b.write_ios),
        write_merges: d(a.write_merges, b.write_merges),
        write_sectors: d(a.write_sectors, b.write_sectors),
        write_ticks_ms: d(a.write_ticks, b.write_ticks),
        // A gauge, not a counter: what was still queued when the window closed.
        in_flight: b.in_flight,
        io_ticks_ms: d(a.io_ticks, b.io_ticks),
        time_in_queue_ms: d(a.time_in_queue, b.time_in_queue),
        discard_ios: d(a.discard_ios, b.discard_ios),
        discard_sectors: d(a.discard_sectors, b.discard_sectors),
        flush_ios: d(a.flush_ios, b.flush_ios),
    }
}

fn vm_delta(a: &VmStat, b: &VmStat) -> VmCounters {
    let d = |x: u64, y: u64| y.saturating_sub(x);
    VmCounters {
        pgpgin: d(a.pgpgin, b.pgpgin),
        pgpgout: d(a.pgpgout, b.pgpgout),
        pswpin: d(a.pswpin, b.pswpin),
        pswpout: d(a.pswpout, b.pswpout),
        nr_dirtied: d(a.nr_dirtied, b.nr_dirtied),
        nr_written: d(a.nr_written, b.nr_written),
        pgfault: d(a.pgfault, b.pgfault),
        pgmajfault: d(a.pgmajfault, b.pgmajfault),
        allocstall: d(a.allocstall, b.allocstall),
        pgscan_kswapd: d(a.pgscan_kswapd, b.pgscan_kswapd),
        pgscan_direct: d(a.pgscan_direct, b.pgscan_direct),
        pgsteal_kswapd: d(a.pgsteal_kswapd, b.pgsteal_kswapd),
        pgsteal_direct: d(a.pgsteal_direct, b.pgsteal_direct),
    }
}

impl Counters {
    /// Bytes written to the watched devices in the window (512-byte sectors, as the kernel counts).
    pub fn bytes_written(&self) -> u64 {
        self.devices.iter().map(|d| d.write_sectors * 512).sum()
    }

    /// Bytes read from the watched devices in the window.
    pub fn bytes_read(&self) -> u64 {
        self.devices.iter().map(|d| d.read_sectors * 512).sum()
    }

    /// Write requests completed by the watched devices in the window.
    pub fn write_ios(&self) -> u64 {
        self.devices.iter().map(|d| d.write_ios).sum()
    }

    /// Utilisation of the busiest device: the share of the window it had I/O in
    /// flight (`io_ticks`, as iostat's %util), in percent; `None` without devices.
    pub fn utilisation_percent(&self) -> Option<f64> {
        if self.window_us == 0 {
            return None;
        }
        let busiest = self.devices.iter().map(|d| d.io_ticks_ms).max()?;
        Some((busiest as f64 * 1000.0 / self.window_us as f64 * 100.0).min(100.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_proc(dir: &Path, pgpgout: u64, ctxt: u64) {
        std::fs::write(dir.join("vmstat"), format!("nr_dirtied 10\npgpgout {pgpgout}\nallocstall_normal 2\n")).unwrap();
        std::fs::write(dir.join("stat"), format!("cpu  1 2 3 4\nctxt {ctxt}\nbtime 1\n")).unwrap();
    }

    #[test]
    fn delta_subtracts_counters_and_keeps_gauges() {
        let d = tempfile::tempdir().unwrap();
        let stat = d.path().join("loopx-stat");
        std::fs::write(&stat, "1 0 8 1 10 2 80 5 0 7 9 0 0 0 0 0 0\n").unwrap();
        fake_proc(d.path(), 100, 1000);
        let w = Watch {
            devices: vec![WatchedDevice { name: "loopx".into(), stat: stat.clone() }],
            proc_root: d.path().into(),
        };
        let a = w.snapshot();
        std::fs::write(&stat, "1 0 8 1 30 6 2128 9 3 57 99 0 0 0 0 4 0\n").unwrap();
        fake_proc(d.path(), 1124, 1500);
        let b = w.snapshot();
        let c = a.delta(&b);
        assert_eq!(c.devices.len(), 1);
        let dev = &c.devices[0];
        assert_eq!((dev.write_ios, dev.write_merges, dev.write_sectors), (20, 4, 2048));
        assert_eq!((dev.in_flight, dev.io_ticks_ms, dev.time_in_queue_ms, dev.flush_ios), (3, 50, 90, 4));
        assert_eq!(c.bytes_written(), 1 << 20);
        assert_eq!(c.vm.as_ref().unwrap().pgpgout, 1024);
        assert_eq!(c.context_switches, Some(500));
    }

    #[test]
    fn unreadable_files_give_no_data_not_errors() {
        let w = Watch {
            devices: vec![WatchedDevice { name: "gone".into(), stat: "/nonexistent/stat".into() }],
            proc_root: "/nonexistent".into(),
        };
        let c = w.snapshot().delta(&w.snapshot());
        assert!(c.devices.is_empty() && c.vm.is_none() && c.context_switches.is_none());
        assert_eq!(c.utilisation_percent(), None);
    }

    #[test]
    fn utilisation_is_the_busiest_devices_share_of_the_window() {
        let dev = |io_ticks_ms| DeviceCounters { io_ticks_ms, ..DeviceCounters::default() };
        let c = Counters { window_us: 2_000_000, devices: vec![dev(500), dev(1500)], ..Counters::default() };
        assert_eq!(c.utilisation_percent(), Some(75.0));
    }

    #[test]
    fn tmpfs_and_plain_directories_have_no_device() {
        let fs = FilesystemInfo { fs: "tmpfs".into(), mountpoint: "/proc".into(), ..FilesystemInfo::default() };
        assert!(Watch::for_filesystems(&[fs]).devices.is_empty());
    }
}
