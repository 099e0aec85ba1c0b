//! Parsers of the kernel's counter files, forgiving by design: unknown lines and
//! extra fields are ignored (kernels add them), missing ones read as 0.

use std::io::Read;
use std::path::Path;

use super::MAX_PROC_FILE;
use crate::model::VmCounters;

/// Read a small kernel file whole, at most [`MAX_PROC_FILE`] bytes; `None` if it cannot be read.
pub fn read_capped(path: &Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    f.take(MAX_PROC_FILE).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The fields of `/sys/block/<dev>/stat` (Documentation/block/stat.rst), in order.
/// Kernels before 4.18 have 11 fields, before 5.5 15; later ones add flushes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockStat {
    /// Read requests completed.
    pub read_ios: u64,
    /// Read requests merged.
    pub read_merges: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// Milliseconds spent on reads.
    pub read_ticks: u64,
    /// Write requests completed.
    pub write_ios: u64,
    /// Write requests merged.
    pub write_merges: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Milliseconds spent on writes.
    pub write_ticks: u64,
    /// Requests in flight now.
    pub in_flight: u64,
    /// Milliseconds with at least one request in flight.
    pub io_ticks: u64,
    /// Weighted milliseconds of requests in flight.
    pub time_in_queue: u64,
    /// Discard requests completed.
    pub discard_ios: u64,
    /// Discard requests merged.
    pub discard_merges: u64,
    /// 512-byte sectors discarded.
    pub discard_sectors: u64,
    /// Milliseconds spent on discards.
    pub discard_ticks: u64,
    /// Flush requests completed.
    pub flush_ios: u64,
    /// Milliseconds spent on flushes.
    pub flush_ticks: u64,
}

impl BlockStat {
    /// Parse the one line of a `stat` file; `None` unless it has at least the 11 classic fields.
    pub fn parse(text: &str) -> Option<BlockStat> {
        let v: Vec<u64> = text.split_ascii_whitespace().map_while(|w| w.parse().ok()).take(17).collect();
        if v.len() < 11 {
            return None;
        }
        let f = |i: usize| v.get(i).copied().unwrap_or(0);
        Some(BlockStat {
            read_ios: f(0),
            read_merges: f(1),
            read_sectors: f(2),
            read_ticks: f(3),
            write_ios: f(4),
            write_merges: f(5),
            write_sectors: f(6),
            write_ticks: f(7),
            in_flight: f(8),
            io_ticks: f(9),
            time_in_queue: f(10),
            discard_ios: f(11),
            discard_merges: f(12),
            discard_sectors: f(13),
            discard_ticks: f(14),
            flush_ios: f(15),
            flush_ticks: f(16),
        })
    }
}

/// A `/proc/vmstat` snapshot: the fields of [`VmCounters`], holding absolute values
/// (a window's counters are the difference of two snapshots).
pub type VmStat = VmCounters;

impl VmCounters {
    /// Parse `/proc/vmstat`: `name value` lines; unknown names are ignored.
    pub fn parse(text: &str) -> VmStat {
        let mut s = VmStat::default();
        for line in text.lines() {
            let mut w = line.split_ascii_whitespace();
            let (Some(k), Some(v)) = (w.next(), w.next()) else { continue };
            let Ok(v) = v.parse::<u64>() else { continue };
            let slot = match k {
                "pgpgin" => &mut s.pgpgin,
                "pgpgout" => &mut s.pgpgout,
                "pswpin" => &mut s.pswpin,
                "pswpout" => &mut s.pswpout,
                "nr_dirtied" => &mut s.nr_dirtied,
                "nr_written" => &mut s.nr_written,
                "pgfault" => &mut s.pgfault,
                "pgmajfault" => &mut s.pgmajfault,
                "pgscan_kswapd" => &mut s.pgscan_kswapd,
                "pgscan_direct" => &mut s.pgscan_direct,
                "pgsteal_kswapd" => &mut s.pgsteal_kswapd,
                "pgsteal_direct" => &mut s.pgsteal_direct,
                k if k == "allocstall" || k.starts_with("allocstall_") => {
                    s.allocstall = s.allocstall.saturating_add(v);
                    continue;
                }
                _ => continue,
            };
            *slot = v;
        }
        s
    }
}

/// The `ctxt` line of `/proc/stat`: context switches since boot, all CPUs.
pub fn ctxt(text: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix("ctxt ")).and_then(|v| v.trim().parse().ok())
}

/// `Dirty` and `Writeback` of `/proc/meminfo`, in KiB.
pub fn meminfo_dirty_writeback(text: &str) -> (u64, u64) {
    let (mut dirty, mut wb) = (0, 0);
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else { continue };
        let v = v.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap_or(0);
        match k {
            "Dirty" => dirty = v,
            "Writeback" => wb = v,
            _ => {}
        }
    }
    (dirty, wb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_stat_reads_11_15_and_17_field_kernels() {
        let old = BlockStat::parse("    5 1 40 2 7 3 56 4 0 6 8\n").unwrap();
        assert_eq!((old.read_ios, old.write_sectors, old.time_in_queue, old.flush_ios), (5, 56, 8, 0));
        let new = BlockStat::parse("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19\n").unwrap();
        assert_eq!((new.discard_ios, new.flush_ios, new.flush_ticks), (12, 16, 17));
        assert_eq!(BlockStat::parse("1 2 3"), None);
        assert_eq!(BlockStat::parse("garbage"), None);
    }

    #[test]
    fn vmstat_ignores_unknown_lines_and_sums_allocstall_zones() {
        let v = VmStat::parse(
            "nr_free_pages 12\npgpgout 77\nallocstall_dma 1\nallocstall_normal 2\nallocstall_movable 4\n\
             pgfault x\nbogus\nnr_dirtied 9 extra\n",
        );
        assert_eq!((v.pgpgout, v.allocstall, v.pgfault, v.nr_dirtied), (77, 7, 0, 9));
    }

    #[test]
    fn proc_stat_ctxt_and_meminfo() {
        assert_eq!(ctxt("cpu  1 2\nintr 5 6\nctxt 123456\n"), Some(123456));
        assert_eq!(ctxt("cpu 1\n"), None);
        let m = "MemTotal:       24000000 kB\nDirty:              1024 kB\nWriteback:            16 kB\nWritebackTmp: 3 kB\n";
        assert_eq!(meminfo_dirty_writeback(m), (1024, 16));
    }

    #[test]
    fn read_capped_stops_at_the_cap() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big");
        std::fs::write(&p, vec![b'a'; (MAX_PROC_FILE + 10) as usize]).unwrap();
        assert_eq!(read_capped(&p).unwrap().len() as u64, MAX_PROC_FILE);
        assert!(read_capped(&d.path().join("none")).is_none());
    }
}
