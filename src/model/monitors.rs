//! What the monitors measured: kernel counters over a window, a timeline of dirty memory
//! and device activity, and latency distributions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the kernel counted over one window (a lat_fs repetition or a step): deltas of
/// `/sys/block/<dev>/stat` per device, of `/proc/vmstat`, and of `/proc/stat`'s `ctxt`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Counters {
    /// Length of the window in microseconds (monotonic clock).
    pub window_us: u64,
    /// One entry per block device of the cell (none on tmpfs or a plain directory).
    #[serde(default)]
    pub devices: Vec<DeviceCounters>,
    /// Memory-management counters, system-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<VmCounters>,
    /// Context switches, system-wide (`ctxt` of /proc/stat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switches: Option<u64>,
    /// Highest `Dirty` of /proc/meminfo seen in the window, KiB (steps only: sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_dirty_kib: Option<u64>,
    /// Highest `Writeback` of /proc/meminfo seen in the window, KiB (steps only: sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_writeback_kib: Option<u64>,
    /// Most requests in flight on the devices at one sample (steps only: sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_in_flight: Option<u64>,
}

/// Deltas of one block device's `stat` file over a window (Documentation/block/stat.rst).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceCounters {
    /// Kernel name of the device (`loop3`).
    pub device: String,
    /// Read requests completed.
    pub read_ios: u64,
    /// Read requests merged into others.
    pub read_merges: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// Milliseconds spent reading (summed over requests).
    pub read_ticks_ms: u64,
    /// Write requests completed.
    pub write_ios: u64,
    /// Write requests merged into others.
    pub write_merges: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Milliseconds spent writing (summed over requests).
    pub write_ticks_ms: u64,
    /// Requests in flight when the window closed (a gauge, not a delta).
    pub in_flight: u64,
    /// Milliseconds with at least one request in flight (iostat's %util numerator).
    pub io_ticks_ms: u64,
    /// Weighted milliseconds of requests in flight (queue depth times time).
    pub time_in_queue_ms: u64,
    /// Discard requests completed (kernels from 4.18).
    #[serde(default)]
    pub discard_ios: u64,
    /// 512-byte sectors discarded.
    #[serde(default)]
    pub discard_sectors: u64,
    /// Flush requests completed (kernels from 5.5).
    #[serde(default)]
    pub flush_ios: u64,
}

/// Deltas of `/proc/vmstat` over a window, system-wide.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct VmCounters {
    /// KiB read from block devices.
    pub pgpgin: u64,
    /// KiB written to block devices.
    pub pgpgout: u64,
    /// Pages swapped in.
    pub pswpin: u64,
    /// Pages swapped out.
    pub pswpout: u64,
    /// Pages dirtied.
    pub nr_dirtied: u64,
    /// Pages written back.
    pub nr_written: u64,
    /// Page faults.
    pub pgfault: u64,
    /// Major page faults (needed I/O).
    pub pgmajfault: u64,
    /// Direct-reclaim stalls, all zones.
    pub allocstall: u64,
    /// Pages scanned by kswapd.
    pub pgscan_kswapd: u64,
    /// Pages scanned by direct reclaim.
    pub pgscan_direct: u64,
    /// Pages reclaimed by kswapd.
    pub pgsteal_kswapd: u64,
    /// Pages reclaimed by direct reclaim.
    pub pgsteal_direct: u64,
}

/// A time series of dirty memory and device activity across a steps cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Timeline {
    /// Sampling interval in milliseconds (doubles when a long run is thinned).
    pub interval_ms: u64,
    /// Kernel names of the devices summed in `in_flight` and the sector counts.
    #[serde(default)]
    pub devices: Vec<String>,
    /// Samples in time order (plus one at each step boundary).
    pub samples: Vec<TimelineSample>,
}

/// One sample of a [`Timeline`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimelineSample {
    /// Milliseconds since the timeline started.
    pub t_ms: u64,
    /// `Dirty` of /proc/meminfo, KiB.
    pub dirty_kib: u64,
    /// `Writeback` of /proc/meminfo, KiB.
    pub writeback_kib: u64,
    /// Requests in flight, summed over the devices.
    pub in_flight: u64,
    /// Sectors read since boot, summed over the devices (throughput: difference of neighbours).
    pub read_sectors: u64,
    /// Sectors written since boot, summed over the devices.
    pub write_sectors: u64,
}

/// A latency distribution: percentiles and the non-empty buckets of a log-linear histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyDist {
    /// Operations (loop iterations) timed.
    pub count: u64,
    /// Shortest, nanoseconds.
    pub min_ns: u64,
    /// Mean, nanoseconds.
    pub mean_ns: f64,
    /// Median, nanoseconds.
    pub p50_ns: u64,
    /// 90th percentile, nanoseconds.
    pub p90_ns: u64,
    /// 99th percentile, nanoseconds.
    pub p99_ns: u64,
    /// 99.9th percentile, nanoseconds.
    pub p999_ns: u64,
    /// Longest, nanoseconds.
    pub max_ns: u64,
    /// Significant decimal digits of the histogram (bucket width is at most 10^-digits of a value).
    pub significant_digits: u8,
    /// `[value_ns, count]` of every non-empty bucket, ascending: enough to merge and to draw a CDF.
    pub buckets: Vec<[u64; 2]>,
}
