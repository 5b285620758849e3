//! What a run reports: the measured metrics, and their JSON and table forms.
//!
//! [`Metrics`] accumulates per-request figures on the hot path (counts and
//! HDR latency histograms, constant memory whatever the run length);
//! [`Report`] is the finished, serializable summary. The JSON schema is
//! documented field by field in `docs/report.md`.

pub mod bound;
pub mod energy;
mod table;

pub use bound::Bound;
pub use energy::EnergyReport;
pub use table::{render_comparison, render_table};

use crate::engine::{CAUSES, Cause, FlashCounters};
use crate::ftl::FtlStats;
use crate::nand::Geometry;
use crate::trace::Op;
use crate::units::{BlockId, Nanos, SimTime};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latency summary of one kind of request, microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyReport {
    pub read: LatencyStats,
    pub write: LatencyStats,
    pub trim: LatencyStats,
    pub all: LatencyStats,
}

/// A flash counter split by cause.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByCause {
    pub host: u64,
    pub gc: u64,
    pub mapping: u64,
    pub merge: u64,
    pub cache: u64,
    pub placement: u64,
}

impl ByCause {
    fn from(counts: &[u64; 6]) -> ByCause {
        let c = |cause: Cause| counts[cause as usize];
        ByCause {
            host: c(Cause::Host),
            gc: c(Cause::Gc),
            mapping: c(Cause::Mapping),
            merge: c(Cause::Merge),
            cache: c(Cause::Cache),
            placement: c(Cause::Placement),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EraseStats {
    pub mean: f64,
    pub max: u32,
    pub min: u32,
    pub stddev: f64,
}

impl EraseStats {
    pub fn from_counts(counts: &[u32]) -> EraseStats {
        if counts.is_empty() {
            return EraseStats::default();
        }
        let n = counts.len() as f64;
        let mean = counts.iter().map(|&c| c as f64).sum::<f64>() / n;
        let var = counts.iter().map(|&c| (c as f64 - mean).powi(2)).sum::<f64>() / n;
        EraseStats {
            mean,
            max: counts.iter().copied().max().unwrap_or(0),
            min: counts.iter().copied().min().unwrap_or(0),
            stddev: var.sqrt(),
        }
    }
}

/// How the input was read and adjusted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InputReport {
    /// Trace path or workload spec.
    pub source: String,
    /// Trace format (`null` for synthetic workloads).
    pub format: Option<String>,
    /// True when the format was auto-detected.
    pub format_detected: bool,
    pub skipped_lines: u64,
    /// Arrivals earlier than one before them, replayed at the latest
    /// arrival's time so far (open loop; disorder the time-order window
    /// could not undo).
    pub clamped_timestamps: u64,
    /// Open loop: commands replayed before ones the source gave earlier
    /// (their times were earlier, within `engine::host::REORDER_WINDOW`
    /// commands).
    #[serde(default)]
    pub reordered_arrivals: u64,
    /// Reads, writes and trims of no sectors (and blkparse events without a
    /// sector range), not replayed.
    pub zero_length_requests: u64,
    pub out_of_range_policy: String,
    /// Requests moved into the device by the `wrap` or `scale` policy.
    pub out_of_range_adjusted: u64,
    /// "open" or "closed".
    pub host_mode: String,
    pub queue_depth: Option<u32>,
    pub precondition: Option<String>,
    /// With preconditioning: what its snapshot did ("loaded", "saved",
    /// "none" without a snapshot directory, or why it was recomputed or
    /// unavailable; see `snapshot`).
    pub snapshot: Option<String>,
}

/// One time-series window (by arrival time).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub start_s: f64,
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub mean_latency_us: f64,
    pub max_latency_us: f64,
    pub host_pages_written: u64,
    pub flash_pages_programmed: u64,
    pub flash_pages_read: u64,
    pub blocks_erased: u64,
}

/// The finished report of one run. Field meanings: `docs/report.md`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub ftl: String,
    pub config: String,
    pub seed: u64,
    pub version: String,
    pub input: InputReport,
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    /// TRIM commands; the LBA ranges they carried and the bytes those cover.
    pub trims: u64,
    pub trim_ranges: u64,
    pub trim_bytes: u64,
    pub flushes: u64,
    pub iops: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub latency_us: LatencyReport,
    /// Latency split: waiting for the drive (busy planes and buses, GC
    /// work a write pays first, buffer space) and its own work.
    pub queueing_us: LatencyReport,
    pub service_us: LatencyReport,
    pub host_pages_read: u64,
    pub host_pages_written: u64,
    pub host_pages_trimmed: u64,
    pub flash_pages_read: u64,
    pub flash_pages_programmed: u64,
    pub blocks_erased: u64,
    pub flash_reads_by_cause: ByCause,
    pub flash_programs_by_cause: ByCause,
    pub erases_by_cause: ByCause,
    /// Flash programs (placement excluded) per host page written, over the
    /// host data that has left the write buffer (pages still dirty in it
    /// at the end count by the share of their bytes); `null` without writes
    /// (or with every byte written still in the buffer).
    pub write_amplification: Option<f64>,
    pub gc_invocations: u64,
    pub gc_pages_copied: u64,
    /// Preemptible GC: host allocations that waited out a plane's whole GC
    /// job (it fell behind); 0 under blocking GC, whose every GC is waited out.
    #[serde(default)]
    pub gc_jobs_waited_out: u64,
    pub placed_reads: u64,
    pub trimmed_pages: u64,
    pub rmw_reads: u64,
    /// Sub-page mapping units programmed empty (the last page of a write
    /// call, destaged batch or GC run, when not full).
    pub units_padded: u64,
    /// Erase counts over all blocks over the drive's life (preconditioning included).
    pub erase_count: EraseStats,
    /// Blocks opened for programming during the run (TRIM paper's N_pb).
    pub n_pb: u64,
    /// Blocks holding valid data at the end (N_vb).
    pub n_vb: u64,
    /// Mean erases per block during the run (N_eb).
    pub n_eb: f64,
    /// N_vb / (N_pb × N_eb); `null` when nothing was programmed or erased.
    pub e_ftl: Option<f64>,
    pub mapping_ram_bytes: u64,
    /// Host translations served by the mapping cache (`dftl`, `hat`); `null`
    /// for FTLs holding their whole map in RAM.
    pub mapping_hit_ratio: Option<f64>,
    /// PCM mapping-entry accesses (`hat`).
    pub pcm_reads: u64,
    pub pcm_writes: u64,
    /// Joules by component (see `report::energy`).
    pub energy_j: EnergyReport,
    pub logical_bytes: u64,
    pub physical_bytes: u64,
    pub sim_time_s: f64,
    pub wall_time_s: f64,
    /// Peak resident memory of the simulating process, bytes (Linux only).
    pub peak_rss_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeseries: Vec<Window>,
    /// Merges by kind (block-mapped FTLs; zeros for the others).
    pub merges: MergeCounts,
    pub merge_pages_copied: u64,
    pub pages_padded: u64,
    pub pages_skipped: u64,
    pub log_associativity: Associativity,
    pub trim_list: TrimListReport,
    /// The TRIM cost model's parts (see `trim`).
    pub trim: crate::trim::TrimStats,
    /// The configuration that ran, every key resolved (preset, file and overrides).
    pub resolved_config: serde_json::Value,
    /// The `KEY=VALUE` overrides this run applied over its preset or file,
    /// as the front end gave them (a compare variant's included).
    pub overrides: Vec<String>,
    /// Conditions that make the figures hard to read, each one line (e.g. an
    /// open-loop replay that saturated the drive); how each is detected is in
    /// `docs/report.md`.
    pub warnings: Vec<String>,
    /// Flash time of the work beyond the host's, by cause (μ-FTL paper's
    /// "management overhead", Figs. 8–10).
    pub management_overhead_ms: OverheadReport,
    /// μ-FTL's tree, caches and bitmap figures (`mu` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu: Option<crate::ftl::mu::MuStats>,
    /// Flash bytes programmed (placement excluded) per host byte written
    /// (less the bytes still dirty in the write buffer at the end), the
    /// literature's write amplification; `write_amplification` counts
    /// pages. They differ when host writes are smaller than a page.
    pub write_amplification_bytes: Option<f64>,
    /// Share of the run each resource class was busy.
    pub utilization: Utilization,
    /// The IOPS the run's own work allows, the class that binds it, and the
    /// run's share of it (see [`bound`]); `null` without requests or work.
    #[serde(default)]
    pub bound: Option<Bound>,
    /// The write buffer's figures; `null` without a buffer (`cache.bytes` = 0).
    pub write_buffer: Option<BufferReport>,
    /// Multi-plane groups formed and the operations in them, by kind
    /// (`timing.multi_plane`; absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_plane: Option<crate::engine::MultiPlaneCounters>,
    /// Host and map reads served by suspending an erase
    /// (`timing.erase_suspend_us`; absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erase_suspends: Option<u64>,
    /// Host and map reads served by suspending a GC copy's program
    /// (`timing.program_suspend_us`; absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_suspends: Option<u64>,
    /// COFTL's data cache, merges, summaries and log figures (`coftl` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coftl: Option<crate::ftl::coftl::CoftlStats>,
    /// Each power cut of `host.power_cuts`: when, what recovery read and
    /// how long it took, and how many flushed pages were checked after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub power_cuts: Vec<crate::ftl::RecoveryReport>,
}

/// Busy time / (resources × simulated time), each in [0, 1].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Utilization {
    /// Channel buses.
    pub channels: f64,
    /// Array units (dies, or planes with `timing.plane_parallel`).
    pub units: f64,
    /// Of the units' busy time, the share GC's copies and erases took.
    pub units_gc_share: f64,
    /// The busiest and the idlest unit's busy time over the same span.
    /// Far apart, a few units bound the drive (the workload's addresses or
    /// the FTL's placement), not the whole array.
    #[serde(default)]
    pub units_busiest: f64,
    #[serde(default)]
    pub units_idlest: f64,
    /// The busiest and the idlest channel's bus time over the same span:
    /// far apart, a few channels bound the drive (where the FTL put the
    /// pages every request reads, such as DFTL's translation pages).
    #[serde(default)]
    pub channels_busiest: f64,
    #[serde(default)]
    pub channels_idlest: f64,
    pub host_link: f64,
    pub pcm: f64,
    /// The firmware cores' busy time over the same span, per core
    /// (`controller.command_us` of every command, TRIMs' core work).
    #[serde(default)]
    pub controller: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BufferReport {
    pub capacity_pages: u32,
    pub write_hits: u64,
    pub write_misses: u64,
    pub read_hits: u64,
    pub read_misses: u64,
    pub destaged_pages: u64,
    pub evictions: u64,
    /// `cache.policy` ("lru", "fifo", "heap"; empty in reports from before it was recorded).
    #[serde(default)]
    pub policy: String,
    /// Of `evictions`, clean pages dropped at once, and replacements that
    /// first waited for a dirty page's write-back (the heap rule's choice,
    /// or nothing clean).
    #[serde(default)]
    pub clean_evictions: u64,
    #[serde(default)]
    pub dirty_evictions: u64,
    /// Host writes that waited for room, and for how long in all.
    pub stalls: u64,
    pub stall_ms: f64,
    /// Pages still dirty when the run ended.
    pub dirty_at_end: u32,
}

/// Flash time, ms, of the reads, programs and erases an FTL issued beyond
/// the host's own, each charged its full array and bus time (command,
/// sensing or programming, page transfer) regardless of overlap. `bitmap`
/// is the μ-Tree traffic the bitmap cache caused (`mu`), taken out of
/// `mapping`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OverheadReport {
    pub gc: f64,
    pub mapping: f64,
    pub bitmap: f64,
    pub merge: f64,
    pub cache: f64,
    pub total: f64,
}

/// The management overhead of a run from the device's counters.
pub fn fill_overhead(r: &mut Report, c: &FlashCounters, t: &crate::nand::Timing, s: &FtlStats) {
    let op_ms = |op: crate::units::Nanos| op.0 as f64 / 1e6;
    let (read, program, erase) = (op_ms(t.read_op()), op_ms(t.program_op()), op_ms(t.erase_op()));
    let ms = |cause: Cause| {
        let i = cause as usize;
        c.reads[i] as f64 * read + c.programs[i] as f64 * program + c.erases[i] as f64 * erase
    };
    let bitmap =
        s.mu.as_ref().map_or(0.0, |m| m.bitmap_tree_reads as f64 * read + m.bitmap_tree_programs as f64 * program);
    let o = OverheadReport {
        gc: ms(Cause::Gc),
        mapping: ms(Cause::Mapping) - bitmap,
        bitmap,
        merge: ms(Cause::Merge),
        cache: ms(Cause::Cache),
        total: 0.0,
    };
    r.management_overhead_ms = OverheadReport { total: o.gc + o.mapping + o.bitmap + o.merge + o.cache, ..o };
    r.mu = s.mu.clone();
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeCounts {
    pub switch: u64,
    pub partial: u64,
    pub full: u64,
}

/// Data blocks touched per merge of a log block.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Associativity {
    /// `null` when no log block was merged.
    pub mean: Option<f64>,
    pub max: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimListReport {
    pub entries: u64,
    pub peak_entries: u64,
    pub peak_bytes: u64,
    pub copies_saved: u64,
}

/// The block-mapped FTLs' merge and TRIM-list figures.
pub fn fill_merges(r: &mut Report, s: &FtlStats) {
    r.merges = MergeCounts { switch: s.merges_switch, partial: s.merges_partial, full: s.merges_full };
    r.merge_pages_copied = s.merge_pages_copied;
    r.pages_padded = s.pages_padded;
    r.pages_skipped = s.pages_skipped;
    r.log_associativity =
        Associativity { mean: (s.log_merges > 0).then(|| s.assoc_sum as f64 / s.log_merges as f64), max: s.assoc_max };
    r.trim_list = TrimListReport {
        entries: s.trim_list_entries,
        peak_entries: s.trim_list_peak_entries,
        peak_bytes: s.trim_list_bytes,
        copies_saved: s.trim_copies_saved,
    };
}

/// Every request's latency in ns, by op, in completion order. Kept only when
/// asked for ([`crate::Simulation::keep_latencies`]): it grows with the run,
/// while [`Metrics`] stays constant in size.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestLatencies {
    pub read: Vec<u64>,
    pub write: Vec<u64>,
    pub trim: Vec<u64>,
    pub flush: Vec<u64>,
}

impl RequestLatencies {
    #[inline]
    pub fn push(&mut self, op: Op, latency: Nanos) {
        match op {
            Op::Read => &mut self.read,
            Op::Write => &mut self.write,
            Op::Trim => &mut self.trim,
            Op::Flush => &mut self.flush,
        }
        .push(latency.0);
    }
}

/// Each block's life-time erase count with its physical coordinates, as
/// columns (one entry per block, in block-id order) for heatmaps and
/// data frames.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EraseMap {
    pub channel: Vec<u32>,
    pub chip: Vec<u32>,
    pub die: Vec<u32>,
    pub plane: Vec<u32>,
    /// Block index within its plane.
    pub block: Vec<u32>,
    pub erase_count: Vec<u32>,
}

impl EraseMap {
    pub fn new(geo: &Geometry, counts: &[u32]) -> EraseMap {
        assert_eq!(counts.len(), geo.blocks as usize, "one erase count per block");
        let n = counts.len();
        let mut m = EraseMap {
            channel: Vec::with_capacity(n),
            chip: Vec::with_capacity(n),
            die: Vec::with_capacity(n),
            plane: Vec::with_capacity(n),
            block: Vec::with_capacity(n),
            erase_count: counts.to_vec(),
        };
        for b in 0..geo.blocks {
            let a = geo.address(geo.ppn(BlockId(b), 0));
            m.channel.push(a.channel);
            m.chip.push(a.chip);
            m.die.push(a.die);
            m.plane.push(a.plane);
            m.block.push(a.block);
        }
        m
    }
}

/// Per-request accumulators, updated on the hot path.
pub struct Metrics {
    hist: [Buckets; 3],
    sum_ns: [u128; 3],
    /// Exact maxima (the histogram's are quantized).
    max_ns: [u64; 4],
    pub requests: u64,
    pub flushes: u64,
    pub host_pages: [u64; 3],
    pub bytes: [u64; 3],
    pub last_completion: SimTime,
    flush_hist: Buckets,
    /// Latency split into waiting and being served (see `Metrics::record`).
    queueing: PerOp,
    service: PerOp,
}

/// Histograms, sums and exact maxima of one figure per kind of request
/// (read, write, trim).
#[derive(Default)]
struct PerOp {
    hist: [Buckets; 3],
    sum_ns: [u128; 3],
    max_ns: [u64; 3],
}

impl PerOp {
    #[inline]
    fn record(&mut self, i: usize, ns: u64) {
        self.hist[i].record(ns);
        self.sum_ns[i] += ns as u128;
        self.max_ns[i] = self.max_ns[i].max(ns);
    }

    fn report(&self) -> LatencyReport {
        let mut all = Buckets::default();
        for h in &self.hist {
            all.add(h);
        }
        let max = self.max_ns.iter().copied().max().unwrap_or(0);
        let stats = |i: usize| Metrics::stats(&self.hist[i].histogram(), self.sum_ns[i], self.max_ns[i]);
        LatencyReport {
            read: stats(0),
            write: stats(1),
            trim: stats(2),
            all: Metrics::stats(&all.histogram(), self.sum_ns.iter().sum(), max),
        }
    }
}

fn op_slot(op: Op) -> Option<usize> {
    match op {
        Op::Read => Some(0),
        Op::Write => Some(1),
        Op::Trim => Some(2),
        Op::Flush => None,
    }
}

/// Records `n` of `v` into an auto-resizing histogram (`saturating_record_n`
/// would clamp instead of growing).
fn record_n(h: &mut Histogram<u64>, v: u64, n: u64) {
    if h.record_n(v, n).is_err() {
        h.saturating_record_n(v, n);
    }
}

fn new_hist() -> Histogram<u64> {
    // Auto-resizing, 3 significant digits: exact enough for p99.9 and
    // bounded in memory however long an overloaded replay's latencies grow.
    Histogram::new(3).expect("valid histogram precision")
}

/// Values counted in the buckets of a [`new_hist`] histogram, in a plain
/// array: recording is an index and an increment, where the histogram's
/// own recording (range checks, resizing, minimum and maximum) cost about
/// 70 instructions, three times a request. Figures are read from the
/// histogram it converts to, which holds the same count in every bucket,
/// so they are the histogram's exactly.
#[derive(Clone, Default)]
pub(crate) struct Buckets {
    counts: Vec<u64>,
}

/// [`new_hist`]'s layout, as `hdrhistogram` lays out 3 significant digits
/// with a lowest value of 1: values below 2^11 one bucket each, then each
/// power of two [2^(k+10), 2^(k+11)) in 2^10 buckets 2^k wide.
const HALF_BUCKETS_LOG2: u32 = 10;
const HALF_BUCKETS: u64 = 1 << HALF_BUCKETS_LOG2;

impl Buckets {
    /// The bucket of `v`.
    #[inline]
    fn index(v: u64) -> usize {
        // Powers of two above the first 2^11 values: the bucket's width's log.
        let k = (64 - HALF_BUCKETS_LOG2 - 1) - (v | (2 * HALF_BUCKETS - 1)).leading_zeros();
        (((k as u64 + 1) << HALF_BUCKETS_LOG2) + (v >> k) - HALF_BUCKETS) as usize
    }

    /// The lowest value in bucket `i`.
    fn lowest(i: usize) -> u64 {
        let i = i as u64;
        match (i >> HALF_BUCKETS_LOG2).checked_sub(1) {
            None | Some(0) => i,
            Some(k) => (i & (HALF_BUCKETS - 1) | HALF_BUCKETS) << k,
        }
    }

    #[inline]
    pub(crate) fn record(&mut self, v: u64) {
        let i = Self::index(v);
        match self.counts.get_mut(i) {
            Some(c) => *c += 1,
            None => self.grow_and_record(i),
        }
    }

    #[cold]
    fn grow_and_record(&mut self, i: usize) {
        // To the end of the power of two, as the histogram grows.
        self.counts.resize((i | (HALF_BUCKETS as usize - 1)) + 1, 0);
        self.counts[i] += 1;
    }

    fn add(&mut self, other: &Buckets) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        self.counts.iter_mut().zip(&other.counts).for_each(|(c, o)| *c += o);
    }

    pub(crate) fn len(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The histogram of these counts: each bucket's count recorded at its
    /// lowest value (the highest first, so it resizes once).
    pub(crate) fn histogram(&self) -> Histogram<u64> {
        let mut h = new_hist();
        for (i, &n) in self.counts.iter().enumerate().rev().filter(|&(_, &n)| n > 0) {
            record_n(&mut h, Self::lowest(i), n);
        }
        h
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            hist: Default::default(),
            sum_ns: [0; 3],
            max_ns: [0; 4],
            requests: 0,
            flushes: 0,
            host_pages: [0; 3],
            bytes: [0; 3],
            last_completion: SimTime::ZERO,
            flush_hist: Buckets::default(),
            queueing: PerOp::default(),
            service: PerOp::default(),
        }
    }
}

impl Metrics {
    /// Records one request: its latency, the part of it spent waiting
    /// (before the drive started its own work on it, and for buffer space;
    /// the rest is service), the pages and bytes it moved and when it ended.
    /// FLUSH latency is not split.
    #[inline]
    pub fn record(&mut self, op: Op, latency: Nanos, queued: Nanos, pages: u64, bytes: u64, done: SimTime) {
        self.requests += 1;
        self.last_completion = self.last_completion.max(done);
        let slot = op_slot(op).unwrap_or(3);
        self.max_ns[slot] = self.max_ns[slot].max(latency.0);
        match op_slot(op) {
            Some(i) => {
                self.hist[i].record(latency.0);
                self.sum_ns[i] += latency.0 as u128;
                self.host_pages[i] += pages;
                self.bytes[i] += bytes;
                let queued = queued.0.min(latency.0);
                self.queueing.record(i, queued);
                self.service.record(i, latency.0 - queued);
            }
            None => {
                self.flushes += 1;
                self.flush_hist.record(latency.0);
            }
        }
    }

    /// Queueing and service time by kind of request, as recorded by
    /// [`record`](Self::record).
    pub fn split(&self) -> (LatencyReport, LatencyReport) {
        (self.queueing.report(), self.service.report())
    }

    pub fn count(&self, op: Op) -> u64 {
        op_slot(op).map_or(self.flushes, |i| self.hist[i].len())
    }

    fn stats(hist: &Histogram<u64>, sum_ns: u128, max_ns: u64) -> LatencyStats {
        let n = hist.len();
        if n == 0 {
            return LatencyStats::default();
        }
        // The middle of the quantile's bucket: within 0.05% of the true value.
        let q = |quantile: f64| hist.median_equivalent(hist.value_at_quantile(quantile)) as f64 / 1000.0;
        let us = |ns: u64| ns as f64 / 1000.0;
        LatencyStats {
            count: n,
            mean: sum_ns as f64 / n as f64 / 1000.0,
            p50: q(0.50),
            p99: q(0.99),
            p999: q(0.999),
            max: us(max_ns),
        }
    }

    pub fn latency(&self) -> LatencyReport {
        let mut all = self.flush_hist.clone();
        for h in &self.hist {
            all.add(h);
        }
        let all = all.histogram();
        let sum_all: u128 = self.sum_ns.iter().sum::<u128>();
        let mut all_stats = Self::stats(&all, sum_all, self.max_ns.iter().copied().max().unwrap_or(0));
        if self.flushes > 0 {
            // Flush latencies are in the histogram but not in the sums; fold in exactly.
            let flush_hist = self.flush_hist.histogram();
            let flush_sum = flush_hist.mean() * flush_hist.len() as f64;
            all_stats.mean = (sum_all as f64 + flush_sum) / all.len() as f64 / 1000.0;
        }
        let stats = |i: usize| Self::stats(&self.hist[i].histogram(), self.sum_ns[i], self.max_ns[i]);
        LatencyReport { read: stats(0), write: stats(1), trim: stats(2), all: all_stats }
    }
}

/// Flash figures of a run, from the device's counters.
pub fn fill_flash(report: &mut Report, c: &FlashCounters) {
    report.flash_pages_read = FlashCounters::timed(&c.reads);
    report.flash_pages_programmed = FlashCounters::timed(&c.programs);
    report.blocks_erased = FlashCounters::timed(&c.erases);
    report.flash_reads_by_cause = ByCause::from(&c.reads);
    report.flash_programs_by_cause = ByCause::from(&c.programs);
    report.erases_by_cause = ByCause::from(&c.erases);
    report.n_pb = c.blocks_opened;
    debug_assert_eq!(CAUSES.len(), 6);
}

/// Peak resident set size of this process (VmHWM), where the OS tells it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_stats_are_exact_for_mean_and_max() {
        let mut m = Metrics::default();
        for (i, lat) in [100_000u64, 200_000, 300_000].iter().enumerate() {
            m.record(Op::Write, Nanos(*lat), Nanos::ZERO, 1, 4096, SimTime(i as u64));
        }
        m.record(Op::Read, Nanos(50_000), Nanos::ZERO, 2, 8192, SimTime(10));
        let l = m.latency();
        assert_eq!(l.write.count, 3);
        assert!((l.write.mean - 200.0).abs() < 1e-9);
        assert_eq!(l.write.max, 300.0);
        assert!((l.read.p50 - 50.0).abs() < 0.05 * 50.0 / 100.0 + 1e-9, "{}", l.read.p50);
        assert_eq!(l.all.count, 4);
        assert_eq!(m.host_pages, [2, 3, 0]);
        assert_eq!(m.last_completion, SimTime(10));
    }

    /// Every value lands in the bucket a [`new_hist`] histogram puts it
    /// in, and the histogram made from the counts reads exactly as one the
    /// values were recorded in (any mix of magnitudes, any order).
    #[test]
    fn buckets_are_the_histograms() {
        let mut values: Vec<u64> = (0..5000).collect();
        for k in 1..63 {
            values.extend([(1 << k) - 1, 1 << k, (1 << k) + 1]);
        }
        let mut rng = crate::rng::SimRng::new(3);
        // Log-uniform up to 2^40 ns (18 minutes), as latencies spread.
        values.extend((0..100_000).map(|_| rng.next_u64() >> (24 + rng.below(40))));
        let direct = {
            let mut h = new_hist();
            values.iter().for_each(|&v| record_n(&mut h, v, 1));
            h
        };
        let mut b = Buckets::default();
        for &v in &values {
            let i = Buckets::index(v);
            assert_eq!(Buckets::lowest(i), direct.lowest_equivalent(v), "{v}");
            assert_eq!(Buckets::lowest(i + 1), direct.next_non_equivalent(v), "{v}");
            b.record(v);
        }
        let h = b.histogram();
        assert_eq!((h.len(), b.len()), (direct.len(), direct.len()));
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            assert_eq!(h.value_at_quantile(q), direct.value_at_quantile(q), "{q}");
        }
        assert_eq!(h.mean(), direct.mean());
        for &v in values.iter().step_by(997) {
            assert_eq!(h.count_between(0, v), direct.count_between(0, v), "{v}");
        }
    }

    #[test]
    fn erase_map_decodes_block_coordinates() {
        let cfg = crate::Config::load(
            "hat-table4",
            &["geometry.blocks_per_plane=3".into(), "geometry.pages_per_block=4".into()],
        )
        .unwrap();
        let geo = Geometry::new(&cfg.geometry);
        let counts: Vec<u32> = (0..geo.blocks).collect();
        let m = EraseMap::new(&geo, &counts);
        assert_eq!(m.erase_count, counts);
        let last = geo.blocks as usize - 1;
        let g = &cfg.geometry;
        assert_eq!(
            (m.channel[last], m.chip[last], m.die[last], m.plane[last], m.block[last]),
            (g.channels - 1, g.chips_per_channel - 1, g.dies_per_chip - 1, g.planes_per_die - 1, 2)
        );
        // Block ids run plane by plane: the first plane's blocks come first.
        assert_eq!((m.plane[1], m.block[1], m.block[3], m.plane[3]), (0, 1, 0, 1));
    }

    #[test]
    fn erase_stats() {
        let e = EraseStats::from_counts(&[1, 3, 5, 7]);
        assert_eq!((e.min, e.max), (1, 7));
        assert!((e.mean - 4.0).abs() < 1e-12);
        assert!((e.stddev - 5f64.sqrt()).abs() < 1e-12);
    }
}
