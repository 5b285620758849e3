//! The facade: a drive built from a config, driven by a command source,
//! producing a [`Report`]. The CLI, the Python binding and the NBD server all
//! go through here.
//!
//! ```
//! use ftlsim::{Config, Simulation, RunOptions};
//! use ftlsim::trace::{CmdSource, HostCmd, Op};
//! use ftlsim::units::{Sector, SimTime};
//!
//! let cfg = Config::load("hat-table4", &["geometry.blocks_per_plane=64".into()]).unwrap();
//! let mut sim = Simulation::new(cfg).unwrap();
//! let cmd = HostCmd { time: SimTime(0), op: Op::Write, start: Sector(0), sectors: 8, continued: false };
//! let done = sim.submit(&cmd, SimTime(0), None, None).unwrap();
//! assert!(done > SimTime(0));
//! ```

use crate::config::{Config, HostMode, OutOfRange, PowerCutAt};
use crate::controller::Controller;
use crate::engine::host::{Arrivals, RangePolicy, TimeOrdered, fit_range};
use crate::engine::{Device, FlashCounters};
use crate::error::{Error, Result};
use crate::ftl::{self, Ftl, Span};
use crate::limits;
use crate::nand::{Geometry, NandArray, Timing};
use crate::report::{self, EraseMap, EraseStats, InputReport, Metrics, Report, RequestLatencies, Window};
use crate::rng::SimRng;
use crate::snapshot::{self, SnapshotUse};
use crate::trace::{CmdSource, HostCmd, Op, Progress};
use crate::trim::TrimModel;
use crate::units::{Nanos, SECTOR_BYTES, Sector, SimTime};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::path::Path;
use std::time::Instant;

/// Latest arrival a run accepts, ns (about 146 years): a quarter of the
/// 64-bit clock, leaving the rest for service times.
const MAX_ARRIVAL_NS: u64 = u64::MAX / 4;
/// Commands read ahead of the one being served, for prefetching their mappings.
const LOOKAHEAD: usize = 8;
/// Rounds of [`Ftl::settle`] and the engine's background work a settle
/// makes at most: each round's deferred work is a fraction of the last's
/// (DFTL: the rewrites of the few victims its own rewrites made GC take).
const SETTLE_ROUNDS: u32 = 16;

/// Unmeasured conditioning before a run: `fill` of the logical space written
/// sequentially, then `overwrite` × that space in random page-aligned 4 KiB
/// writes (at least one page), so the run starts in steady state; `mode`
/// says how the overwrites are executed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Precondition {
    pub fill: f64,
    pub overwrite: f64,
    pub mode: PreconditionMode,
}

impl Precondition {
    /// `fill` then `overwrite`, the overwrites fast-forwarded.
    pub const fn new(fill: f64, overwrite: f64) -> Precondition {
        Precondition { fill, overwrite, mode: PreconditionMode::Fast }
    }
}

/// How preconditioning executes its random overwrites (the sequential fill
/// is always timed: it is cheap, and fill-only conditioning stays exactly
/// what it was).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PreconditionMode {
    /// Fast-forward: each overwrite goes straight to the FTL, issued as the
    /// previous one completes, on a device timing its array units only
    /// ([`Device::set_units_only`]): mapping, GC and wear as the FTL decides
    /// them, without bus calendars, the write buffer or background
    /// scheduling; GC keeps pace through the FTL's own host-paced
    /// mechanisms. Where the FTL's decisions do not depend on time the
    /// drive ends in exactly the state `timed` leaves; see
    /// `docs/preconditioning.md`.
    #[default]
    Fast,
    /// Every overwrite is a host command at queue depth 1 through the timed
    /// path, GC running in the idle time between them.
    Timed,
    /// No time at all, fill included: the page FTL's state built on the
    /// array and its block pool, overwrites drawn as uniform valid units
    /// (the same distribution as uniform LPNs), planes in stripe order,
    /// GC by whole victims; see `ftl::page::functional` and
    /// `docs/preconditioning.md`.
    Functional,
}

impl PreconditionMode {
    pub fn name(self) -> &'static str {
        match self {
            PreconditionMode::Fast => "fast",
            PreconditionMode::Timed => "timed",
            PreconditionMode::Functional => "functional",
        }
    }
}

impl std::str::FromStr for Precondition {
    type Err = Error;
    fn from_str(s: &str) -> Result<Precondition> {
        let bad = |key: &str, reason: String| {
            let key = if key.is_empty() { "precondition".into() } else { format!("precondition.{key}") };
            Error::Workload { key, reason }
        };
        let mut p = Precondition::new(1.0, 0.0);
        let parts = crate::workload::split_fields(s).map_err(|why| {
            bad(
                "",
                format!(
                    "'{s}' {why}; give fill=F[,overwrite=X][,mode=fast|timed|functional], e.g. fill=1.0,overwrite=1.0"
                ),
            )
        })?;
        let mut seen = Vec::new();
        for part in parts {
            let (k, v) = part.split_once('=').ok_or_else(|| bad(part, "expected KEY=VALUE".into()))?;
            let k = k.trim();
            if seen.contains(&k) {
                return Err(bad(k, "given twice".into()));
            }
            seen.push(k);
            if k == "mode" {
                p.mode = match v.trim() {
                    "fast" => PreconditionMode::Fast,
                    "timed" => PreconditionMode::Timed,
                    "functional" => PreconditionMode::Functional,
                    other => {
                        return Err(bad(k, format!("'{other}' is not a mode; expected fast, timed or functional")));
                    }
                };
                continue;
            }
            let x: f64 = v.trim().parse().map_err(|_| bad(k, format!("'{v}' is not a number")))?;
            if !x.is_finite() || x < 0.0 {
                return Err(bad(k, format!("{x} must be a finite, non-negative number")));
            }
            match k {
                "fill" if x <= 1.0 => p.fill = x,
                "fill" => return Err(bad(k, format!("{x} is more than the whole logical space (1.0)"))),
                "overwrite" if x <= limits::MAX_OVERWRITE => p.overwrite = x,
                "overwrite" => {
                    let most = limits::MAX_OVERWRITE;
                    return Err(bad(
                        k,
                        format!("{} is more than {most} (times the filled space), the most accepted", v.trim()),
                    ));
                }
                other => return Err(bad(other, "unknown key; expected fill, overwrite or mode".into())),
            }
        }
        Ok(p)
    }
}

impl std::fmt::Display for Precondition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fill={},overwrite={},mode={}", self.fill, self.overwrite, self.mode.name())
    }
}

/// How a run drives the drive.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub mode: HostMode,
    pub queue_depth: u32,
    pub time_scale: f64,
    pub range: RangePolicy,
    /// Describes the input in the report.
    pub input: InputReport,
    /// Commands between progress callbacks.
    pub progress_every: u64,
}

impl RunOptions {
    /// Options taken from the config's `[host]` table.
    pub fn from_config(cfg: &Config) -> RunOptions {
        RunOptions {
            mode: cfg.host.mode,
            queue_depth: cfg.host.queue_depth,
            time_scale: cfg.host.time_scale,
            range: match cfg.host.out_of_range {
                OutOfRange::Error => RangePolicy::Error,
                OutOfRange::Wrap => RangePolicy::Wrap,
                // The caller must supply the source's span; until it does,
                // scaling is the identity.
                OutOfRange::Scale => RangePolicy::Scale { source_sectors: 0 },
            },
            input: InputReport::default(),
            progress_every: 1 << 16,
        }
    }
}

pub struct Simulation {
    cfg: Config,
    dev: Device,
    ftl: Box<dyn Ftl>,
    ctrl: Controller,
    logical_sectors: u64,
    precondition: Option<Precondition>,
    latencies: Option<RequestLatencies>,
    last_queueing: Nanos,
    /// `host.power_cuts` not yet made, and what survived the ones made.
    cuts: Vec<PowerCutAt>,
    durability: Option<Durability>,
    recoveries: Vec<ftl::RecoveryReport>,
    trim: TrimModel,
    /// The ranges of the multi-range TRIM being gathered (reused).
    trim_ranges: Vec<Span>,
}

/// A FLUSH in flight: when it completes, how many were issued before it,
/// and the pages it makes durable with their state (program sequence).
type Flushing = (SimTime, u64, Vec<(u32, u64)>);

/// What must survive a power cut: per logical page, the program sequence
/// number of its data as of the last completed FLUSH (0: nothing to keep),
/// the pages written or trimmed since, and what FLUSHes issued but perhaps
/// not completed will make durable once they complete (when, and each
/// page's sequence number).
struct Durability {
    flushed_seq: Vec<u64>,
    pending: Vec<u32>,
    flushing: Vec<Flushing>,
    flushes_issued: u64,
    /// Whole pages trimmed since a FLUSH last made their state durable,
    /// with the FLUSHes issued before the trim: the FTL may make a TRIM
    /// durable before any FLUSH asks (COFTL commits a table on eviction),
    /// so such a page may come back unmapped.
    trimmed: std::collections::HashMap<u32, u64>,
}

/// What a snapshot holds: the drive's whole state, FTL included.
struct Drive {
    dev: Device,
    ftl: Box<dyn Ftl>,
    ctrl: Controller,
    trim: TrimModel,
}

impl Drive {
    /// The drive `cfg` describes, as built: erased, unmapped, time zero.
    fn build(cfg: &Config) -> Result<Drive> {
        let geo = Geometry::new(&cfg.geometry);
        let timing = Timing::new(&cfg.timing, geo.page_size, cfg.host.link_ns_per_byte);
        let array = NandArray::with_units(
            geo,
            cfg.nand.endurance,
            cfg.nand.store_payloads,
            cfg.nand.records_sequence(),
            cfg.units_per_page(),
        );
        let mut dev = Device::new(array, timing).with_pcm(
            Nanos::from_us_f64(cfg.pcm.read_us),
            Nanos::from_us_f64(cfg.pcm.write_us),
            cfg.pcm.write_queue,
        );
        if cfg.nand.records_sequence() {
            // A power cut can be made on this drive: programs in flight then tear.
            dev.track_power_cuts();
        }
        let ftl = ftl::build(&cfg.ftl.name, cfg, &dev)?;
        let ctrl = Controller::new(cfg, &dev);
        let trim = TrimModel::new(cfg, cfg.nand.store_payloads);
        Ok(Drive { dev, ftl, ctrl, trim })
    }
}

impl Simulation {
    /// Builds the drive and the FTL named by `cfg.ftl.name`.
    pub fn new(cfg: Config) -> Result<Simulation> {
        cfg.validate()?;
        let Drive { dev, ftl, ctrl, trim } = Drive::build(&cfg)?;
        let cuts = cfg.host.power_cuts.iter().map(|c| c.parse()).collect::<Result<Vec<PowerCutAt>>>()?;
        let durability = (!cuts.is_empty()).then(|| Durability {
            flushed_seq: vec![0; cfg.logical_pages() as usize],
            pending: Vec::new(),
            flushing: Vec::new(),
            flushes_issued: 0,
            trimmed: std::collections::HashMap::new(),
        });
        Ok(Simulation {
            cuts,
            durability,
            recoveries: Vec::new(),
            trim,
            trim_ranges: Vec::new(),
            logical_sectors: cfg.logical_sectors(),
            cfg,
            dev,
            ftl,
            ctrl,
            precondition: None,
            latencies: None,
            last_queueing: Nanos::ZERO,
        })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// See [`NandArray::prefault_payloads`](crate::nand::NandArray::prefault_payloads).
    pub fn prefault_payloads(&mut self, ahead: usize) {
        self.dev.array.prefault_payloads(ahead);
    }

    /// Logical capacity in sectors.
    pub fn logical_sectors(&self) -> u64 {
        self.logical_sectors
    }

    /// Keeps every measured request's latency from now on (memory grows with
    /// the run; off unless asked for). [`Simulation::take_latencies`] hands them over.
    pub fn keep_latencies(&mut self) {
        self.latencies.get_or_insert_with(RequestLatencies::default);
    }

    pub fn take_latencies(&mut self) -> Option<RequestLatencies> {
        self.latencies.take()
    }

    /// The page holding logical page `lpn`'s data now, found without side
    /// effects; `None` when it reads as zeros.
    pub fn physical(&self, lpn: u32) -> Option<crate::units::Ppn> {
        self.ftl.physical(crate::units::Lpn(lpn))
    }

    /// Every block's erase count with its physical coordinates.
    pub fn erase_map(&self) -> EraseMap {
        EraseMap::new(self.dev.geometry(), self.dev.array.erase_counts())
    }

    /// The stored contents of logical page `lpn`, read without side effects
    /// (payload mode): flash's, under any newer sectors in the write
    /// buffer; `None` when it reads as zeros.
    pub fn page_contents(&self, lpn: u32) -> Option<Cow<'_, [u8]>> {
        let flash = self.ftl.page_data(&self.dev, crate::units::Lpn(lpn));
        // Newer than flash, in order (buffer slots may be mapping units:
        // sector offsets in the page).
        let held: Vec<_> = self.ctrl.held(self.ftl.as_ref(), lpn).collect();
        if held.is_empty() {
            return flash;
        }
        let mut page = flash.map_or_else(|| vec![0; self.cfg.geometry.page_size as usize], Cow::into_owned);
        for (mask, bytes, first) in held {
            let out = &mut page[first as usize * 512..];
            let len = if bytes.is_empty() { 0 } else { bytes.len().min(out.len()) };
            crate::controller::buffer::overlay_held(mask, bytes, 0, &mut out[..len]);
        }
        Some(Cow::Owned(page))
    }

    /// Power fails at `at` (between commands): background work due before
    /// it runs, then the write buffer and everything else volatile is lost
    /// and the FTL recovers its tables from flash ([`Ftl::power_cut`]).
    /// Refused, changing nothing, by an FTL without crash recovery, and on
    /// a drive without program sequences (recovery orders copies by them).
    pub fn power_cut(&mut self, at: SimTime) -> Result<ftl::RecoveryReport> {
        if !self.cfg.nand.records_sequence() {
            return Err(Error::config(
                "nand.record_sequence",
                "a power cut needs each page's program sequence to recover: set nand.record_sequence = true",
            ));
        }
        let (ftl, dev, ctrl) = (self.ftl.as_mut(), &mut self.dev, &mut self.ctrl);
        ctrl.run_until(ftl, dev, at)?;
        dev.book_deferred();
        let report = ftl.power_cut(dev, at)?;
        ctrl.power_cut(report.recovered_at);
        Ok(report)
    }

    /// Runs all pending background work (destaging, GC jobs) to its end, as
    /// a drive left idle would; returns when it ends.
    pub fn settle(&mut self) -> Result<SimTime> {
        self.dev.book_deferred();
        let mut end = self.ctrl.settle(self.ftl.as_mut(), &mut self.dev)?;
        // What the FTL deferred (DFTL's rewrites) may start GC jobs whose
        // victims defer more: rounds until none is left, or a few.
        for _ in 0..SETTLE_ROUNDS {
            let Some(done) = self.ftl.settle(&mut self.dev, end)? else { break };
            end = end.max(done).max(self.ctrl.settle(self.ftl.as_mut(), &mut self.dev)?);
        }
        Ok(end)
    }

    /// Pages in the write buffer not yet on flash.
    pub fn dirty_pages(&self) -> u32 {
        self.ctrl.dirty_pages()
    }

    /// The preconditioning this drive received, if any.
    pub fn preconditioned(&self) -> Option<Precondition> {
        self.precondition
    }

    pub fn check_invariants(&self) -> Result<()> {
        self.ctrl.check().map_err(|reason| Error::invariant("write buffer", reason))?;
        self.ftl.check_invariants(&self.dev)
    }

    /// Serves one command issued at `issue`; returns its completion time.
    /// `data` (writes) and `out` (reads) are span-sized when payloads are on.
    pub fn submit(
        &mut self,
        cmd: &HostCmd,
        issue: SimTime,
        data: Option<&[u8]>,
        out: Option<&mut [u8]>,
    ) -> Result<SimTime> {
        if cmd.end().0 > self.logical_sectors {
            return Err(Error::OutOfRange {
                source_name: "submit".into(),
                request: 0,
                start: cmd.start.0,
                end: cmd.end().0,
                capacity: self.logical_sectors,
            });
        }
        let bytes = cmd.sectors * SECTOR_BYTES;
        for (buf, what) in [(data.map(<[u8]>::len), "write data"), (out.as_deref().map(<[u8]>::len), "read buffer")] {
            if let Some(len) = buf {
                if len as u64 != bytes {
                    return Err(Error::invariant("host", format!("{what} of {len} bytes for a {bytes}-byte command")));
                }
            }
        }
        self.serve(cmd, issue, data, out)
    }

    /// [`submit`](Self::submit) for a command known to be in range, with
    /// span-sized buffers (as [`run`](Self::run) makes them).
    #[inline(always)]
    fn serve(&mut self, cmd: &HostCmd, issue: SimTime, data: Option<&[u8]>, out: Option<&mut [u8]>) -> Result<SimTime> {
        self.dev.no_cut_before(issue);
        let span = Span { start: cmd.start, sectors: cmd.sectors };
        let bytes = cmd.sectors * SECTOR_BYTES;
        if cmd.op == Op::Trim && cmd.sectors > 0 {
            return self.submit_trim(&[span], issue);
        }
        // A non-queued TRIM before it may hold the command, and it may wait
        // for a firmware core (queueing, from its arrival); the core's
        // time is service.
        let arrival = issue;
        let issue = self.ctrl.cores.command(self.trim.admit(cmd.op, issue));
        // Background work due before this command runs first, in time order.
        let (ftl, dev, ctrl) = (self.ftl.as_mut(), &mut self.dev, &mut self.ctrl);
        ctrl.run_until(ftl, dev, issue)?;
        dev.begin_command();
        let mut stalled = Nanos::ZERO;
        let done = match cmd.op {
            Op::Read if cmd.sectors > 0 => {
                let flash_done = ctrl.read(ftl, dev, span, issue, out)?;
                dev.host_transfer(bytes, flash_done)
            }
            Op::Write if cmd.sectors > 0 => {
                let ready = dev.host_transfer(bytes, issue);
                let done = ctrl.write(ftl, dev, span, issue, ready, data)?;
                stalled = ctrl.last_stall;
                done
            }
            Op::Flush => ctrl.flush(ftl, dev, issue)?,
            _ => issue,
        };
        self.trim.complete(cmd.op, done);
        self.note_queueing(arrival, issue, self.ctrl.cores.command_time(), done, stalled);
        Ok(done)
    }

    /// Work the drive did for others before the command's own began, waits
    /// for a bus within it and for buffer space are queueing; the rest
    /// (`core` of firmware time just before `began` among it) is service.
    fn note_queueing(&mut self, arrival: SimTime, began: SimTime, core: Nanos, done: SimTime, stalled: Nanos) {
        let (served, bus_waited) = self.dev.served_from();
        let served = served.min(done).max(began);
        let waited = Nanos((served - arrival).0.saturating_sub(core.0));
        self.last_queueing = (waited + bus_waited + stalled).min(done - arrival);
    }

    /// How long the last [`submit`](Self::submit)ted command waited before
    /// the drive served it (its latency's queueing part).
    pub fn last_queueing(&self) -> Nanos {
        self.last_queueing
    }

    /// Serves one TRIM command carrying `ranges` (at most
    /// `host.trim_max_ranges`, each inside the logical space), issued at
    /// `issue`; returns its completion time. See [`crate::trim`].
    pub fn submit_trim(&mut self, ranges: &[Span], issue: SimTime) -> Result<SimTime> {
        let max = self.trim.max_ranges();
        if ranges.is_empty() || ranges.len() > max {
            return Err(Error::invariant("host", format!("a TRIM of {} ranges (1..={max} allowed)", ranges.len())));
        }
        if let Some(r) = ranges.iter().find(|r| r.start.0 + r.sectors > self.logical_sectors) {
            return Err(Error::OutOfRange {
                source_name: "submit_trim".into(),
                request: 0,
                start: r.start.0,
                end: r.start.0 + r.sectors,
                capacity: self.logical_sectors,
            });
        }
        let arrival = issue;
        let issue = self.trim.admit(Op::Trim, issue);
        let (ftl, dev, ctrl) = (self.ftl.as_mut(), &mut self.dev, &mut self.ctrl);
        ctrl.run_until(ftl, dev, issue)?;
        dev.begin_command();
        let done = self.trim.serve(ctrl, ftl, dev, ranges, issue)?;
        self.trim.complete(Op::Trim, done);
        self.note_queueing(arrival, issue, Nanos::ZERO, done, Nanos::ZERO);
        Ok(done)
    }

    /// Conditions the drive (unmeasured): afterwards, time and every counter
    /// restart from zero, while data and wear stay.
    pub fn precondition(&mut self, p: Precondition) -> Result<()> {
        self.precondition_observed(p, &mut |_| true)
    }

    /// As [`precondition`](Simulation::precondition), reporting progress in
    /// pages written (fill, then overwrites) every [`PRECONDITION_PROGRESS`]
    /// commands; `on_progress` returning `false` stops it with
    /// [`Error::Interrupted`].
    pub fn precondition_observed(
        &mut self,
        p: Precondition,
        on_progress: &mut dyn FnMut(Progress) -> bool,
    ) -> Result<()> {
        let spp = self.cfg.geometry.page_size as u64 / SECTOR_BYTES;
        let pages = self.cfg.logical_pages();
        let filled = ((pages as f64 * p.fill).round() as u64).min(pages);
        // Overwrites of 4 KiB or a mapping unit, whichever is larger: whole
        // pages unless units are smaller (`ftl.map_unit_bytes`).
        let unit = self.cfg.map_unit_bytes() as u64 / SECTOR_BYTES;
        let write_sectors = (4096 / SECTOR_BYTES).max(unit);
        // Overwrites per filled page as the ratio `per_page / write_pages`.
        let (per_page, write_pages) =
            if write_sectors >= spp { (1, write_sectors / spp) } else { (spp / write_sectors, 1) };
        let overwrites = ((filled as f64 * p.overwrite) * per_page as f64 / write_pages as f64).round() as u64;
        let slots = filled * per_page / write_pages;
        let overwrites = if slots > 0 { overwrites } else { 0 };
        let total = filled + overwrites * write_pages / per_page;
        let w = Overwrites { slots, count: overwrites, write_sectors, progress_pages: (write_pages, per_page) };
        if p.mode == PreconditionMode::Functional {
            let mut tick = |n: u64| {
                // `n`: pages filled, then units overwritten, `per_page` of them a page's worth.
                let done = if n <= filled { n } else { filled + (n - filled) / per_page };
                let go_on = n % PRECONDITION_PROGRESS != 0 || on_progress(Progress { done, total: Some(total) });
                if go_on { Ok(()) } else { Err(Error::Interrupted) }
            };
            self.precondition_functional(filled, &w, &mut tick)?;
        } else {
            let mut commands = 0u64;
            let mut tick = |done: u64| {
                commands += 1;
                let go_on = commands % PRECONDITION_PROGRESS != 0 || on_progress(Progress { done, total: Some(total) });
                if go_on { Ok(()) } else { Err(Error::Interrupted) }
            };
            self.precondition_timed(p.mode, filled, w, &mut tick)?;
        }
        on_progress(Progress { done: total, total: Some(total) });
        self.restart_measurement()?;
        self.precondition = Some(p);
        Ok(())
    }

    /// `mode=functional`: the FTL builds the state itself, each overwrite
    /// one mapping unit, packed into pages as `fast` packs them.
    fn precondition_functional(
        &mut self,
        filled: u64,
        w: &Overwrites,
        tick: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        // An overwrite is one unit, or 4 KiB's worth of smaller ones.
        let group = (w.write_sectors * SECTOR_BYTES / self.cfg.map_unit_bytes() as u64) as u32;
        let c = ftl::page::Conditioning {
            filled,
            overwrites: w.count,
            batch: self.fast_forward_batch(w.write_sectors),
            page_time: Nanos::from_us_f64(self.cfg.timing.program_us),
            group,
        };
        let mut rng = SimRng::derived(self.cfg.seed, 0x7072_6563);
        self.ftl.precondition_functional(&mut self.dev, &c, &mut rng, tick)
    }

    /// Preconditioning's fill, timed, and its overwrites, fast-forwarded or timed.
    fn precondition_timed(
        &mut self,
        mode: PreconditionMode,
        filled: u64,
        w: Overwrites,
        tick: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        let spp = self.cfg.geometry.page_size as u64 / SECTOR_BYTES;
        let chunk = 64u64; // pages per sequential fill write
        let mut now = SimTime::ZERO;
        let mut lpn = 0;
        while lpn < filled {
            let n = chunk.min(filled - lpn);
            let cmd =
                HostCmd { time: now, op: Op::Write, start: Sector(lpn * spp), sectors: n * spp, continued: false };
            now = self.submit(&cmd, now, None, None)?;
            lpn += n;
            tick(lpn)?;
        }
        let mut rng = SimRng::derived(self.cfg.seed, 0x7072_6563);
        if mode == PreconditionMode::Fast {
            self.fast_forward(w, &mut rng, now, filled, tick)?;
        } else {
            let ((write_pages, per_page), write_sectors) = (w.progress_pages, w.write_sectors);
            for i in 0..w.count {
                let slot = rng.below(w.slots);
                let cmd = HostCmd {
                    time: now,
                    op: Op::Write,
                    start: Sector(slot * write_sectors),
                    sectors: write_sectors,
                    continued: false,
                };
                // Issued as the previous one completes, so cost-benefit ages are meaningful.
                now = self.submit(&cmd, now, None, None)?;
                tick(filled + (i + 1) * write_pages / per_page)?;
            }
        }
        Ok(())
    }

    /// How many overwrites the fast-forward writes as one batch: behind a write
    /// buffer, mapping units smaller than the page are packed into pages by
    /// its destagers, a page's worth of the oldest at a time, which for
    /// distinct random overwrites are the last ones written. The
    /// fast-forward bypasses the buffer, so it packs them itself: as many
    /// consecutive overwrites as fill a page go to the FTL together
    /// ([`Ftl::write_batch`], the destagers' call). Otherwise one at a time.
    fn fast_forward_batch(&self, write_sectors: u64) -> usize {
        let spp = self.cfg.geometry.page_size as u64 / SECTOR_BYTES;
        if self.cfg.units_per_page() > 1 && self.ctrl.buffer_capacity() > 0 && write_sectors < spp {
            (spp / write_sectors) as usize
        } else {
            1
        }
    }

    /// Preconditioning's random overwrites, fast-forwarded: straight to the
    /// FTL on a device timing its array units only, each issued as the
    /// previous one completes, from `start`. Buffered writes and pending GC
    /// land first, since the overwrites bypass the buffer and the engine.
    fn fast_forward(
        &mut self,
        w: Overwrites,
        rng: &mut SimRng,
        start: SimTime,
        filled: u64,
        tick: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        let now = start.max(self.settle()?);
        self.dev.set_units_only(true);
        let result = self.overwrite_units_only(&w, rng, now, filled, tick);
        self.dev.set_units_only(false);
        result
    }

    fn overwrite_units_only(
        &mut self,
        w: &Overwrites,
        rng: &mut SimRng,
        mut now: SimTime,
        filled: u64,
        tick: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        let span = |slot: u64| Span { start: Sector(slot * w.write_sectors), sectors: w.write_sectors };
        // Slots drawn LOOKAHEAD ahead and their mappings prefetched, as `run`
        // does: the forward map's cache misses overlap. The draws are the
        // timed path's, in its order.
        let mut ahead: VecDeque<u64> = VecDeque::with_capacity(LOOKAHEAD);
        let (write_pages, per_page) = w.progress_pages;
        let batch = self.fast_forward_batch(w.write_sectors);
        let mut packed: Vec<(Span, Option<&[u8]>)> = Vec::with_capacity(batch);
        let mut drawn = 0;
        for i in 0..w.count {
            while drawn < w.count && ahead.len() < LOOKAHEAD {
                let slot = rng.below(w.slots);
                self.ftl.prefetch(span(slot));
                ahead.push_back(slot);
                drawn += 1;
            }
            if let Some(&slot) = ahead.get(LOOKAHEAD / 2) {
                self.ftl.prefetch_mapped(span(slot));
            }
            let slot = ahead.pop_front().expect("drawn ahead");
            if batch == 1 {
                now = self.ftl.write(&mut self.dev, span(slot), now, now, None)?;
            } else {
                // A slot drawn again while its batch gathers is a buffer
                // hit: the buffered unit takes the new data, one destage.
                if !packed.iter().any(|(s, _)| *s == span(slot)) {
                    packed.push((span(slot), None));
                }
                if packed.len() == batch || i + 1 == w.count {
                    now = self.ftl.write_batch(&mut self.dev, &packed, now, now)?;
                    packed.clear();
                }
            }
            tick(filled + (i + 1) * write_pages / per_page)?;
        }
        Ok(())
    }

    /// As [`precondition_observed`](Simulation::precondition_observed), but
    /// through a snapshot in `dir` (see [`crate::snapshot`]): loaded when
    /// one made for this drive is there, else made and saved. A refused
    /// snapshot, and a run that cannot use one, are told in one line on
    /// stderr; the returned value says what happened.
    pub fn precondition_cached(
        &mut self,
        p: Precondition,
        dir: &Path,
        on_progress: &mut dyn FnMut(Progress) -> bool,
    ) -> Result<SnapshotUse> {
        if let Some(why) = self.snapshot_unavailable() {
            eprintln!("ftlsim: snapshots are not available for this run ({why}); preconditioning normally");
            self.precondition_observed(p, on_progress)?;
            return Ok(SnapshotUse::Unavailable(why));
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let key = snapshot::key(&self.cfg, p);
        let path = snapshot::path(dir, &self.cfg, &key);
        let _lock = snapshot::KeyLock::acquire(&path)?;
        let refused = match self.load_state(&path, &key, Some(p)) {
            Ok(true) => return Ok(SnapshotUse::Loaded),
            Ok(false) => None,
            Err(why) => Some(why),
        };
        if let Some(why) = &refused {
            eprintln!("ftlsim: snapshot {}: refused ({why}); preconditioning again", path.display());
        }
        self.precondition_observed(p, on_progress)?;
        if let Err(e) = self.save_state(&path, &key) {
            eprintln!("ftlsim: snapshot not saved: {e}");
            return Ok(SnapshotUse::NotSaved(e.to_string()));
        }
        Ok(refused.map_or(SnapshotUse::Saved, |why| SnapshotUse::Recomputed(format!("{}: {why}", path.display()))))
    }

    /// Why this drive's preconditioning cannot be saved, known before it
    /// runs; `None` when it can (as far as the drive tells; the FTL
    /// answers for itself).
    fn snapshot_unavailable(&mut self) -> Option<String> {
        // A snapshot file holds no data, and preconditioned data are not kept elsewhere.
        if self.cfg.nand.store_payloads { Some("the drive stores payloads".into()) } else { self.state_unsaveable() }
    }

    /// Why [`Simulation::save_state`] cannot save this drive; `None` when
    /// it can, at any point between commands.
    pub fn state_unsaveable(&mut self) -> Option<String> {
        if !self.cuts.is_empty() {
            Some("the run has power cuts".into())
        } else if self.cfg.nand.store_payloads && self.dev.array.units_per_page() > 1 {
            // Restoring data puts each logical page's bytes where the FTL maps it; units would need each unit's.
            Some("mapping units are smaller than the page".into())
        } else if self.ftl.saved_state().is_none() {
            Some(format!("the '{}' FTL cannot be saved yet", self.ftl.name()))
        } else {
            None
        }
    }

    /// Saves the whole drive's state as the snapshot of `key` at `path`
    /// (flash with its OOB, wear and timelines, the controller with its
    /// buffer, the TRIM model; then the FTL), at any point between
    /// commands, streamed to the file: loaded by [`Simulation::load_state`]
    /// into a simulation of the same config, it goes on exactly as this one
    /// would. The pages' data (payload mode) are not in it; the caller
    /// keeps them.
    pub fn save_state(&mut self, path: &Path, key: &str) -> Result<()> {
        self.dev.book_deferred();
        let name = self.ftl.name();
        let Some(ftl) = self.ftl.saved_state() else {
            return Err(Error::invariant("snapshot", format!("the '{name}' FTL has no saved state")));
        };
        let mut w = snapshot::Writer::create(path, key)?;
        w.section(&(&self.dev, &self.ctrl, &self.trim))?;
        ftl.save(&mut w)?;
        w.finish()
    }

    /// Replaces the drive's state with the snapshot of `key` at `path`,
    /// which [`Simulation::save_state`] made of a drive of the same config,
    /// decoded in place over this drive's own tables (a loaded drive takes
    /// its memory once). `Ok(false)`: there is none, nothing changed.
    /// `Err(why)`: stale or damaged, and the drive is as newly built (a
    /// damaged file may have half-overwritten it). In payload mode every
    /// page's data are then zeros: give the pages whose data are not back
    /// with [`Simulation::restore_page`]. `preconditioned` is what the
    /// saved drive was preconditioned with.
    pub fn load_state(
        &mut self,
        path: &Path,
        key: &str,
        preconditioned: Option<Precondition>,
    ) -> std::result::Result<bool, String> {
        let Some(mut r) = snapshot::Reader::open(path, key)? else {
            return Ok(false);
        };
        let loaded = self.load_from(&mut r).and_then(|()| r.finish());
        if let Err(why) = loaded {
            let Drive { dev, ftl, ctrl, trim } =
                Drive::build(&self.cfg).map_err(|e| format!("{why}; rebuilding the drive failed: {e}"))?;
            (self.dev, self.ftl, self.ctrl, self.trim) = (dev, ftl, ctrl, trim);
            return Err(why);
        }
        if self.cfg.nand.store_payloads {
            self.dev.array.reset_payloads();
        }
        self.precondition = preconditioned;
        Ok(true)
    }

    /// The snapshot's two sections, in the order [`Simulation::save_state`]
    /// wrote them, over the drive's own values.
    fn load_from(&mut self, r: &mut snapshot::Reader) -> std::result::Result<(), String> {
        r.section(&mut [&mut self.dev, &mut self.ctrl, &mut self.trim])?;
        self.ftl.saved_state().ok_or("the FTL has no saved state")?.load(r)
    }

    /// Puts back logical page `lpn`'s data after [`Simulation::load_state`]
    /// (a whole page, as [`Simulation::page_contents`] gave it when the
    /// state was saved) where the FTL maps it. A page the FTL maps nowhere
    /// is left alone: its data are in the write buffer (saved with the
    /// state), or the caller's are from a later write it will replay.
    pub fn restore_page(&mut self, lpn: u32, bytes: &[u8]) -> Result<()> {
        match self.ftl.physical(crate::units::Lpn(lpn)) {
            Some(ppn) => self.dev.array.restore_page_data(ppn, bytes),
            None => Ok(()),
        }
    }

    /// A FLUSH, unmeasured: cached map updates (DFTL, HAT) reach their
    /// backing store, so every FTL starts the measured run from a durable
    /// state; time and counters restart from zero.
    pub fn flush_unmeasured(&mut self) -> Result<()> {
        self.ctrl.flush(self.ftl.as_mut(), &mut self.dev, SimTime::ZERO)?;
        self.restart_measurement()
    }

    /// Time and every counter restart from zero; data, mappings and wear stay
    /// (between the points of a benchmark on one drive). Pending background
    /// work (destaging, GC jobs) is finished first, unmeasured.
    pub fn restart_measurement(&mut self) -> Result<()> {
        self.settle()?;
        self.ctrl.restart_clock();
        self.ctrl.reset_stats();
        self.dev.reset_time_and_counters();
        self.ftl.reset_stats();
        self.trim.restart();
        Ok(())
    }

    /// Replays a command source to its end and reports.
    ///
    /// `on_progress` is called every `opts.progress_every` commands; returning
    /// `false` stops the run with [`Error::Interrupted`].
    pub fn run(
        &mut self,
        src: &mut dyn CmdSource,
        opts: &RunOptions,
        on_progress: &mut dyn FnMut(Progress, u64) -> bool,
    ) -> Result<Report> {
        let wall = Instant::now();
        // Open loop replays the source's times: in time order (closed loop
        // issues commands in the source's order whatever their times).
        let mut ordered = None;
        let src: &mut dyn CmdSource = match opts.mode {
            HostMode::Open => ordered.insert(TimeOrdered::new(src)),
            HostMode::Closed => src,
        };
        let mut metrics = Metrics::default();
        let mut arrivals = Arrivals::new(opts.mode, opts.queue_depth, opts.time_scale);
        let mut adjusted = 0;
        let window_ns = (self.cfg.report.window_ms * 1e6).round() as u64;
        let mut windows = WindowAccumulator::new(window_ns);
        let mut index = 0u64;
        // Told when the count reaches the next multiple (a TRIM's ranges
        // count one each): a comparison a command, not a division.
        let progress_every = opts.progress_every.max(1);
        let mut next_progress = progress_every;
        let mut arrivals_span = ArrivalSpan::default();
        // Commands are read LOOKAHEAD ahead and their mappings prefetched, so
        // the forward map's cache miss has landed by the time each is served
        // (one command ahead was too close). Results are unchanged.
        let mut ahead: VecDeque<HostCmd> = VecDeque::with_capacity(LOOKAHEAD);
        // For errors only: taken once, not at every command.
        let source_name = src.name().to_owned();
        // Power cuts are made, and what they must not lose tracked, only
        // when configured (`durability` is set exactly then).
        let durable = self.durability.is_some();
        loop {
            while ahead.len() < LOOKAHEAD {
                let Some(n) = src.next_cmd()? else { break };
                let span = Span { start: n.start, sectors: n.sectors };
                self.ftl.prefetch(span);
                self.ctrl.prefetch(span);
                ahead.push_back(n);
            }
            if let Some(n) = ahead.get(LOOKAHEAD / 2).filter(|n| n.op == Op::Write) {
                self.ctrl.prefetch_write(self.ftl.as_ref(), Span { start: n.start, sectors: n.sectors });
            }
            let Some(cmd) = ahead.pop_front() else { break };
            let (cmd, moved) = fit_range(cmd, self.logical_sectors, opts.range, &source_name, index)?;
            adjusted += moved as u64;
            let mut issue = arrivals.issue(&cmd);
            if durable {
                issue = self.cut_if_due(issue, index)?;
            }
            arrivals_span.add(issue);
            if issue.0 > MAX_ARRIVAL_NS {
                // Leaves the 64-bit ns clock room for service times: a later
                // addition would overflow (a panic, or a wrapped clock).
                return Err(Error::config(
                    "input",
                    format!(
                        "{}: request {index} arrives at {:.3e} s (after host.time_scale), beyond the {:.3e} s the \
                         simulated clock can hold; lower host.time_scale or replay closed-loop (host.mode = \"closed\")",
                        src.name(),
                        issue.0 as f64 * 1e-9,
                        MAX_ARRIVAL_NS as f64 * 1e-9
                    ),
                ));
            }
            if window_ns > 0 {
                windows.roll(issue, &self.dev.counters);
            }
            let (done, pages, bytes) = if cmd.op == Op::Trim && cmd.continued {
                let mut ranges = std::mem::take(&mut self.trim_ranges);
                let gathered = self.gather_ranges(cmd, &mut ahead, src, opts, &mut index, &mut ranges);
                let served = gathered.and_then(|()| self.submit_trim(&ranges, issue));
                let done = served.as_ref().copied().unwrap_or(issue);
                if durable {
                    for r in &ranges {
                        self.track_durability(&HostCmd { start: r.start, sectors: r.sectors, ..cmd }, done);
                    }
                }
                let pages = ranges.iter().map(|r| self.span_pages(r.start, r.sectors)).sum();
                let bytes = ranges.iter().map(|r| r.sectors * SECTOR_BYTES).sum();
                self.trim_ranges = ranges;
                (served?, pages, bytes)
            } else {
                let done = self.serve(&cmd, issue, None, None)?;
                if durable {
                    self.track_durability(&cmd, done);
                }
                (done, self.pages_touched(&cmd), cmd.sectors * SECTOR_BYTES)
            };
            arrivals.complete(done);
            if opts.mode == HostMode::Open {
                arrivals_span.complete(done);
            }
            let latency = done - issue;
            metrics.record(cmd.op, latency, self.last_queueing, pages, bytes, done);
            if let Some(log) = self.latencies.as_mut() {
                log.push(cmd.op, latency);
            }
            if window_ns > 0 {
                windows.record(&cmd, latency, pages);
            }
            index += 1;
            if index >= next_progress {
                next_progress = (index / progress_every + 1) * progress_every;
                if !on_progress(src.progress(), index) {
                    return Err(Error::Interrupted);
                }
            }
        }
        on_progress(src.progress(), index);
        self.dev.book_deferred();
        windows.finish(&self.dev.counters);
        let mut input = opts.input.clone();
        input.skipped_lines = src.skipped_lines();
        input.clamped_timestamps = arrivals.clamped + src.clamped_timestamps();
        input.zero_length_requests = src.zero_length();
        input.reordered_arrivals = ordered.map_or(0, |o| o.reordered);
        input.out_of_range_adjusted = adjusted;
        input.host_mode = match opts.mode {
            HostMode::Open => "open".into(),
            HostMode::Closed => "closed".into(),
        };
        input.queue_depth = (opts.mode == HostMode::Closed).then_some(opts.queue_depth);
        input.precondition = self.precondition.map(|p| p.to_string());
        let mut r = self.report(&metrics, wall.elapsed().as_secs_f64());
        r.input = input;
        r.timeseries = windows.rows;
        r.warnings.extend(clock_warning(opts.mode, &arrivals_span, r.input.clamped_timestamps));
        r.warnings.extend(saturation_warning(opts.mode, &arrivals_span, metrics.last_completion));
        Ok(r)
    }

    /// Makes the configured power cuts due before a command issued at
    /// `issue` after `index` commands; returns when the drive can take it.
    fn cut_if_due(&mut self, issue: SimTime, index: u64) -> Result<SimTime> {
        let mut issue = issue;
        while let Some(i) = self.cuts.iter().position(|c| match *c {
            PowerCutAt::Time(t) => issue >= t,
            PowerCutAt::AfterCommands(n) => index >= n,
        }) {
            let at = match self.cuts.remove(i) {
                PowerCutAt::Time(t) => t,
                PowerCutAt::AfterCommands(_) => issue,
            };
            self.flushes_done_by(at, true);
            let mut r = self.power_cut(at)?;
            r.after_commands = index;
            r.pages_checked = self.check_durability()?;
            issue = issue.max(r.recovered_at);
            self.recoveries.push(r);
        }
        // Every cut still to come falls at `issue` or later.
        self.flushes_done_by(issue, false);
        Ok(issue)
    }

    /// FLUSHes completed by `t` make their pages durable; with `cut`, the
    /// others never complete (power fails at `t`).
    fn flushes_done_by(&mut self, t: SimTime, cut: bool) {
        let Some(d) = self.durability.as_mut() else { return };
        for (done, issued_before, pages) in &d.flushing {
            if *done <= t {
                for &(lpn, seq) in pages {
                    d.flushed_seq[lpn as usize] = seq;
                    if d.trimmed.get(&lpn).is_some_and(|&trim| trim <= *issued_before) {
                        d.trimmed.remove(&lpn);
                    }
                }
            }
        }
        d.flushing.retain(|(done, ..)| !cut && *done > t);
    }

    /// Notes what a command served until `done` changes for durability.
    fn track_durability(&mut self, cmd: &HostCmd, done: SimTime) {
        let Some(d) = self.durability.as_mut() else { return };
        let spp = self.cfg.geometry.page_size as u64 / SECTOR_BYTES;
        match cmd.op {
            Op::Write | Op::Trim if cmd.sectors > 0 => {
                let (first, last) = (cmd.start.0 / spp, (cmd.end().0 - 1) / spp);
                d.pending.extend(first as u32..=last as u32);
                if cmd.op == Op::Trim {
                    for lpn in cmd.start.0.div_ceil(spp)..cmd.end().0 / spp {
                        d.trimmed.insert(lpn as u32, d.flushes_issued);
                    }
                }
            }
            Op::Flush => {
                let pages = d
                    .pending
                    .drain(..)
                    .map(|lpn| {
                        let p = self.ftl.physical(crate::units::Lpn(lpn));
                        (lpn, p.and_then(|p| self.dev.array.oob_seq(p)).unwrap_or(0))
                    })
                    .collect();
                d.flushing.push((done, d.flushes_issued, pages));
                d.flushes_issued += 1;
            }
            _ => {}
        }
    }

    /// After a cut: every page flushed with data still maps to that data or
    /// a newer copy (a program sequence at least as late). Returns the
    /// pages checked.
    fn check_durability(&mut self) -> Result<u64> {
        let Some(d) = self.durability.as_mut() else { return Ok(0) };
        d.pending.clear();
        let mut checked = 0;
        for (lpn, &seq) in d.flushed_seq.iter().enumerate().filter(|(_, s)| **s > 0) {
            let p = self.ftl.physical(crate::units::Lpn(lpn as u32));
            let got = p.and_then(|p| self.dev.array.oob_seq(p));
            if p.is_none() && d.trimmed.contains_key(&(lpn as u32)) {
                continue; // a TRIM since the FLUSH, made durable
            }
            if got.is_none_or(|g| g < seq) {
                return Err(Error::invariant(
                    "power cut",
                    format!("logical page {lpn}, flushed (program {seq}), recovered as {got:?} at {p:?}"),
                ));
            }
            checked += 1;
        }
        // What recovery found is the durable state now.
        d.trimmed.clear();
        for (lpn, seq) in d.flushed_seq.iter_mut().enumerate() {
            let p = mapped_page(self.ftl.as_ref(), &self.dev, lpn as u32)?;
            *seq = p.and_then(|p| self.dev.array.oob_seq(p)).unwrap_or(0);
        }
        Ok(checked)
    }

    /// After a power cut: every logical page the recovered tables map
    /// reads, and holds data written to that logical page (not padding or
    /// another page's data). The CLI's cuts check it; so can a test's.
    pub fn check_mapped_pages(&self) -> Result<()> {
        for lpn in 0..self.cfg.logical_pages() {
            mapped_page(self.ftl.as_ref(), &self.dev, lpn as u32)?;
        }
        Ok(())
    }

    /// Collects the ranges of the multi-range TRIM that `first` opens, up to
    /// `host.trim_max_ranges` (the rest become the next command, as a host
    /// driver splits an over-long range list).
    fn gather_ranges(
        &mut self,
        first: HostCmd,
        ahead: &mut VecDeque<HostCmd>,
        src: &mut dyn CmdSource,
        opts: &RunOptions,
        index: &mut u64,
        ranges: &mut Vec<Span>,
    ) -> Result<()> {
        ranges.clear();
        ranges.push(Span { start: first.start, sectors: first.sectors });
        let mut open = first.continued;
        while open && ranges.len() < self.trim.max_ranges() {
            if ahead.is_empty() {
                if let Some(n) = src.next_cmd()? {
                    ahead.push_back(n);
                }
            }
            let Some(&next) = ahead.front() else { break };
            if next.op != Op::Trim {
                return Err(Error::invariant(
                    "host",
                    format!("{}: record {} continues a TRIM but is a {:?}", src.name(), *index + 1, next.op),
                ));
            }
            ahead.pop_front();
            *index += 1;
            let (next, _) = fit_range(next, self.logical_sectors, opts.range, src.name(), *index)?;
            if next.sectors > 0 {
                ranges.push(Span { start: next.start, sectors: next.sectors });
            }
            open = next.continued;
        }
        Ok(())
    }

    /// Logical pages a command touches, partial pages included (the unit
    /// of the report's `host_pages_*` counters).
    pub fn pages_touched(&self, cmd: &HostCmd) -> u64 {
        self.span_pages(cmd.start, cmd.sectors)
    }

    fn span_pages(&self, start: Sector, sectors: u64) -> u64 {
        let spp = self.cfg.geometry.page_size as u64 / SECTOR_BYTES;
        let page = |s: u64| ftl::split_sector(s, spp).0;
        if sectors == 0 { 0 } else { page(start.0 + sectors - 1) - page(start.0) + 1 }
    }

    /// The report of a drive driven command by command through [`submit`]
    /// (the NBD server), from metrics the caller recorded as [`run`] does.
    /// `input` is left at its default for the caller to fill.
    ///
    /// [`submit`]: Simulation::submit
    /// [`run`]: Simulation::run
    pub fn report_from(&self, metrics: &Metrics, wall_time_s: f64) -> Report {
        self.report(metrics, wall_time_s)
    }

    fn report(&self, m: &Metrics, wall_time_s: f64) -> Report {
        let geo = self.dev.geometry();
        let sim_time_s = m.last_completion.as_secs_f64();
        let per_s = |x: f64| if sim_time_s > 0.0 { x / sim_time_s } else { 0.0 };
        let stats = self.ftl.stats();
        let (queueing_us, service_us) = m.split();
        let mut r = Report {
            ftl: self.ftl.name().into(),
            config: self.cfg.name.clone(),
            seed: self.cfg.seed,
            version: env!("CARGO_PKG_VERSION").into(),
            requests: m.requests,
            reads: m.count(Op::Read),
            writes: m.count(Op::Write),
            trims: m.count(Op::Trim),
            trim_ranges: self.trim.stats.ranges,
            trim_bytes: m.bytes[2],
            trim: self.trim.report(),
            flushes: m.count(Op::Flush),
            iops: per_s(m.requests as f64),
            read_mb_s: per_s(m.bytes[0] as f64) / 1e6,
            write_mb_s: per_s(m.bytes[1] as f64) / 1e6,
            latency_us: m.latency(),
            queueing_us,
            service_us,
            host_pages_read: m.host_pages[0],
            host_pages_written: m.host_pages[1],
            host_pages_trimmed: m.host_pages[2],
            gc_invocations: stats.gc_invocations,
            gc_pages_copied: stats.gc_pages_copied,
            gc_jobs_waited_out: stats.gc_jobs_waited_out,
            placed_reads: stats.placed_reads,
            trimmed_pages: stats.trimmed_pages,
            rmw_reads: stats.rmw_reads,
            units_padded: stats.units_padded,
            erase_count: EraseStats::from_counts(self.dev.array.erase_counts()),
            n_vb: self.ftl.blocks_with_valid_data(),
            mapping_ram_bytes: self.ftl.mapping_ram_bytes(),
            mapping_hit_ratio: (stats.map_cached && stats.map_lookups > 0)
                .then(|| stats.map_hits as f64 / stats.map_lookups as f64),
            pcm_reads: self.dev.pcm.reads,
            pcm_writes: self.dev.pcm.writes,
            logical_bytes: self.logical_sectors * SECTOR_BYTES,
            physical_bytes: geo.pages as u64 * geo.page_size as u64,
            sim_time_s,
            wall_time_s,
            peak_rss_bytes: report::peak_rss_bytes(),
            resolved_config: serde_json::to_value(self.cfg.resolved()).expect("a config serializes"),
            ..Report::default()
        };
        report::fill_flash(&mut r, &self.dev.counters);
        report::fill_merges(&mut r, &stats);
        report::fill_overhead(&mut r, &self.dev.counters, self.dev.timing(), &stats);
        let counts = report::energy::EnergyCounts {
            flash_reads: r.flash_pages_read,
            flash_programs: r.flash_pages_programmed,
            flash_erases: r.blocks_erased,
            ram_accesses: stats.ram_accesses,
            ram_bytes: r.mapping_ram_bytes,
            pcm_reads: r.pcm_reads,
            pcm_writes: r.pcm_writes,
            sim_time_s,
        };
        r.energy_j = report::energy::energy(&self.cfg, &counts);
        // Over the host data that has left the write buffer: a run starts
        // with the buffer clean and may end with it full, and data still
        // there has cost no flash program yet (as a share of the bytes
        // written, so host pages count by the share of their bytes out).
        let (written, dirty) = (m.bytes[1], self.ctrl.dirty_sectors() * crate::units::SECTOR_BYTES);
        let out = written.saturating_sub(dirty);
        let pages_out = if written > 0 { r.host_pages_written as f64 * out as f64 / written as f64 } else { 0.0 };
        r.write_amplification = (pages_out > 0.0).then(|| r.flash_pages_programmed as f64 / pages_out);
        r.n_eb = r.blocks_erased as f64 / geo.blocks as f64;
        let denom = r.n_pb as f64 * r.n_eb;
        r.e_ftl = (denom > 0.0).then(|| r.n_vb as f64 / denom);
        r.write_amplification_bytes =
            (out > 0).then(|| r.flash_pages_programmed as f64 * geo.page_size as f64 / out as f64);
        let busy = &self.dev.busy;
        // Over the time the drive worked: buffered writes' flash work may
        // outlast the host's last completion.
        let worked_s = sim_time_s.max(self.dev.last_unit_end().as_secs_f64());
        let share = |ns: u64, n: usize| if worked_s > 0.0 { ns as f64 * 1e-9 / (n as f64 * worked_s) } else { 0.0 };
        let units: u64 = busy.units.iter().sum();
        // Each unit's calendar keeps its own total, which by cause sums to
        // the same: the busiest and idlest units come from those.
        let (busiest, idlest, total) = busiest_idlest_total(self.dev.unit_busy_ns());
        debug_assert_eq!(total, units, "the units' calendars and their busy time by cause disagree");
        let (busiest_channel, idlest_channel, _) = busiest_idlest_total(self.dev.channel_busy_ns());
        r.utilization = report::Utilization {
            channels: share(self.dev.bus_busy_ns(), geo.channels as usize),
            units: share(units, self.dev.units()),
            units_gc_share: if units > 0 {
                busy.units[crate::engine::Cause::Gc as usize] as f64 / units as f64
            } else {
                0.0
            },
            units_busiest: share(busiest, 1),
            units_idlest: share(idlest, 1),
            channels_busiest: share(busiest_channel, 1),
            channels_idlest: share(idlest_channel, 1),
            host_link: share(busy.host_link, 1),
            pcm: share(busy.pcm, 1),
            controller: share(self.ctrl.cores.busy().0, self.ctrl.cores.count()),
        };
        let work = report::bound::Work {
            counters: &self.dev.counters,
            multi_plane: &self.dev.multi_plane,
            timing: self.dev.timing(),
            units: self.dev.units(),
            channels: geo.channels as usize,
            host_link_ns: busy.host_link,
            pcm_ns: busy.pcm,
            controller_ns: self.ctrl.cores.busy().0,
            cores: self.ctrl.cores.count(),
        };
        r.bound = work.bound(r.requests, sim_time_s);
        // The counted work fits between time zero and the end of the last
        // work booked, or the engine booked overlapping work on a resource.
        #[cfg(debug_assertions)]
        {
            let last_end = self.dev.last_end().max(self.ctrl.cores.last_end()).as_secs_f64().max(sim_time_s);
            let per_resource = work.per_resource_ns();
            assert!(
                per_resource.iter().all(|&(_, ns)| ns <= last_end * 1e9 * (1.0 + 1e-9) + 1.0),
                "work {per_resource:?} exceeds the {last_end} s to the end of the last work booked"
            );
        }
        r.multi_plane = self.cfg.timing.multi_plane.then(|| self.dev.multi_plane.clone());
        r.erase_suspends = (self.cfg.timing.erase_suspend_us > 0.0).then_some(self.dev.erase_suspends);
        r.program_suspends = (self.cfg.timing.program_suspend_us > 0.0).then_some(self.dev.program_suspends);
        r.coftl = stats.coftl.clone();
        r.power_cuts = self.recoveries.clone();
        r.write_buffer = self.ctrl.buffer_stats().map(|b| report::BufferReport {
            capacity_pages: self.ctrl.buffer_capacity(),
            write_hits: b.write_hits,
            write_misses: b.write_misses,
            read_hits: b.read_hits,
            read_misses: b.read_misses,
            destaged_pages: b.destaged_pages,
            evictions: b.evictions,
            policy: format!("{:?}", self.cfg.cache.policy).to_lowercase(),
            clean_evictions: b.clean_evictions,
            dirty_evictions: b.dirty_evictions,
            stalls: b.stalls,
            stall_ms: b.stall_ns as f64 / 1e6,
            dirty_at_end: self.ctrl.dirty_pages(),
        });
        r
    }
}

/// Preconditioning's random overwrites: `count` writes of `write_sectors`
/// to slots drawn below `slots`; progress counts `write_pages / per_page`
/// pages a write.
struct Overwrites {
    slots: u64,
    count: u64,
    write_sectors: u64,
    progress_pages: (u64, u64),
}

/// The most, the least and the sum of resources' busy times.
fn busiest_idlest_total(busy_ns: impl Iterator<Item = u64>) -> (u64, u64, u64) {
    busy_ns.fold((0, u64::MAX, 0), |(most, least, sum), ns| (most.max(ns), least.min(ns), sum + ns))
}

/// Preconditioning commands between progress reports.
pub const PRECONDITION_PROGRESS: u64 = 4096;

/// The first and last arrival of a run, how many arrived, and the longest
/// wait between two.
#[derive(Clone, Default)]
struct ArrivalSpan {
    first: Option<SimTime>,
    last: SimTime,
    count: u64,
    /// The longest time between two consecutive arrivals, and the index
    /// of the request that ended it.
    longest_gap: (Nanos, u64),
    /// When requests completed (open loop only; 3 significant digits, so
    /// memory stays bounded however long the run): how many were still in
    /// the drive at the last arrival.
    completions: report::Buckets,
}

impl ArrivalSpan {
    fn add(&mut self, issue: SimTime) {
        if self.first.is_some() {
            let gap = issue.0.saturating_sub(self.last.0);
            if gap > self.longest_gap.0.0 {
                self.longest_gap = (Nanos(gap), self.count);
            }
        }
        self.first.get_or_insert(issue);
        self.last = self.last.max(issue);
        self.count += 1;
    }

    fn complete(&mut self, done: SimTime) {
        self.completions.record(done.0);
    }

    /// Requests that completed after the last arrival (to the histogram's
    /// precision, 0.1% of its time).
    fn in_drive_at_last_arrival(&self) -> u64 {
        let h = self.completions.histogram();
        h.len() - h.count_between(0, self.last.0)
    }
}

/// Arrivals below which a backlog may say more about one burst (its last
/// request's own latency) than about the run, unless many requests were
/// still queued at the last arrival ([`SATURATION_MIN_BACKLOGGED`]).
const SATURATION_MIN_REQUESTS: u64 = 1000;
/// Requests in the drive at the last arrival that show a queue that grew,
/// however short the run.
const SATURATION_MIN_BACKLOGGED: u64 = 100;
/// Of the requests the drive's mean rate serves in the backlog, the share
/// that must have been in the drive at the last arrival. Measured on the
/// real traces: a queue that grew on the whole drive holds about all of
/// them (0.99–1.0), one on its busiest planes alone (a block-mapped FTL's
/// merges) 0.15–0.5; one slow operation at the end (`fast`'s partial merge
/// of a TLC block) 0.006.
const SATURATION_QUEUED_SHARE: f64 = 0.05;
/// Backlog at the end, as a fraction of the arrival span, that means saturation.
const SATURATION_BACKLOG: f64 = 0.1;

/// How a saturation warning begins (what readers of `Report::warnings` match).
pub const SATURATED: &str = "saturated:";

/// How a warning about the trace's clock begins.
pub const CLOCK: &str = "trace clock:";

/// Of the arrival span, the share one gap may take before the span is
/// called that gap's rather than the workload's.
const CLOCK_GAP_SHARE: f64 = 0.9;

/// Whether one gap of `gap_ns` between arrivals is most of their span of
/// `span_ns`, over enough requests to say so (`trace stats` asks too).
pub(crate) fn one_gap_is_the_span(gap_ns: u64, span_ns: u64, requests: u64) -> bool {
    requests >= SATURATION_MIN_REQUESTS && gap_ns as f64 > CLOCK_GAP_SHARE * span_ns as f64
}

/// A warning when an open-loop replay's times cannot be taken at face
/// value: arrivals earlier than one before them that the time-order window
/// ([`TimeOrdered`]) could not move (`clamped`: issued at the latest
/// arrival's time so far, so the drive's work keeps its order), or one gap
/// between arrivals that is most of the replay (over at least
/// [`SATURATION_MIN_REQUESTS`] requests). A trace whose clock jumped ahead
/// and came back (a glitch) shows both: IOPS, bandwidth and the simulated
/// time then measure the jump, and the requests after it arrive at once.
fn clock_warning(mode: HostMode, span: &ArrivalSpan, clamped: u64) -> Option<String> {
    let first = span.first?;
    if mode != HostMode::Open {
        return None;
    }
    let span_ns = (span.last - first).0;
    let (gap, at) = span.longest_gap;
    let dominant = one_gap_is_the_span(gap.0, span_ns, span.count);
    let mut why = Vec::new();
    if clamped > 0 {
        why.push(format!(
            "{clamped} of {} arrivals were earlier than one before them and were issued at the latest arrival's time so far",
            span.count
        ));
    }
    if dominant {
        why.push(format!(
            "one gap between arrivals, {:.3} s before request {} (counting from 1), is {:.1}% of their span of {:.3} s, \
             so IOPS, bandwidth and the simulated time measure that gap",
            gap.0 as f64 * 1e-9,
            at + 1,
            100.0 * gap.0 as f64 / span_ns as f64,
            span_ns as f64 * 1e-9
        ));
    }
    if why.is_empty() {
        return None;
    }
    let fix = if dominant {
        " (a clock glitch? fix the trace's times, cut it before the gap, or replay it with --mode closed)"
    } else {
        " (replay it with --mode closed if its times do not matter)"
    };
    Some(format!("{CLOCK} {}{fix}", why.join("; ")))
}

/// A warning when an open-loop run saturated the drive.
///
/// Open-loop arrivals do not wait for completions, so a drive slower than
/// the arrival rate builds a queue that grows for the whole run, and every
/// latency figure then measures the run's length rather than the drive. A
/// drive that keeps up finishes its work about one request's latency after
/// the last arrival; a drive serving μ requests/s against λ arriving
/// finishes `span × (λ/μ − 1)` after it. So the backlog at the end (last
/// completion − last arrival) over the arrival span estimates the overload;
/// above [`SATURATION_BACKLOG`] (arrivals ≥ 10% faster than service) the
/// run is called saturated if the backlog is a queue: the requests in the
/// drive at the last arrival are at least [`SATURATION_QUEUED_SHARE`] of
/// what its mean rate serves in the backlog (one slow operation at the
/// end, a merge, leaves a long backlog but few requests waiting; a queue
/// on a few busy planes, many), over at least [`SATURATION_MIN_REQUESTS`]
/// requests or with at least [`SATURATION_MIN_BACKLOGGED`] in the drive.
fn saturation_warning(mode: HostMode, span: &ArrivalSpan, last_completion: SimTime) -> Option<String> {
    let first = span.first?;
    let arrivals_s = (span.last - first).0 as f64 * 1e-9;
    let backlog_s = last_completion.0.saturating_sub(span.last.0) as f64 * 1e-9;
    if mode != HostMode::Open || arrivals_s <= 0.0 {
        return None;
    }
    let overload = backlog_s / arrivals_s;
    let queued = span.in_drive_at_last_arrival();
    let served_per_s = span.count as f64 / (last_completion - first).0 as f64 * 1e9;
    let a_queue = queued as f64 >= SATURATION_QUEUED_SHARE * served_per_s * backlog_s;
    let enough = span.count >= SATURATION_MIN_REQUESTS || queued >= SATURATION_MIN_BACKLOGGED;
    (overload > SATURATION_BACKLOG && a_queue && enough).then(|| {
        format!(
            "{SATURATED} the drive finished {backlog_s:.3} s after the last arrival (arrivals spanned {arrivals_s:.3} s), \
             so requests arrived about {:.2}x as fast as it served them and the queue grew through the run \
             ({queued} requests in the drive at the last arrival); \
             latencies depend on the run's length (lower the rate, raise host.time_scale, or use --mode closed)",
            1.0 + overload
        )
    })
}

/// Accumulates time-series windows by arrival time.
struct WindowAccumulator {
    width: u64,
    current: Option<(u64, Window, FlashCounters, f64)>,
    rows: Vec<Window>,
}

impl WindowAccumulator {
    fn new(width: u64) -> Self {
        WindowAccumulator { width, current: None, rows: Vec::new() }
    }

    /// Before a command is served: closes the window it does not belong to
    /// and opens its own, snapshotting the flash counters.
    fn roll(&mut self, issue: SimTime, flash: &FlashCounters) {
        let idx = issue.0 / self.width;
        if self.current.as_ref().is_some_and(|(i, ..)| *i != idx) {
            self.finish(flash);
        }
        if self.current.is_none() {
            let start_s = (idx * self.width) as f64 * 1e-9;
            self.current = Some((idx, Window { start_s, ..Window::default() }, flash.clone(), 0.0));
        }
    }

    fn record(&mut self, cmd: &HostCmd, latency: Nanos, pages: u64) {
        let Some((_, w, _, sum_us)) = self.current.as_mut() else { return };
        w.requests += 1;
        match cmd.op {
            Op::Read => w.reads += 1,
            Op::Write => {
                w.writes += 1;
                w.host_pages_written += pages;
            }
            Op::Trim => w.trims += 1,
            Op::Flush => {}
        }
        let us = latency.as_us_f64();
        *sum_us += us;
        w.max_latency_us = w.max_latency_us.max(us);
    }

    fn finish(&mut self, flash: &FlashCounters) {
        if let Some((_, mut w, start, sum_us)) = self.current.take() {
            w.mean_latency_us = sum_us / w.requests.max(1) as f64;
            w.flash_pages_programmed = FlashCounters::timed(&flash.programs) - FlashCounters::timed(&start.programs);
            w.flash_pages_read = FlashCounters::timed(&flash.reads) - FlashCounters::timed(&start.reads);
            w.blocks_erased = FlashCounters::timed(&flash.erases) - FlashCounters::timed(&start.erases);
            self.rows.push(w);
        }
    }
}

/// The page `ftl` maps logical page `lpn` to, if any, which must read and
/// hold that logical page's data.
fn mapped_page(ftl: &dyn Ftl, dev: &Device, lpn: u32) -> Result<Option<crate::units::Ppn>> {
    let Some(p) = ftl.physical(crate::units::Lpn(lpn)) else { return Ok(None) };
    match dev.array.read(p) {
        Ok(l) if l.0 == lpn => Ok(Some(p)),
        got => Err(Error::invariant("power cut", format!("logical page {lpn} recovered at {p}, which reads {got:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every FTL's snapshot loads over the built drive's big tables (the
    /// maps, the OOB array), never into new ones beside them: a wrapper
    /// without in-place decoding on the way to a table would double a
    /// loaded drive's memory.
    #[test]
    fn a_loaded_drive_decodes_its_tables_in_place() {
        use crate::mem::DECODED_WHOLE;
        let dir = tempfile::tempdir().unwrap();
        for &ftl in crate::ftl::FTL_NAMES {
            let set = ["geometry.blocks_per_plane=64".into(), "overprovisioning=0.5".into(), format!("ftl.name={ftl}")];
            let cfg = Config::load("k9lag08u0m-4ch", &set).unwrap_or_else(|e| panic!("{ftl}: {e}"));
            let mut sim = Simulation::new(cfg.clone()).unwrap();
            sim.precondition("fill=0.5".parse().unwrap()).unwrap();
            let path = dir.path().join(format!("{ftl}.snap"));
            sim.save_state(&path, "k").unwrap();
            let mut loaded = Simulation::new(cfg).unwrap();
            let before = DECODED_WHOLE.with(|n| n.get());
            assert_eq!(loaded.load_state(&path, "k", None), Ok(true), "{ftl}");
            assert_eq!(DECODED_WHOLE.with(|n| n.get()), before, "{ftl}: a table was decoded beside the drive");
        }
        // Decoded whole, a table counts: the check above can fail.
        let bytes = bincode::serialize(&crate::mem::big_vec(3, 1u32)).unwrap();
        let before = DECODED_WHOLE.with(|n| n.get());
        let _: crate::mem::BigVec<u32> = bincode::deserialize(&bytes).unwrap();
        assert_eq!(DECODED_WHOLE.with(|n| n.get()), before + 1);
    }

    /// Progress is told at every multiple of `progress_every` commands
    /// (records: each range of a TRIM counts), also where a TRIM's ranges
    /// step past one, and a `false` answer stops the run there.
    #[test]
    fn progress_is_told_at_each_multiple_even_inside_a_trim() {
        use crate::trace::list::CmdList;
        let cfg = Config::load("k9lag08u0m-4ch", &["geometry.blocks_per_plane=64".into()]).unwrap();
        let cmd = |op, start: u64, continued| HostCmd {
            time: SimTime::ZERO,
            op,
            start: Sector(start * 8),
            sectors: 8,
            continued,
        };
        // Records 1-3 writes, 4-5 one TRIM of two ranges, 6-8 writes.
        let mut cmds: Vec<HostCmd> = (0..3).map(|i| cmd(Op::Write, i, false)).collect();
        cmds.extend([cmd(Op::Trim, 10, true), cmd(Op::Trim, 11, false)]);
        cmds.extend((0..3).map(|i| cmd(Op::Write, 20 + i, false)));
        let opts = RunOptions { progress_every: 2, ..RunOptions::from_config(&cfg) };
        let mut told = Vec::new();
        let mut sim = Simulation::new(cfg.clone()).unwrap();
        sim.run(&mut CmdList::new("list", cmds.clone()), &opts, &mut |_, n| {
            told.push(n);
            true
        })
        .unwrap();
        // 4 is inside the TRIM, told once it is served (at 5); the last
        // call is the end's.
        assert_eq!(told, [2, 5, 6, 8, 8]);
        let mut sim = Simulation::new(cfg).unwrap();
        let stopped = sim.run(&mut CmdList::new("list", cmds), &opts, &mut |_, n| n < 5);
        assert!(matches!(stopped, Err(Error::Interrupted)), "{stopped:?}");
    }

    #[test]
    fn precondition_specs_are_bounded_and_complete() {
        let p: Precondition = "fill=0.5,overwrite=2,".parse().unwrap();
        assert_eq!((p.fill, p.overwrite), (0.5, 2.0));
        for (spec, want) in [
            ("", "precondition: '' is empty"),
            (" ", "precondition: ' ' is empty"),
            ("fill=1,fill=0.5", "precondition.fill: given twice"),
            ("fill=0.5,,overwrite=1", "precondition: 'fill=0.5,,overwrite=1' has an empty field"),
            ("fill=0.5,overwrite=1e30", "precondition.overwrite: 1e30 is more than 100"),
            ("fill=0.5,overwrite=100.5", "precondition.overwrite: 100.5 is more than 100"),
        ] {
            let err = spec.parse::<Precondition>().unwrap_err().to_string();
            assert!(err.contains(want), "{spec}: {err}");
        }
        assert_eq!("overwrite=100".parse::<Precondition>().unwrap().overwrite, limits::MAX_OVERWRITE);
        // Fast unless asked otherwise; the spec round-trips with its mode.
        for (spec, mode) in [
            ("fill=1", PreconditionMode::Fast),
            ("fill=1,mode=timed", PreconditionMode::Timed),
            ("fill=1,mode=functional", PreconditionMode::Functional),
        ] {
            let p: Precondition = spec.parse().unwrap();
            assert_eq!(p.mode, mode);
            assert_eq!(p.to_string().parse::<Precondition>().unwrap(), p);
        }
        let err = "fill=1,mode=slow".parse::<Precondition>().unwrap_err().to_string();
        assert!(err.contains("precondition.mode: 'slow' is not a mode; expected fast, timed or functional"), "{err}");
    }

    #[test]
    fn a_trace_clock_that_went_back_or_one_gap_that_is_the_run_is_named() {
        let mut spread = ArrivalSpan::default();
        for i in 0..2000 {
            spread.add(SimTime(i * 1_000_000));
        }
        assert_eq!(clock_warning(HostMode::Open, &spread, 0), None);
        let w = clock_warning(HostMode::Open, &spread, 7).unwrap();
        assert!(w.starts_with("trace clock: 7 of 2000 arrivals were earlier"), "{w}");
        assert!(!w.contains("gap"), "{w}");
        // A jump of an hour before the 2001st arrival: the span is the jump's.
        let mut jumped = spread.clone();
        jumped.add(SimTime(3_600_000_000_000));
        let w = clock_warning(HostMode::Open, &jumped, 0).unwrap();
        assert!(w.contains("3598.001 s before request 2001 (counting from 1), is 99.9% of their span"), "{w}");
        let w = clock_warning(HostMode::Open, &jumped, 5).unwrap();
        assert!(w.contains("5 of 2001 arrivals") && w.contains("a clock glitch?"), "{w}");
        // Closed loop ignores the trace's times; a few requests say nothing of a gap.
        assert_eq!(clock_warning(HostMode::Closed, &jumped, 5), None);
        let mut few = ArrivalSpan::default();
        for t in [0, 1, 1_000_000_000] {
            few.add(SimTime(t));
        }
        assert_eq!(clock_warning(HostMode::Open, &few, 0), None);
    }

    /// `n` arrivals evenly over `span_s`, request `i` done at `done(i, its arrival)`
    /// (seconds): the span and the last completion.
    fn replayed(n: usize, span_s: f64, done: impl Fn(usize, f64) -> f64) -> (ArrivalSpan, SimTime) {
        let t = |s: f64| SimTime((s * 1e9).round() as u64);
        let mut span = ArrivalSpan::default();
        let mut last = SimTime::ZERO;
        for i in 0..n {
            let arrival = span_s * i as f64 / (n - 1) as f64;
            span.add(t(arrival));
            let d = t(done(i, arrival));
            span.complete(d);
            last = last.max(d);
        }
        (span, last)
    }

    #[test]
    fn saturation_is_a_queue_beyond_a_tenth_of_the_arrival_span() {
        let warn = |mode, (span, last): (ArrivalSpan, SimTime)| saturation_warning(mode, &span, last);
        // 5,000 arrivals over 10 s, each served 0.5 s later: keeping up (5%).
        assert_eq!(warn(HostMode::Open, replayed(5000, 10.0, |_, a| a + 0.5)), None);
        // Served one after another at 5,000 per 15 s: arrivals 50% faster
        // than service, a third of them still queued at the last arrival.
        let queue = || replayed(5000, 10.0, |i, _| (i + 1) as f64 * 15.0 / 5000.0);
        let w = warn(HostMode::Open, queue()).unwrap();
        assert!(w.starts_with("saturated:") && w.contains("about 1.50x as fast") && w.contains("(166"), "{w}");
        // Closed loop cannot saturate.
        assert_eq!(warn(HostMode::Closed, queue()), None);
        // A queue on a few busy planes (every fifth request's) grew too.
        let hot = replayed(5000, 10.0, |i, a| if i % 5 == 0 { (i + 1) as f64 * 15.0 / 5000.0 } else { a + 0.001 });
        assert!(warn(HostMode::Open, hot).is_some_and(|w| w.starts_with("saturated:")));
        // One slow operation at the end (a merge): as long a backlog, one request waiting.
        assert_eq!(warn(HostMode::Open, replayed(5000, 10.0, |i, a| if i == 4999 { 15.0 } else { a + 0.001 })), None);
    }

    #[test]
    fn a_short_run_is_saturated_when_many_requests_were_still_queued_at_its_last_arrival() {
        // 500 requests over 0.45 s; the last `queued` finish 100 s later.
        let run = |queued: usize| replayed(500, 0.45, |i, a| if i < 500 - queued { a + 0.0001 } else { 100.0 });
        let (span, last) = run(300);
        let w = saturation_warning(HostMode::Open, &span, last).unwrap();
        assert!(w.starts_with("saturated:"), "{w}");
        // A few slow requests at the end of a short burst say nothing of the run.
        let (span, last) = run(20);
        assert_eq!(saturation_warning(HostMode::Open, &span, last), None);
        let (span, last) = replayed(10, 10.0, |i, _| (i + 1) as f64 * 1.5);
        assert_eq!(saturation_warning(HostMode::Open, &span, last), None);
    }
}
