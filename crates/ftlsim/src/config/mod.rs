//! Typed configuration: one TOML document per simulated drive.
//!
//! A config is a preset (a TOML file under `presets/`, compiled in) or a path
//! to a TOML file, plus `--set key.path=value` overrides applied to the TOML
//! tree before it is deserialized. Unknown keys are rejected with their full
//! path; every value is validated with a reason naming the key. Raw values
//! live here; derived, checked constants (page counts, nanosecond timings) are
//! computed by [`crate::nand::Geometry`] and [`crate::nand::Timing`].

mod presets;

pub use presets::{preset_names, preset_source};

use crate::error::{Error, Result};
use crate::limits;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A complete, validated drive configuration.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Short name of the drive (the preset's name).
    #[serde(default)]
    pub name: String,
    /// Where the numbers come from (datasheet, paper table).
    #[serde(default)]
    pub source: String,
    pub geometry: GeometryConfig,
    pub timing: TimingConfig,
    /// (physical − logical) / logical capacity.
    #[serde(default = "defaults::overprovisioning")]
    pub overprovisioning: f64,
    #[serde(default)]
    pub nand: NandConfig,
    #[serde(default)]
    pub host: HostConfig,
    #[serde(default)]
    pub gc: GcConfig,
    #[serde(default)]
    pub ftl: FtlConfig,
    #[serde(default)]
    pub report: ReportConfig,
    /// The PCM holding HAT's page map.
    #[serde(default)]
    pub pcm: PcmConfig,
    /// The controller's write buffer (DRAM data cache), shared by every FTL.
    #[serde(default)]
    pub cache: CacheConfig,
    /// Currents and voltage of the energy model.
    #[serde(default)]
    pub energy: EnergyConfig,
    /// The TRIM cost model (see [`crate::trim`]).
    #[serde(default)]
    pub trim: TrimConfig,
    /// The controller's firmware cores and their time per command (see
    /// [`crate::controller::cores`]).
    #[serde(default)]
    pub controller: ControllerConfig,
    /// Seed for every random choice of the run (victim sampling, workloads).
    #[serde(default = "defaults::seed")]
    pub seed: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GeometryConfig {
    pub channels: u32,
    #[serde(default = "defaults::one")]
    pub chips_per_channel: u32,
    #[serde(default = "defaults::one")]
    pub dies_per_chip: u32,
    #[serde(default = "defaults::one")]
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    /// Page size in bytes (a multiple of 512).
    pub page_size: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TimingConfig {
    /// Array read time tR, µs.
    pub read_us: f64,
    /// Array program time tPROG, µs.
    pub program_us: f64,
    /// Block erase time tBERS, µs.
    pub erase_us: f64,
    /// Channel bus transfer time per byte, ns.
    pub bus_ns_per_byte: f64,
    /// Fixed command/address cycle overhead per flash operation, ns.
    #[serde(default)]
    pub command_ns: f64,
    /// Planes of a die work in parallel (multi-plane) instead of queueing on the die.
    #[serde(default)]
    pub plane_parallel: bool,
    /// Planes of a die overlap only in multi-plane operations: the same
    /// operation at the same page offset on several planes, one tR, tPROG
    /// or tBERS for the group (see `engine::device`'s multi-plane groups).
    /// Incompatible with `plane_parallel`, which overlaps everything.
    #[serde(default)]
    pub multi_plane: bool,
    /// Erase suspend latency, µs: how long after a read arrives at a die (or
    /// plane) that is erasing for GC, merges or write-back the erase is
    /// suspended and the read begins; the erase resumes after the read,
    /// its remaining time unchanged. 0 (the default): no suspend, the read
    /// waits for the erase to end. Not with `multi_plane`.
    #[serde(default)]
    pub erase_suspend_us: f64,
    /// Program suspend latency, µs, as `erase_suspend_us` for the programs
    /// of GC's background copies (the only programs whose end no host
    /// command or controller buffer was told when they were booked). 0 (the
    /// default): no suspend. Not with `multi_plane`.
    #[serde(default)]
    pub program_suspend_us: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NandConfig {
    /// Program/erase cycles a block survives; an erase beyond it is refused.
    #[serde(default = "defaults::endurance")]
    pub endurance: u32,
    /// Keep page payloads (bytes), moved by GC and returned by reads.
    #[serde(default)]
    pub store_payloads: bool,
    /// Record a per-page program sequence number in OOB (for crash recovery).
    /// Defaults to on when payloads are stored.
    #[serde(default)]
    pub record_sequence: Option<bool>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum HostMode {
    /// Requests arrive at their trace timestamps (optionally scaled).
    Open,
    /// A fixed number of requests are outstanding; the next is issued when one completes.
    Closed,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OutOfRange {
    Error,
    Wrap,
    Scale,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum UnwrittenReads {
    /// Serve from flash as if the drive held data there (placed at no cost).
    Place,
    /// Return zeros without touching flash.
    Zero,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// Arrival model; a synthetic workload's `iodepth`/`rate` overrides it.
    #[serde(default = "defaults::host_mode")]
    pub mode: HostMode,
    #[serde(default = "defaults::queue_depth")]
    pub queue_depth: u32,
    /// Multiplies trace inter-arrival times (0.5 = replay twice as fast).
    #[serde(default = "defaults::one_f64")]
    pub time_scale: f64,
    /// Host interface transfer time per byte, ns (e.g. 0.25 for 4 GB/s).
    #[serde(default = "defaults::host_ns_per_byte")]
    pub link_ns_per_byte: f64,
    #[serde(default = "defaults::out_of_range")]
    pub out_of_range: OutOfRange,
    #[serde(default = "defaults::unwritten_reads")]
    pub unwritten_reads: UnwrittenReads,
    /// Power cuts during a run, each `at=TIME` (simulated, with a unit:
    /// ns, us, ms, s) or `after=N` (host commands served): the drive loses
    /// everything volatile and its FTL recovers (every FTL but `mu` and `superblock`).
    #[serde(default)]
    pub power_cuts: Vec<String>,
    /// LBA ranges one TRIM command carries at most: 64 for ATA DSM as in
    /// Son et al. (one 512 B payload block of 8 B entries), 256 for NVMe
    /// Deallocate. A command with more is split into several.
    #[serde(default = "defaults::trim_max_ranges")]
    pub trim_max_ranges: u32,
    /// TRIM is a queued command (NVMe, SATA 3.1 queued TRIM). Off: a TRIM
    /// waits for every outstanding command and holds later ones until it
    /// completes, as a non-queued ATA DSM command does.
    #[serde(default = "defaults::yes")]
    pub trim_queued: bool,
    /// Host-side batching (the transform of `trace::batch`): coalesce
    /// single-range TRIMs into commands of at most this many ranges; 0 or 1
    /// leaves TRIMs as they come.
    #[serde(default)]
    pub trim_batch: u32,
    /// Batching window, µs of arrival time: a TRIM joins a batch opened at
    /// most this long before it.
    #[serde(default = "defaults::trim_batch_window_us")]
    pub trim_batch_window_us: f64,
}

/// When a power cut falls (see `host.power_cuts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerCutAt {
    Time(crate::units::SimTime),
    AfterCommands(u64),
}

impl std::str::FromStr for PowerCutAt {
    type Err = Error;
    fn from_str(s: &str) -> Result<PowerCutAt> {
        let bad = |why: String| Error::config("host.power_cuts", format!("'{s}': {why}"));
        let (k, v) = s.split_once('=').ok_or_else(|| bad("expected at=TIME or after=N".into()))?;
        match k.trim() {
            "after" => v.trim().parse().map(PowerCutAt::AfterCommands).map_err(|_| bad("N is not a count".into())),
            "at" => {
                let v = v.trim();
                let split =
                    v.find(|c: char| c.is_ascii_alphabetic()).ok_or_else(|| bad("the time needs a unit".into()))?;
                let (num, unit) = v.split_at(split);
                let x: f64 = num.parse().map_err(|_| bad(format!("'{num}' is not a number")))?;
                let ns = match unit {
                    "ns" => 1.0,
                    "us" => 1e3,
                    "ms" => 1e6,
                    "s" => 1e9,
                    other => return Err(bad(format!("unknown unit '{other}'; use ns, us, ms or s"))),
                };
                if !(x.is_finite() && x >= 0.0) {
                    return Err(bad("the time must be finite and non-negative".into()));
                }
                // Past u64 nanoseconds the cast would clamp: a cut that never falls.
                let most = u64::MAX as f64 / ns;
                if x * ns >= u64::MAX as f64 {
                    return Err(bad(format!("the time is past the simulator's clock (at most {most:.4e}{unit})")));
                }
                Ok(PowerCutAt::Time(crate::units::SimTime((x * ns).round() as u64)))
            }
            other => Err(bad(format!("unknown key '{other}'; expected at or after"))),
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum VictimPolicy {
    Greedy,
    CostBenefit,
    Fifo,
    Random,
    DChoices,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GcConfig {
    #[serde(default = "defaults::policy")]
    pub policy: VictimPolicy,
    /// When GC runs, as a fraction of what `threshold_of` names: by default
    /// of each plane's spare (over-provisioned) blocks, kept free as GC's
    /// reserve; with `threshold_of = "free-space"`, of all its blocks.
    #[serde(default = "defaults::gc_threshold")]
    pub threshold: f64,
    /// What `threshold` is a fraction of (page-mapped FTLs: `page`, `dftl`,
    /// `hat`, `dac`, `superblock`; the hybrids merge on demand).
    #[serde(default = "defaults::threshold_of")]
    pub threshold_of: ThresholdOf,
    /// Erase a closed block as soon as its last valid page is overwritten or
    /// trimmed, as the TRIM paper's FTL does, instead of leaving it for GC
    /// to find (page-mapped FTLs).
    #[serde(default)]
    pub reclaim_empty: bool,
    /// Lower bound on the free blocks kept per plane, whatever the threshold.
    #[serde(default = "defaults::min_free_blocks")]
    pub min_free_blocks: u32,
    /// Candidates sampled by the d-choices policy.
    #[serde(default = "defaults::d_choices")]
    pub d: u32,
    /// How GC shares the flash with host I/O (page-mapped FTLs: `page`,
    /// `dftl`, `hat`; the hybrids' merges always block).
    #[serde(default = "defaults::gc_mode")]
    pub mode: GcMode,
    /// Where a preemptible GC job's copies go (page-mapped FTLs whose map
    /// has no write streams of its own).
    #[serde(default = "defaults::gc_frontier")]
    pub frontier: GcFrontier,
    /// When the copies a write owes a preemptible GC job are made (`page`,
    /// `dftl`, `hat`, `dac`). Unset: `"background"` where it applies (those
    /// FTLs with preemptible GC and dynamic allocation), else `"ahead"`; see
    /// [`Config::gc_debt`].
    #[serde(default)]
    pub debt: Option<GcDebt>,
}

/// What `gc.threshold` is a fraction of.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ThresholdOf {
    /// Each plane keeps `threshold` of its spare blocks (at least
    /// `min_free_blocks`) free as GC's reserve, and GC runs below it.
    SpareBlocks,
    /// As the TRIM paper (30%) and HAT (20%) define it: GC runs while a
    /// plane's free blocks are below `threshold` of its blocks, taking only
    /// victims at least `threshold` invalid until the reserve
    /// (`min_free_blocks`) is reached, so it never compacts nearly full
    /// blocks to hold free space the data leaves no room for.
    FreeSpace,
}

/// Where preemptible GC's copies are programmed.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GcFrontier {
    /// The plane's host active block: a job's few copies per host page mix
    /// data that survived GC with fresh data in every block.
    Shared,
    /// An active block of GC's own per plane (MQSim's GC write frontier):
    /// survivors cluster as blocking GC's runs of copies do, which
    /// cost-benefit's advantage on hot/cold traffic needs; it costs one more
    /// open block per plane.
    Separate,
}

/// When garbage collection runs (see `ftl::page`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GcMode {
    /// Copy by copy: in the drive's idle time, and paced with the host's
    /// writes once a plane is down to its reserve, so a host operation waits
    /// for at most the copies its own write pays for; a whole victim at once
    /// only when the reserve is gone.
    Preemptible,
    /// A whole victim (or several) at once when a plane reaches its reserve,
    /// ahead of the host write that found it there (ftlsim before 0.2; the
    /// seed reproductions' setting).
    Blocking,
}

/// When the copies a write owes its plane's preemptible GC job are made.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GcDebt {
    /// Booked back to back ahead of the write's program, when the write
    /// is issued: a host read reaching the plane meanwhile waits for all
    /// of them. The default where `Background` does not apply.
    Ahead,
    /// A written page (or a page the write buffer destages) goes to a
    /// plane whose GC is owed nothing, and the copies it leaves owed are
    /// made as if a step at a time, each once the plane is free to start
    /// it, so a host read issued before then goes first and waits for at
    /// most the step in progress (a copy, or an erase), as with a
    /// controller serving reads before queued GC work. (The engine books
    /// them as one run and a read takes back those not begun:
    /// `engine::device::preempt`.) While every plane is owed copies, the
    /// write buffer holds destages back; without a buffer a host write
    /// then pays its plane's copies ahead, as with `Ahead`. Needs
    /// `gc.mode = "preemptible"` and `ftl.allocation = "dynamic"`, and is
    /// the default where they hold. Costs simulation speed: about 1.4× the
    /// instructions of `Ahead` on a write-heavy load behind a buffer;
    /// drives that model power cuts, `hat` (whose GC moves write PCM) and
    /// sub-page mapping units book a copy a step, which cost 2.1× there.
    Background,
}

/// Where a page-mapped FTL puts a write.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Allocation {
    /// Rotate over the planes in `ftl.stripe_order`.
    Static,
    /// The plane whose array is free soonest (ties in stripe order).
    Dynamic,
}

/// Replacement order of the write buffer.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CachePolicy {
    /// Least recently used first (hits refresh an entry).
    Lru,
    /// First in, first out (hits do not refresh).
    Fifo,
    /// COFTL's heap-based adaptive rule (Chang et al.): clean and dirty
    /// min-heaps on accesses / time since the last access; the clean root
    /// is dropped when its value is below `cache.alpha` × the dirty root's,
    /// else the writer waits for the dirty root's write-back. Destaging
    /// takes the dirty root first.
    Heap,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Write-buffer capacity in bytes, whole pages (0 = no buffer: a write
    /// completes when its flash program does).
    #[serde(default)]
    pub bytes: u64,
    #[serde(default = "defaults::cache_policy")]
    pub policy: CachePolicy,
    /// `policy = "heap"`: the α of its rule (drop the clean root when its
    /// value is below α × the dirty root's); 0: a page's write time / read
    /// time from `timing`, as the paper sets it.
    #[serde(default)]
    pub alpha: f64,
    /// Destages in flight at once (0 = one per array unit: a die, or a
    /// plane with `timing.plane_parallel`).
    #[serde(default)]
    pub destage_depth: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FtlConfig {
    /// FTL scheme; `--ftl` overrides it.
    #[serde(default = "defaults::ftl_name")]
    pub name: String,
    /// Act on TRIM commands (off: acknowledge and ignore them).
    #[serde(default = "defaults::yes")]
    pub trim: bool,
    /// Order in which consecutive page allocations rotate over the parallel
    /// units, fastest-varying first.
    #[serde(default = "defaults::stripe_order")]
    pub stripe_order: Vec<StripeUnit>,
    /// Hybrid FTLs (`block`, `bast`, `fast`): how a request is spread over
    /// the chips; `block` by default (LBN = LPN / pages per block, the
    /// HAT and TRIM papers' layout).
    #[serde(default = "defaults::striping")]
    pub striping: Striping,
    /// Hybrid FTLs: TRIM kept in a hash-bucketed list consulted at merge
    /// time, or applied to the mapping at once.
    #[serde(default = "defaults::trim_mode")]
    pub trim_mode: TrimMode,
    /// Hybrid FTLs: groups (hash buckets) of the TRIM list.
    #[serde(default = "defaults::trim_list_groups")]
    pub trim_list_groups: u32,
    /// Hybrid FTLs: program a trimmed page below a block's last live page
    /// as padding when a merge rebuilds the block (ftlsim's earlier model,
    /// for NAND that may not leave a page erased). Off (the default), the
    /// page is left erased, so the TRIM paper's merges save its program too.
    #[serde(default)]
    pub pad_trimmed_holes: bool,
    /// BAST: log blocks per chip.
    #[serde(default = "defaults::log_blocks")]
    pub log_blocks: u32,
    /// FAST: sequential log blocks per chip (0 or 1).
    #[serde(default = "defaults::seq_log_blocks")]
    pub seq_log_blocks: u32,
    /// FAST: random log blocks per chip, shared by all data blocks.
    #[serde(default = "defaults::rand_log_blocks")]
    pub rand_log_blocks: u32,
    /// Demand-cached page maps (`dftl`, `hat`): controller RAM for the
    /// mapping cache, bytes.
    #[serde(default = "defaults::cache_bytes")]
    pub cache_bytes: u64,
    /// Bytes of one cached mapping entry (LPN and PPN).
    #[serde(default = "defaults::cache_entry_bytes")]
    pub cache_entry_bytes: u32,
    /// Page-mapped FTLs: which plane a write goes to.
    #[serde(default = "defaults::allocation")]
    pub allocation: Allocation,
    /// μ-FTL: controller RAM for its structures (invalid counters, μ-Tree
    /// caches, bitmap cache), bytes; 0: a block-mapped FTL's table (4 B per
    /// physical block), as in the paper, but at least the counters, the
    /// bitmap cache and two μ-Tree pages (on small drives).
    #[serde(default)]
    pub mu_ram_bytes: u64,
    /// μ-FTL: bitmap cache, bytes (4 B per invalid extent).
    #[serde(default = "defaults::mu_bitmap_cache_bytes")]
    pub mu_bitmap_cache_bytes: u64,
    /// μ-FTL: pages of the μ-Tree cache given to the write cache (the rest
    /// is the read cache); 0: half of it.
    #[serde(default)]
    pub mu_write_cache_pages: u32,
    /// μ-FTL: bytes of logical space per partition (each has its own update
    /// block); 0: one partition for the whole space.
    #[serde(default = "defaults::partition_bytes")]
    pub partition_bytes: u64,
    /// μ-FTL and superblock: GC, once started at `gc.min_free_blocks`, runs
    /// until this many blocks are free.
    #[serde(default = "defaults::gc_until_free")]
    pub gc_until_free: u32,
    /// DAC: number of hot/cold regions.
    #[serde(default = "defaults::dac_regions")]
    pub dac_regions: u32,
    /// Superblock: adjacent logical blocks per superblock.
    #[serde(default = "defaults::superblock_blocks")]
    pub superblock_blocks: u32,
    /// Superblock: physical blocks a superblock may hold beyond its logical
    /// blocks before it must collect within itself.
    #[serde(default = "defaults::superblock_extra_blocks")]
    pub superblock_extra_blocks: u32,
    /// COFTL: blocks per physical block set (the paper's "blocks per
    /// virtual block"), each on its own plane, channels first; 0: one per
    /// channel. A virtual page is that many physical pages.
    #[serde(default)]
    pub coftl_set_blocks: u32,
    /// COFTL: replacement block sets a virtual block may chain behind its
    /// primary (n_b; the chain holds at most n_b + 1 sets).
    #[serde(default = "defaults::coftl_replacements")]
    pub coftl_replacements: u32,
    /// COFTL: its data cache (heap-based adaptive replacement), bytes of
    /// whole virtual pages; 0: no data cache.
    #[serde(default)]
    pub coftl_cache_bytes: u64,
    /// COFTL: the alpha of the replacement rule (evict the clean root when
    /// its value is below alpha x the dirty root's); 0: page-set program
    /// time / read time, as the paper sets it.
    #[serde(default)]
    pub coftl_alpha: f64,
    /// COFTL: free block sets each log version lists for allocation; a new
    /// version is written when they are used up.
    #[serde(default = "defaults::coftl_log_free_sets")]
    pub coftl_log_free_sets: u32,
    /// COFTL: erases between two wear-levelling reclaims of a virtual block
    /// the cleaner does not flag; 0: no wear levelling.
    #[serde(default = "defaults::coftl_wl_erases")]
    pub coftl_wl_erases: u32,
    /// `page`: bytes of one mapping unit (one forward-map entry); a page
    /// holds page_size / map_unit_bytes units of any LPNs. Absent: the page
    /// size (one unit a page). Other FTLs map whole pages only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_unit_bytes: Option<u32>,
}

impl FtlConfig {
    /// Mapping entries the cache holds.
    pub fn cache_entries(&self) -> u64 {
        self.cache_bytes / self.cache_entry_bytes.max(1) as u64
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PcmConfig {
    /// Reading one mapping entry, µs.
    #[serde(default = "defaults::pcm_read_us")]
    pub read_us: f64,
    /// Writing one mapping entry in place, µs.
    #[serde(default = "defaults::pcm_write_us")]
    pub write_us: f64,
    /// Entries the controller can hold waiting for the PCM to write them
    /// (its write queue): a request whose write-back finds the queue full
    /// waits for room. HAT's paper does not say; 8 is our assumption.
    #[serde(default = "defaults::pcm_write_queue")]
    pub write_queue: u32,
    /// Mapping entries one PCM write programs together: the entries of an
    /// aligned run of this many that are dirty in the cache when one of
    /// them is written back go in the same write (`pcm.write_us` for all).
    /// 16: 4-byte entries in a 64-byte write buffer, the Numonyx P8P's
    /// (its 115 ns initial read is Table 4's PCM read; the paper names no
    /// part, so this is an inference). 1 writes each entry on its own, as
    /// HAT's Algorithm 1 does (`repro hat` pins it).
    #[serde(default = "defaults::pcm_entries_per_write")]
    pub entries_per_write: u32,
}

/// Energy = current × voltage × time of each operation (HAT's model).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EnergyConfig {
    #[serde(default = "defaults::voltage_v")]
    pub voltage_v: f64,
    /// Flash array current while reading, programming or erasing, mA.
    #[serde(default = "defaults::flash_ma")]
    pub flash_ma: f64,
    /// Controller RAM (DRAM or SRAM) current during one access, mA.
    #[serde(default = "defaults::dram_access_ma")]
    pub dram_access_ma: f64,
    /// Duration of one RAM access (one mapping lookup or update), ns.
    #[serde(default = "defaults::dram_access_ns")]
    pub dram_access_ns: f64,
    /// Refresh current of one DRAM device of `dram_device_bytes`, mA; the
    /// FTL pays it for the whole run in proportion to the table bytes it holds.
    #[serde(default = "defaults::dram_refresh_ma")]
    pub dram_refresh_ma: f64,
    #[serde(default = "defaults::dram_device_bytes")]
    pub dram_device_bytes: u64,
    #[serde(default = "defaults::pcm_read_ma")]
    pub pcm_read_ma: f64,
    #[serde(default = "defaults::pcm_write_ma")]
    pub pcm_write_ma: f64,
}

/// What a TRIM does with the partial pages at a misaligned range's ends.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TrimPartial {
    /// Leave them mapped: their sectors keep reading their old data.
    Ignore,
    /// Read-modify-write the page with zeros in the trimmed sectors (when
    /// the page holds data), so the whole range reads as zeros.
    Zero,
}

/// The TRIM cost model's controller times (see [`crate::trim`]); the
/// mapping work itself is each FTL's, timed on the device's resources, with
/// RAM accesses at `energy.dram_access_ns` each.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrimConfig {
    /// Controller time per TRIM command (command decode, DSM payload
    /// parsing, completion), µs.
    #[serde(default = "defaults::trim_command_us")]
    pub command_us: f64,
    /// Controller time per LBA range and per partial-page fragment of a
    /// misaligned range (locating it in the map, splitting it), µs.
    #[serde(default = "defaults::trim_range_us")]
    pub range_us: f64,
    #[serde(default = "defaults::trim_partial")]
    pub partial: TrimPartial,
}

/// The controller's firmware: every host command takes `command_us` of one
/// of `cores` cores before its data moves (command fetch and decode, the
/// FTL's lookup, the completion entry), so a drive's IOPS are at most
/// `cores / command_us` and a command queues for a core when all are busy.
/// A TRIM's core time is `trim.command_us` and its ranges' instead.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ControllerConfig {
    /// Firmware cores serving host commands in parallel.
    #[serde(default = "defaults::controller_cores")]
    pub cores: u32,
    /// Core time per host command (not TRIM), µs; 0: none (no core time
    /// and no queueing for a core, as in MQSim and SSDsim).
    #[serde(default)]
    pub command_us: f64,
}

/// How hybrid FTLs stripe logical pages over chips (TRIM paper, Figs. 1-2).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Striping {
    /// Consecutive pages go to consecutive chips.
    Page,
    /// Consecutive logical blocks go to consecutive chips.
    Block,
}

/// When hybrid FTLs act on TRIM.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TrimMode {
    /// Keep ranges in the hash-bucketed list; merges consult it.
    List,
    /// Unmap at once (a per-page bitmap in RAM); erase emptied blocks at once.
    Immediate,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StripeUnit {
    Channel,
    Chip,
    Die,
    Plane,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReportConfig {
    /// Width of a time-series window in simulated ms (0 = no time series).
    #[serde(default)]
    pub window_ms: f64,
}

mod defaults {
    use super::*;
    pub fn overprovisioning() -> f64 {
        0.07
    }
    pub fn seed() -> u64 {
        1
    }
    pub fn one() -> u32 {
        1
    }
    pub fn one_f64() -> f64 {
        1.0
    }
    pub fn yes() -> bool {
        true
    }
    pub fn endurance() -> u32 {
        100_000
    }
    pub fn host_mode() -> HostMode {
        HostMode::Open
    }
    pub fn queue_depth() -> u32 {
        32
    }
    pub fn host_ns_per_byte() -> f64 {
        0.25
    }
    pub fn out_of_range() -> OutOfRange {
        OutOfRange::Error
    }
    pub fn unwritten_reads() -> UnwrittenReads {
        UnwrittenReads::Place
    }
    pub fn policy() -> VictimPolicy {
        VictimPolicy::Greedy
    }
    pub fn gc_threshold() -> f64 {
        0.05
    }
    pub fn min_free_blocks() -> u32 {
        2
    }
    pub fn d_choices() -> u32 {
        8
    }
    pub fn gc_mode() -> GcMode {
        GcMode::Preemptible
    }
    pub fn threshold_of() -> ThresholdOf {
        ThresholdOf::SpareBlocks
    }
    pub fn gc_frontier() -> GcFrontier {
        GcFrontier::Shared
    }
    pub fn allocation() -> Allocation {
        Allocation::Dynamic
    }
    pub fn cache_policy() -> CachePolicy {
        CachePolicy::Lru
    }
    pub fn ftl_name() -> String {
        "page".into()
    }
    pub fn cache_bytes() -> u64 {
        128 * 1024
    }
    pub fn cache_entry_bytes() -> u32 {
        8
    }
    pub fn mu_bitmap_cache_bytes() -> u64 {
        8 * 1024
    }
    pub fn partition_bytes() -> u64 {
        256 << 20
    }
    pub fn gc_until_free() -> u32 {
        12
    }
    pub fn dac_regions() -> u32 {
        4
    }
    pub fn superblock_blocks() -> u32 {
        4
    }
    pub fn superblock_extra_blocks() -> u32 {
        2
    }
    pub fn coftl_replacements() -> u32 {
        3
    }
    pub fn coftl_log_free_sets() -> u32 {
        256
    }
    pub fn coftl_wl_erases() -> u32 {
        1024
    }
    pub fn pcm_read_us() -> f64 {
        0.115
    }
    pub fn pcm_write_us() -> f64 {
        90.0
    }
    pub fn pcm_write_queue() -> u32 {
        8
    }
    pub fn pcm_entries_per_write() -> u32 {
        16
    }
    pub fn voltage_v() -> f64 {
        3.3
    }
    pub fn flash_ma() -> f64 {
        25.0
    }
    pub fn dram_access_ma() -> f64 {
        125.0
    }
    pub fn dram_access_ns() -> f64 {
        50.0
    }
    pub fn dram_refresh_ma() -> f64 {
        3.0
    }
    pub fn dram_device_bytes() -> u64 {
        64 << 20
    }
    pub fn pcm_read_ma() -> f64 {
        8.0
    }
    pub fn pcm_write_ma() -> f64 {
        35.0
    }
    pub fn striping() -> Striping {
        // Logical block = LPN / pages per block, as HAT's block mapping and
        // the TRIM paper's FAST have it.
        Striping::Block
    }
    pub fn trim_mode() -> TrimMode {
        TrimMode::List
    }
    pub fn trim_list_groups() -> u32 {
        1024
    }
    pub fn log_blocks() -> u32 {
        5
    }
    pub fn seq_log_blocks() -> u32 {
        1
    }
    pub fn rand_log_blocks() -> u32 {
        4
    }
    pub fn trim_max_ranges() -> u32 {
        64
    }
    pub fn trim_batch_window_us() -> f64 {
        1000.0
    }
    pub fn controller_cores() -> u32 {
        1
    }
    pub fn trim_command_us() -> f64 {
        30.0
    }
    pub fn trim_range_us() -> f64 {
        2.0
    }
    pub fn trim_partial() -> TrimPartial {
        TrimPartial::Ignore
    }
    pub fn stripe_order() -> Vec<StripeUnit> {
        vec![StripeUnit::Channel, StripeUnit::Chip, StripeUnit::Die, StripeUnit::Plane]
    }
}

macro_rules! default_from_serde {
    ($($t:ty),*) => {$(
        impl Default for $t {
            fn default() -> Self {
                // Every field has a serde default, so an empty table is a complete value.
                toml::from_str("").expect("all fields have defaults")
            }
        }
    )*};
}
default_from_serde!(
    NandConfig,
    HostConfig,
    GcConfig,
    FtlConfig,
    ReportConfig,
    PcmConfig,
    EnergyConfig,
    CacheConfig,
    TrimConfig,
    ControllerConfig
);

impl GeometryConfig {
    /// The six counts whose product is the page count, by config key,
    /// outermost first.
    fn dimensions(&self) -> [(&'static str, u32); 6] {
        [
            ("geometry.channels", self.channels),
            ("geometry.chips_per_channel", self.chips_per_channel),
            ("geometry.dies_per_chip", self.dies_per_chip),
            ("geometry.planes_per_die", self.planes_per_die),
            ("geometry.blocks_per_plane", self.blocks_per_plane),
            ("geometry.pages_per_block", self.pages_per_block),
        ]
    }
}

impl NandConfig {
    pub fn records_sequence(&self) -> bool {
        self.record_sequence.unwrap_or(self.store_payloads)
    }
}

impl Config {
    /// When the copies a write owes a preemptible GC job are made:
    /// `gc.debt` if set, else `"background"` where it applies (a read then
    /// waits for at most the GC step in progress, as issue 10 asks of
    /// preemptible GC) and `"ahead"` where it does not (blocking GC, static
    /// allocation, FTLs without preemptible GC jobs).
    pub fn gc_debt(&self) -> GcDebt {
        self.gc.debt.unwrap_or(if self.gc_debt_can_be_background().is_ok() {
            GcDebt::Background
        } else {
            GcDebt::Ahead
        })
    }

    /// This config with its defaults that depend on other keys filled in
    /// (`gc.debt`, `nand.record_sequence`): what a report shows as run.
    pub fn resolved(&self) -> Config {
        let mut cfg = self.clone();
        cfg.gc.debt = Some(self.gc_debt());
        cfg.nand.record_sequence = Some(self.nand.records_sequence());
        cfg
    }

    /// Loads a preset by name or a TOML file by path, applies `key=value`
    /// overrides, and validates the result.
    pub fn load(preset_or_path: &str, overrides: &[String]) -> Result<Config> {
        let (text, origin) = match preset_source(preset_or_path) {
            Some(text) => (text.to_string(), format!("preset '{preset_or_path}'")),
            None => {
                let path = Path::new(preset_or_path);
                if !path.exists() {
                    return Err(Error::Unknown {
                        what: "preset or config file",
                        name: preset_or_path.into(),
                        available: preset_names().join(", "),
                    });
                }
                let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
                (text, path.display().to_string())
            }
        };
        Self::from_toml_str(&text, &origin, overrides)
    }

    /// Parses TOML text (`origin` names it in errors), applies overrides, validates.
    pub fn from_toml_str(text: &str, origin: &str, overrides: &[String]) -> Result<Config> {
        let mut tree: toml::Table = toml::from_str(text).map_err(|e: toml::de::Error| {
            // One line: the position and the parser's message, not its ASCII-art snippet.
            let line = e.span().map_or(0, |span| text[..span.start.min(text.len())].lines().count().max(1));
            Error::config(format!("{origin}:{line}"), format!("invalid TOML: {}", e.message()))
        })?;
        for kv in overrides {
            apply_override(&mut tree, kv)?;
        }
        Self::from_table(tree)
    }

    /// Deserializes and validates an already-built TOML tree.
    pub fn from_table(tree: toml::Table) -> Result<Config> {
        let de = toml::Value::Table(tree);
        let cfg: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            Error::config(if path == "." { "(top level)".into() } else { path }, e.into_inner().message().to_string())
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Physical pages of the device.
    pub fn physical_pages(&self) -> u64 {
        self.geometry.dimensions().iter().map(|&(_, v)| v as u64).product()
    }

    /// Physical pages, refusing a geometry whose product overflows 64 bits
    /// (naming the factor where it does) or has more planes than
    /// [`limits::MAX_ARRAY_UNITS`], and one whose tables (and payloads) do
    /// not fit this machine's memory.
    fn checked_physical_pages(&self) -> Result<u64> {
        let g = &self.geometry;
        let mut product = 1u64;
        for (key, v) in g.dimensions() {
            product = product
                .checked_mul(v as u64)
                .ok_or_else(|| Error::config(key, format!("{v}: the drive's page count overflows 64 bits")))?;
            if key == "geometry.planes_per_die" && product > limits::MAX_ARRAY_UNITS {
                return Err(Error::config(
                    "geometry",
                    format!(
                        "channels × chips_per_channel × dies_per_chip × planes_per_die = {product} planes; at most {}",
                        limits::MAX_ARRAY_UNITS
                    ),
                ));
            }
        }
        if product < u32::MAX as u64 {
            let payload = self.nand.store_payloads.then(|| product.saturating_mul(g.page_size as u64));
            let blocks = product / g.pages_per_block as u64;
            limits::check_memory(product, blocks, payload, limits::machine_bytes())?;
        }
        Ok(product)
    }

    /// Logical pages exported to the host: physical / (1 + overprovisioning).
    pub fn logical_pages(&self) -> u64 {
        (self.physical_pages() as f64 / (1.0 + self.overprovisioning)).floor() as u64
    }

    /// Logical capacity in 512 B sectors.
    pub fn logical_sectors(&self) -> u64 {
        self.logical_pages() * (self.geometry.page_size / 512) as u64
    }

    /// The config as TOML (snapshot keys and saved drives compare it).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("config serializes")
    }

    /// [`to_toml`](Self::to_toml), then as comments the keys left unset
    /// whose defaults depend on other keys, with what they resolve to (those
    /// [`resolved`](Self::resolved) fills in): what `ftlsim config show`
    /// prints. The comments show what a run uses; the TOML stays what was
    /// given, so a saved copy resolves them anew after an edit.
    pub fn to_toml_shown(&self) -> String {
        let value = |cfg: &Config| toml::Value::try_from(cfg).expect("config serializes");
        let mut filled = Vec::new();
        keys_filled_in(&value(self), &value(&self.resolved()), "", &mut filled);
        filled.sort();
        let mut out = self.to_toml();
        if !filled.is_empty() {
            out.push_str("\n# Unset above, so resolved from other keys:\n");
            for line in filled {
                out.push_str(&format!("# {line}\n"));
            }
        }
        out
    }

    /// Checks every value for range and consistency, naming the bad key.
    pub fn validate(&self) -> Result<()> {
        let g = &self.geometry;
        for (key, v) in g.dimensions() {
            if v == 0 {
                return Err(Error::config(key, "must be at least 1"));
            }
        }
        if g.pages_per_block > u16::MAX as u32 {
            return Err(Error::config("geometry.pages_per_block", "must be at most 65535"));
        }
        if g.page_size == 0 || g.page_size % 512 != 0 {
            return Err(Error::config(
                "geometry.page_size",
                format!("{} is not a positive multiple of 512 bytes", g.page_size),
            ));
        }
        let pages = self.checked_physical_pages()?;
        if pages >= u32::MAX as u64 {
            return Err(Error::config(
                "geometry",
                format!("{pages} physical pages exceed the 2^32 - 1 a 32-bit PPN addresses; use larger pages"),
            ));
        }
        let t = &self.timing;
        if t.multi_plane && t.plane_parallel {
            return Err(Error::config(
                "timing.multi_plane",
                "cannot be combined with timing.plane_parallel = true, which already overlaps every operation of a \
                 die's planes",
            ));
        }
        for (key, v) in [
            ("timing.read_us", t.read_us),
            ("timing.program_us", t.program_us),
            ("timing.erase_us", t.erase_us),
            ("timing.erase_suspend_us", t.erase_suspend_us),
            ("timing.program_suspend_us", t.program_suspend_us),
            ("timing.bus_ns_per_byte", t.bus_ns_per_byte),
            ("timing.command_ns", t.command_ns),
            ("host.link_ns_per_byte", self.host.link_ns_per_byte),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::config(key, format!("{v} is not a finite, non-negative time")));
            }
        }
        for (key, suspend, (op_key, op)) in [
            ("timing.erase_suspend_us", t.erase_suspend_us, ("timing.erase_us", t.erase_us)),
            ("timing.program_suspend_us", t.program_suspend_us, ("timing.program_us", t.program_us)),
        ] {
            if suspend > 0.0 && t.multi_plane {
                return Err(Error::config(
                    key,
                    "cannot be combined with timing.multi_plane = true: a multi-plane operation is not suspended \
                     for a read",
                ));
            }
            if suspend > 0.0 && suspend >= op {
                return Err(Error::config(
                    key,
                    format!("{suspend} must be shorter than the operation it suspends ({op_key} = {op})"),
                ));
            }
        }
        if !(self.overprovisioning.is_finite() && self.overprovisioning > 0.0 && self.overprovisioning <= 10.0) {
            return Err(Error::config(
                "overprovisioning",
                format!("{} must be in (0, 10]: (physical - logical) / logical", self.overprovisioning),
            ));
        }
        if !(self.host.time_scale.is_finite() && self.host.time_scale >= 0.0) {
            return Err(Error::config("host.time_scale", "must be a finite, non-negative factor"));
        }
        if !(1..=limits::MAX_QUEUE_DEPTH).contains(&self.host.queue_depth) {
            return Err(Error::config(
                "host.queue_depth",
                format!("{} must be in 1..={}", self.host.queue_depth, limits::MAX_QUEUE_DEPTH),
            ));
        }
        self.validate_trim()?;
        if !(self.gc.threshold.is_finite() && (0.0..=1.0).contains(&self.gc.threshold)) {
            return Err(Error::config("gc.threshold", format!("{} must be a fraction in [0, 1]", self.gc.threshold)));
        }
        let alpha = self.cache.alpha;
        if !(alpha.is_finite() && alpha >= 0.0) {
            return Err(Error::config(
                "cache.alpha",
                format!("{alpha} must be finite and non-negative (0: the page write / read time ratio)"),
            ));
        }
        if alpha > 0.0 && self.cache.policy != CachePolicy::Heap {
            return Err(Error::config(
                "cache.alpha",
                format!(
                    "{alpha} is the α of cache.policy = \"heap\"; the policy is \"{}\"",
                    format!("{:?}", self.cache.policy).to_lowercase()
                ),
            ));
        }
        if self.cache.bytes > 0 {
            let page = self.geometry.page_size as u64;
            if self.cache.bytes < page {
                return Err(Error::config(
                    "cache.bytes",
                    format!("{} holds no whole {page}-byte page; use 0 for no buffer", self.cache.bytes),
                ));
            }
            let drive = self.logical_pages().saturating_mul(page);
            if self.cache.bytes > drive {
                return Err(Error::config(
                    "cache.bytes",
                    format!("{} is more than the drive's {drive} logical bytes, the most accepted", self.cache.bytes),
                ));
            }
            if self.cache.bytes / page > u32::MAX as u64 / 2 {
                return Err(Error::config(
                    "cache.bytes",
                    format!("{} pages is too many to index", self.cache.bytes / page),
                ));
            }
            if page / 512 > 128 {
                return Err(Error::config(
                    "cache.bytes",
                    format!("the write buffer tracks sectors of pages up to 64 KiB; geometry.page_size is {page}"),
                ));
            }
        }
        self.validate_gc_debt()?;
        self.validate_gc_frontier()?;
        if self.gc.min_free_blocks < 1 {
            return Err(Error::config("gc.min_free_blocks", "GC needs at least 1 free block to copy into"));
        }
        // d-choices samples `d` blocks of a plane per victim: more than the plane holds adds nothing.
        let max_d =
            if self.gc.policy == VictimPolicy::DChoices { self.geometry.blocks_per_plane.max(1) } else { u32::MAX };
        if !(1..=max_d).contains(&self.gc.d) {
            return Err(Error::config(
                "gc.d",
                format!("{} must be in 1..={} (geometry.blocks_per_plane)", self.gc.d, self.geometry.blocks_per_plane),
            ));
        }
        if !(1..=limits::MAX_PCM_WRITE_QUEUE).contains(&self.pcm.write_queue) {
            return Err(Error::config(
                "pcm.write_queue",
                format!("{} must be in 1..={}", self.pcm.write_queue, limits::MAX_PCM_WRITE_QUEUE),
            ));
        }
        if !(1..=limits::MAX_PCM_ENTRIES_PER_WRITE).contains(&self.pcm.entries_per_write) {
            return Err(Error::config(
                "pcm.entries_per_write",
                format!("{} must be in 1..={}", self.pcm.entries_per_write, limits::MAX_PCM_ENTRIES_PER_WRITE),
            ));
        }
        if self.nand.endurance == 0 {
            return Err(Error::config("nand.endurance", "must be at least 1 erase cycle"));
        }
        if !(self.report.window_ms.is_finite() && self.report.window_ms >= 0.0) {
            return Err(Error::config("report.window_ms", "must be a finite, non-negative duration"));
        }
        self.validate_mapping()?;
        for cut in &self.host.power_cuts {
            cut.parse::<PowerCutAt>()?;
        }
        if !self.host.power_cuts.is_empty() && !self.nand.records_sequence() {
            return Err(Error::config(
                "host.power_cuts",
                "checking what survives a cut needs each page's program sequence: set nand.record_sequence = true",
            ));
        }
        let order = &self.ftl.stripe_order;
        let mut seen = order.clone();
        seen.sort_by_key(|u| *u as u8);
        seen.dedup();
        if seen.len() != order.len() || order.len() != 4 {
            return Err(Error::config("ftl.stripe_order", "must name each of channel, chip, die, plane exactly once"));
        }
        if self.logical_pages() == 0 {
            return Err(Error::config("overprovisioning", "leaves no logical capacity"));
        }
        self.validate_hybrid()
    }

    /// `gc.debt = "background"`, when set, needs what it stands on.
    fn validate_gc_debt(&self) -> Result<()> {
        if self.gc.debt != Some(GcDebt::Background) {
            return Ok(());
        }
        self.gc_debt_can_be_background().map_err(|why| Error::config("gc.debt", format!("\"background\" {why}")))
    }

    /// Whether the FTL runs the page core's GC, whose preemptible jobs
    /// `gc.debt` paces and `gc.frontier` gives a block of their own.
    fn has_gc_jobs(&self) -> bool {
        matches!(self.ftl.name.as_str(), "page" | "dftl" | "hat" | "dac")
    }

    /// Whether `"background"` can apply: an FTL whose GC is paid for by
    /// host writes (the page family's preemptible jobs) and an allocation
    /// that can pass over a plane owed copies; if not, why.
    fn gc_debt_can_be_background(&self) -> std::result::Result<(), String> {
        if !self.has_gc_jobs() {
            Err(format!("is for page, dftl, hat and dac: ftl.name = \"{}\" has no preemptible GC jobs", self.ftl.name))
        } else if self.gc.mode != GcMode::Preemptible {
            Err("needs gc.mode = \"preemptible\"".into())
        } else if self.ftl.allocation != Allocation::Dynamic {
            Err("needs ftl.allocation = \"dynamic\": a fixed rotation cannot pass over a plane owed copies".into())
        } else {
            Ok(())
        }
    }

    /// `gc.frontier = "separate"` where it would change nothing is refused:
    /// a run with it would report exactly what one without it does.
    fn validate_gc_frontier(&self) -> Result<()> {
        if self.gc.frontier != GcFrontier::Separate {
            return Ok(());
        }
        let name = self.ftl.name.as_str();
        let why = if name == "dftl" {
            "is not for dftl: GC's copies go back to its two write streams (data and translation pages)".into()
        } else if !self.has_gc_jobs() {
            format!(
                "is for page, hat and dac: ftl.name = \"{name}\" has no preemptible GC job to give a block of its own"
            )
        } else if self.gc.mode != GcMode::Preemptible {
            "needs gc.mode = \"preemptible\": blocking GC copies a whole victim at once, a run of its own already"
                .into()
        } else if name == "dac" && self.ftl.dac_regions != 1 {
            format!(
                "needs one write stream: ftl.dac_regions = {} gives DAC as many, and their copies go back to them",
                self.ftl.dac_regions
            )
        } else {
            return Ok(());
        };
        Err(Error::config("gc.frontier", format!("\"separate\" {why}")))
    }

    fn validate_trim(&self) -> Result<()> {
        let h = &self.host;
        if !(1..=limits::MAX_CONTROLLER_CORES).contains(&self.controller.cores) {
            return Err(Error::config(
                "controller.cores",
                format!("{} must be in 1..={}", self.controller.cores, limits::MAX_CONTROLLER_CORES),
            ));
        }
        if !(1..=65_536).contains(&h.trim_max_ranges) {
            return Err(Error::config(
                "host.trim_max_ranges",
                format!("{} must be in 1..=65536 (64 for ATA DSM, 256 for NVMe)", h.trim_max_ranges),
            ));
        }
        for (key, v) in [
            ("host.trim_batch_window_us", h.trim_batch_window_us),
            ("trim.command_us", self.trim.command_us),
            ("trim.range_us", self.trim.range_us),
            ("controller.command_us", self.controller.command_us),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::config(key, format!("{v} is not a finite, non-negative time")));
            }
        }
        Ok(())
    }

    fn validate_hybrid(&self) -> Result<()> {
        let f = &self.ftl;
        if !(1..=limits::MAX_TRIM_LIST_GROUPS).contains(&f.trim_list_groups) {
            return Err(Error::config(
                "ftl.trim_list_groups",
                format!("{} must be in 1..={}", f.trim_list_groups, limits::MAX_TRIM_LIST_GROUPS),
            ));
        }
        if f.log_blocks == 0 {
            return Err(Error::config("ftl.log_blocks", "BAST needs at least 1 log block per chip"));
        }
        if f.seq_log_blocks > 1 {
            return Err(Error::config("ftl.seq_log_blocks", format!("{} must be 0 or 1", f.seq_log_blocks)));
        }
        if f.rand_log_blocks == 0 {
            return Err(Error::config("ftl.rand_log_blocks", "FAST needs at least 1 random log block per chip"));
        }
        Ok(())
    }
}

impl Config {
    /// The mapping cache, PCM and energy tables.
    /// Bytes of one mapping unit (`ftl.map_unit_bytes`, else the page).
    pub fn map_unit_bytes(&self) -> u32 {
        self.ftl.map_unit_bytes.unwrap_or(self.geometry.page_size)
    }

    /// Mapping units per flash page (1 unless `ftl.map_unit_bytes` is set
    /// below the page size).
    pub fn units_per_page(&self) -> u32 {
        (self.geometry.page_size / self.map_unit_bytes()).max(1)
    }

    fn validate_map_unit(&self) -> Result<()> {
        let Some(unit) = self.ftl.map_unit_bytes else { return Ok(()) };
        let page = self.geometry.page_size;
        let key = "ftl.map_unit_bytes";
        if unit == 0 || unit % 512 != 0 || !unit.is_power_of_two() {
            return Err(Error::config(key, format!("{unit} is not a power-of-two multiple of 512 bytes")));
        }
        if unit > page || page % unit != 0 {
            return Err(Error::config(key, format!("{unit} does not divide geometry.page_size ({page} bytes)")));
        }
        let units = self.physical_pages() * (page / unit) as u64;
        if units >= (u32::MAX - 1) as u64 {
            return Err(Error::config(
                key,
                format!("{units} physical units exceed the 2^32 - 2 a 32-bit unit address holds; use larger units"),
            ));
        }
        let per_block = self.geometry.pages_per_block as u64 * (page / unit) as u64;
        if per_block > u16::MAX as u64 {
            return Err(Error::config(
                key,
                format!("{per_block} units per block exceed the 65535 a block's valid count holds"),
            ));
        }
        Ok(())
    }

    fn validate_mapping(&self) -> Result<()> {
        self.validate_map_unit()?;
        if self.ftl.cache_entry_bytes == 0 {
            return Err(Error::config("ftl.cache_entry_bytes", "must be at least 1"));
        }
        for (key, bytes) in [
            ("ftl.cache_bytes", self.ftl.cache_bytes),
            ("ftl.mu_bitmap_cache_bytes", self.ftl.mu_bitmap_cache_bytes),
            ("ftl.coftl_cache_bytes", self.ftl.coftl_cache_bytes),
        ] {
            if bytes > limits::MAX_CONTROLLER_RAM_BYTES {
                return Err(Error::config(
                    key,
                    format!(
                        "{bytes} bytes is more than the {} (1 TiB) of controller RAM accepted",
                        limits::MAX_CONTROLLER_RAM_BYTES
                    ),
                ));
            }
        }
        if self.ftl.cache_entries() == 0 {
            return Err(Error::config(
                "ftl.cache_bytes",
                format!("{} bytes hold no {}-byte mapping entry", self.ftl.cache_bytes, self.ftl.cache_entry_bytes),
            ));
        }
        let e = &self.energy;
        for (key, v) in [
            ("pcm.read_us", self.pcm.read_us),
            ("pcm.write_us", self.pcm.write_us),
            ("energy.voltage_v", e.voltage_v),
            ("energy.flash_ma", e.flash_ma),
            ("energy.dram_access_ma", e.dram_access_ma),
            ("energy.dram_access_ns", e.dram_access_ns),
            ("energy.dram_refresh_ma", e.dram_refresh_ma),
            ("energy.pcm_read_ma", e.pcm_read_ma),
            ("energy.pcm_write_ma", e.pcm_write_ma),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::config(key, format!("{v} is not a finite, non-negative value")));
            }
        }
        if e.dram_device_bytes == 0 {
            return Err(Error::config("energy.dram_device_bytes", "must be at least 1"));
        }
        Ok(())
    }
}

/// Applies one `a.b.c=value` override to the TOML tree. The value is parsed
/// as a TOML value (number, bool, array, quoted string) and falls back to a
/// bare string, so `--set gc.policy=fifo` works unquoted.
fn apply_override(tree: &mut toml::Table, kv: &str) -> Result<()> {
    let (key, raw) = kv.split_once('=').ok_or_else(|| Error::config(kv, "an override must be KEY=VALUE"))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(|p| p.is_empty()) {
        return Err(Error::config(kv, "empty key path"));
    }
    let raw = raw.trim();
    let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").expect("parsed key"),
        Err(_) => toml::Value::String(raw.to_string()),
    };
    let parts: Vec<&str> = key.split('.').collect();
    let mut node = tree;
    for (i, part) in parts[..parts.len() - 1].iter().enumerate() {
        let entry = node.entry(part.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        node = match entry {
            toml::Value::Table(t) => t,
            _ => return Err(Error::config(parts[..=i].join("."), "is a value, not a table")),
        };
    }
    node.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

/// `key = value` for each key of `resolved` missing from `given` (tables
/// walked below `prefix`, keys dotted).
fn keys_filled_in(given: &toml::Value, resolved: &toml::Value, prefix: &str, out: &mut Vec<String>) {
    let (Some(given), Some(resolved)) = (given.as_table(), resolved.as_table()) else { return };
    for (name, value) in resolved {
        let key = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        match given.get(name) {
            None => out.push(format!("{key} = {value}")),
            Some(given) => keys_filled_in(given, value, &key, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Preset `preset` with `key=value` overrides `sets`.
    fn load(preset: &str, sets: &[&str]) -> Result<Config> {
        Config::load(preset, &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn a_power_cut_past_the_clock_is_refused_not_clamped() {
        let e = "at=99999999999s".parse::<PowerCutAt>().unwrap_err().to_string();
        assert!(e.contains("host.power_cuts") && e.contains("past the simulator's clock"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
        assert_eq!("at=2s".parse::<PowerCutAt>().unwrap(), PowerCutAt::Time(crate::units::SimTime(2_000_000_000)));
        assert!("at=18446744073s".parse::<PowerCutAt>().is_ok(), "just under 2^64 ns");
    }

    #[test]
    fn every_preset_loads_and_validates() {
        for name in preset_names() {
            let cfg = Config::load(name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(cfg.name, *name);
            assert!(!cfg.source.is_empty(), "{name} must cite its source");
        }
    }

    #[test]
    fn overrides_apply_and_are_typed() {
        let cfg = Config::load(
            "k9lag08u0m-4ch",
            &["geometry.channels=8".into(), "gc.policy=fifo".into(), "overprovisioning=0.25".into()],
        )
        .unwrap();
        assert_eq!(cfg.geometry.channels, 8);
        assert_eq!(cfg.gc.policy, VictimPolicy::Fifo);
        assert_eq!(cfg.overprovisioning, 0.25);
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = Config::load("k9lag08u0m-4ch", &["geometry.chanels=8".into()]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("geometry") && msg.contains("chanels"), "{msg}");
    }

    #[test]
    fn bad_values_are_named() {
        let err = Config::load("k9lag08u0m-4ch", &["geometry.channels=abc".into()]).unwrap_err();
        assert!(err.to_string().contains("geometry.channels"), "{err}");
        let err = Config::load("k9lag08u0m-4ch", &["geometry.page_size=1000".into()]).unwrap_err();
        assert!(err.to_string().contains("geometry.page_size"), "{err}");
        let err = Config::load("k9lag08u0m-4ch", &["gc.policy=lru".into()]).unwrap_err();
        assert!(err.to_string().contains("gc.policy"), "{err}");
        let err = Config::load("k9lag08u0m-4ch", &["overprovisioning=-1".into()]).unwrap_err();
        assert!(err.to_string().contains("overprovisioning"), "{err}");
        let err = Config::load("k9lag08u0m-4ch", &["novalue".into()]).unwrap_err();
        assert!(err.to_string().contains("KEY=VALUE"), "{err}");
    }

    #[test]
    fn unknown_preset_lists_the_available_ones() {
        let err = Config::load("no-such-drive", &[]).unwrap_err().to_string();
        assert!(err.contains("k9lag08u0m-4ch"), "{err}");
    }

    #[test]
    fn multi_plane_excludes_plane_parallel() {
        let cfg = Config::load("k9lag08u0m-4ch", &["timing.multi_plane=true".into()]).unwrap();
        assert!(cfg.timing.multi_plane && !cfg.timing.plane_parallel);
        let err = Config::load("hat-table4", &["timing.multi_plane=true".into()]).unwrap_err().to_string();
        assert!(err.contains("timing.multi_plane") && err.contains("plane_parallel"), "{err}");
    }

    #[test]
    fn suspend_is_shorter_than_the_operation_and_not_with_multi_plane() {
        let load = |sets: &[&str]| {
            Config::load("modern-tlc", &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .map_err(|e| e.to_string())
        };
        let cfg = load(&["timing.erase_suspend_us=700", "timing.program_suspend_us=100"]).unwrap();
        assert_eq!((cfg.timing.erase_suspend_us, cfg.timing.program_suspend_us), (700.0, 100.0));
        let dies = ["timing.plane_parallel=false", "timing.multi_plane=true"];
        for (sets, says) in [
            (&["timing.erase_suspend_us=3500"][..], "shorter than the operation it suspends (timing.erase_us"),
            (&["timing.program_suspend_us=700"][..], "shorter than the operation it suspends (timing.program_us"),
            (&["timing.erase_suspend_us=-1"][..], "non-negative"),
            (&["timing.erase_suspend_us=100", dies[0], dies[1]][..], "multi_plane"),
            (&["timing.program_suspend_us=100", dies[0], dies[1]][..], "multi_plane"),
        ] {
            let err = load(sets).unwrap_err();
            let key = sets[0].split('=').next().unwrap();
            assert!(err.contains(key) && err.contains(says), "{sets:?}: {err}");
        }
    }

    #[test]
    fn write_buffer_policy_and_alpha_are_checked() {
        let load = |sets: &[&str]| load("hat-table4", sets);
        let cfg = load(&["cache.bytes=65536", "cache.policy=\"heap\""]).unwrap();
        assert_eq!((cfg.cache.policy, cfg.cache.alpha), (CachePolicy::Heap, 0.0));
        assert_eq!(load(&["cache.policy=\"heap\"", "cache.alpha=2.5"]).unwrap().cache.alpha, 2.5);
        for (sets, words) in [
            (&["cache.policy=\"mru\""][..], &["cache.policy", "heap"][..]),
            (&["cache.policy=\"heap\"", "cache.alpha=-1"], &["cache.alpha", "non-negative"]),
            (&["cache.policy=\"heap\"", "cache.alpha=nan"], &["cache.alpha", "finite"]),
            (&["cache.alpha=3"], &["cache.alpha", "\"heap\"", "\"lru\""]),
        ] {
            let err = load(sets).unwrap_err().to_string();
            for w in words {
                assert!(err.contains(w), "{sets:?}: {err}");
            }
        }
    }

    /// A run with `gc.frontier = "separate"` where it applies to nothing
    /// would report what one without it does: refused, naming why.
    #[test]
    fn a_separate_gc_frontier_where_it_changes_nothing_is_refused() {
        let load = |sets: &[&str]| load("modern-tlc", sets);
        let sep = "gc.frontier=\"separate\"";
        for ftl in ["page", "hat"] {
            assert!(load(&[sep, &format!("ftl.name=\"{ftl}\"")]).is_ok(), "{ftl}");
        }
        assert!(load(&[sep, "ftl.name=\"dac\"", "ftl.dac_regions=1"]).is_ok());
        for (sets, words) in [
            (&["ftl.name=\"dftl\""][..], &["gc.frontier", "dftl", "two write streams"][..]),
            (&["ftl.name=\"bast\""], &["gc.frontier", "\"bast\""]),
            (&["gc.mode=\"blocking\""], &["gc.frontier", "gc.mode"]),
            (&["ftl.name=\"dac\"", "ftl.dac_regions=2"], &["gc.frontier", "ftl.dac_regions = 2"]),
        ] {
            let all: Vec<&str> = sets.iter().copied().chain([sep]).collect();
            let err = load(&all).unwrap_err().to_string();
            for w in words {
                assert!(err.contains(w), "{all:?}: {err}");
            }
        }
    }

    #[test]
    fn gc_debt_in_background_needs_what_it_stands_on() {
        let load = |sets: &[&str]| load("modern-tlc", sets);
        let debt = |sets: &[&str]| load(sets).unwrap().gc_debt();
        assert_eq!(debt(&[]), GcDebt::Background, "the default where it applies");
        assert_eq!(debt(&["gc.debt=\"ahead\""]), GcDebt::Ahead);
        assert_eq!(debt(&["cache.bytes=0"]), GcDebt::Background, "without a write buffer too");
        for (sets, why) in [
            (&["gc.mode=\"blocking\""][..], "blocking GC"),
            (&["ftl.allocation=\"static\""], "static allocation"),
            (&["ftl.name=\"bast\""], "an FTL without preemptible jobs"),
        ] {
            assert_eq!(debt(sets), GcDebt::Ahead, "unset, with {why}, is \"ahead\"");
        }
        let resolved = load(&[]).unwrap().resolved();
        assert_eq!((resolved.gc.debt, resolved.nand.record_sequence), (Some(GcDebt::Background), Some(false)));
        let bg = "gc.debt=\"background\"";
        for (sets, words) in [
            (&[bg, "gc.mode=\"blocking\""][..], &["gc.debt", "gc.mode"][..]),
            (&[bg, "ftl.allocation=\"static\""], &["gc.debt", "ftl.allocation"]),
            (&[bg, "ftl.name=\"bast\""], &["gc.debt", "\"bast\""]),
            (&["gc.debt=\"later\""], &["gc.debt", "background"]),
        ] {
            let err = load(sets).unwrap_err().to_string();
            for w in words {
                assert!(err.contains(w), "{sets:?}: {err}");
            }
        }
    }

    #[test]
    fn mapping_cache_and_energy_keys_are_checked() {
        let cfg = Config::load("hat-table4", &[]).unwrap();
        assert_eq!(cfg.ftl.cache_entries(), 16384, "128 KiB of 8-byte entries (HAT Table 4)");
        let err = Config::load("hat-table4", &["ftl.cache_bytes=7".into()]).unwrap_err();
        assert!(err.to_string().contains("ftl.cache_bytes"), "{err}");
        let err = Config::load("hat-table4", &["energy.flash_ma=-1".into()]).unwrap_err();
        assert!(err.to_string().contains("energy.flash_ma"), "{err}");
        let err = Config::load("hat-table4", &["pcm.write_ns=1".into()]).unwrap_err();
        assert!(err.to_string().contains("write_ns"), "{err}");
    }

    #[test]
    fn geometry_products_and_queue_depth_are_bounded() {
        let geo = |dims: [u64; 6]| {
            let keys = ["channels", "chips_per_channel", "dies_per_chip", "planes_per_die", "blocks_per_plane"];
            let mut o: Vec<String> = keys.iter().zip(dims).map(|(k, v)| format!("geometry.{k}={v}")).collect();
            o.push(format!("geometry.pages_per_block={}", dims[5]));
            Config::load("hat-table4", &o).unwrap_err().to_string()
        };
        // 2^64 pages wrapped to zero; six 2^32 - 1 factors to about 2^190.
        let err = geo([1 << 16, 1 << 16, 1 << 16, 1 << 16, 1, 1]);
        assert!(err.contains("geometry.planes_per_die: 65536: the drive's page count overflows 64 bits"), "{err}");
        let max = u32::MAX as u64;
        let err = geo([max, max, max, max, max, 65280]);
        assert!(err.contains("overflows 64 bits"), "{err}");
        let err = geo([1 << 31, 1, 1, 1, 1, 1]);
        assert!(err.contains("config: geometry: ") && err.contains("2147483648 planes; at most 1048576"), "{err}");
        let err = geo([1, 1, 1, 1, 1 << 30, 8]);
        assert!(err.contains("exceed the 2^32 - 1"), "{err}");
        let err = Config::load("hat-table4", &["cache.bytes=1000000000000".into()]).unwrap_err().to_string();
        assert!(err.contains("cache.bytes: 1000000000000 is more than the drive's"), "{err}");
        let q = |d: &str| Config::load("hat-table4", &[format!("host.queue_depth={d}")]);
        let err = q("4294967295").unwrap_err().to_string();
        assert!(err.contains("host.queue_depth: 4294967295 must be in 1..=65536"), "{err}");
        q("65536").unwrap();
    }

    #[test]
    fn payloads_larger_than_the_machine_are_refused() {
        let err =
            Config::load("hat-table4", &["geometry.page_size=2147483648".into(), "nand.store_payloads=true".into()])
                .unwrap_err()
                .to_string();
        assert!(err.starts_with("config: nand.store_payloads: storing the drive's"), "{err}");
        Config::load("hat-table4", &["geometry.page_size=2147483648".into()]).unwrap();
    }

    #[test]
    fn shown_config_round_trips() {
        let cfg = Config::load("hat-table4", &[]).unwrap();
        let again = Config::from_toml_str(&cfg.to_toml_shown(), "shown", &[]).unwrap();
        assert_eq!(cfg, again);
    }
}
