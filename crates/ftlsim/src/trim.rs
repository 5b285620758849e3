//! The TRIM command itself: multi-range commands, what they cost, and
//! queued vs non-queued TRIM at the host interface.
//!
//! Son, Lee, Kim and Kim, "An Analysis on the Performance of TRIM Commands
//! on SSDs and its Application to the Ext4 File System" (KIISE TCP 2015),
//! measured that a TRIM gets cheaper per byte as its LBA range grows, when
//! its sectors are aligned, and when more ranges travel in one command (ATA
//! DSM carries up to 64). This module makes each part of that cost explicit:
//!
//! - **DSM payload**: the range list crosses the host link, 8 B per range
//!   in 512 B blocks (ATA DSM's layout);
//! - **controller time**: `trim.command_us` per command, `trim.range_us` per
//!   range and per partial-page fragment a misaligned range leaves, on the
//!   controller's firmware core free soonest ([`crate::controller::cores`]:
//!   one by default, where other commands take no core time unless
//!   `controller.command_us` gives them some, so TRIMs queue behind TRIMs);
//! - **mapping work**, each FTL's own, on the engine's resources: the FTL's
//!   `trim` books its flash reads and writes (DFTL's translation pages),
//!   PCM accesses (HAT) and erases itself; the RAM accesses it counts
//!   ([`Ftl::ram_accesses`]: map entries of `page`, CMT/QMT entries of
//!   `dftl`/`hat`, TRIM-list probes and entries of the hybrids) take
//!   `energy.dram_access_ns` each of core time;
//! - **partial pages** (`trim.partial`): `ignore` leaves them mapped; `zero`
//!   writes zeros over the trimmed sectors of a page that holds data, a
//!   read-modify-write through the write buffer and the FTL.
//!
//! A command completes when its core work and all its flash/PCM work have.
//!
//! **Queued vs non-queued** (`host.trim_queued`). A non-queued TRIM (ATA
//! DSM before SATA 3.1) starts only when every command issued before it has
//! completed, and every command issued after it waits until it completes.
//! [`TrimModel::admit`] and [`TrimModel::complete`] implement this gate for
//! every command the [`Simulation`](crate::Simulation) serves, so trace
//! replays, synthetic runs and the NBD server all see it. A command's
//! latency counts from its issue, waits included.

use crate::config::{Config, TrimPartial};
use crate::controller::Controller;
use crate::engine::Device;
use crate::error::Result;
use crate::ftl::{Ftl, Span, split_sector};
use crate::trace::Op;
use crate::units::{Nanos, SECTOR_BYTES, Sector, SimTime};
use serde::{Deserialize, Serialize};

/// Bytes of one range entry in the DSM payload (ATA: 48-bit LBA + 16-bit count).
pub const DSM_ENTRY_BYTES: u64 = 8;
/// The DSM payload moves in whole 512 B blocks.
const DSM_BLOCK_BYTES: u64 = 512;

/// What TRIM commands cost over a run (the report's `trim` section).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrimStats {
    /// TRIM commands served, and the ranges they carried.
    pub commands: u64,
    pub ranges: u64,
    /// Controller core time: per command, per range and per fragment, ms.
    pub controller_ms: f64,
    /// Core time of the mapping work's RAM accesses, ms.
    pub mapping_ram_ms: f64,
    /// RAM accesses the FTL's TRIM work made.
    pub mapping_ram_accesses: u64,
    /// Partial-page fragments of misaligned ranges, and those `zero` rewrote.
    pub partial_pages: u64,
    pub partial_pages_zeroed: u64,
    /// Non-queued TRIMs that waited for earlier commands, and how long in all, ms.
    pub drain_waits: u64,
    pub drain_wait_ms: f64,
    /// Commands held behind a non-queued TRIM, and how long in all, ms.
    pub held_commands: u64,
    pub held_ms: f64,
}

/// The cost model and the host-side gate of TRIM commands.
#[derive(Serialize, Deserialize)]
pub struct TrimModel {
    command: Nanos,
    range: Nanos,
    ram_access_ns: u64,
    partial: TrimPartial,
    trim_enabled: bool,
    queued: bool,
    max_ranges: usize,
    sectors_per_page: u64,
    /// Completion of the last non-queued TRIM: nothing starts before it.
    barrier: SimTime,
    /// Latest completion of any command admitted so far.
    latest_done: SimTime,
    zeros: Vec<u8>,
    stats_ns: [u64; 4],
    pub stats: TrimStats,
}

const CONTROLLER: usize = 0;
const RAM: usize = 1;
const DRAIN: usize = 2;
const HELD: usize = 3;

impl TrimModel {
    pub fn new(cfg: &Config, payloads: bool) -> TrimModel {
        let page = cfg.geometry.page_size as usize;
        TrimModel {
            command: Nanos::from_us_f64(cfg.trim.command_us),
            range: Nanos::from_us_f64(cfg.trim.range_us),
            ram_access_ns: cfg.energy.dram_access_ns.round() as u64,
            partial: cfg.trim.partial,
            trim_enabled: cfg.ftl.trim,
            queued: cfg.host.trim_queued,
            max_ranges: cfg.host.trim_max_ranges as usize,
            sectors_per_page: page as u64 / SECTOR_BYTES,
            barrier: SimTime::ZERO,
            latest_done: SimTime::ZERO,
            zeros: if payloads { vec![0; page] } else { Vec::new() },
            stats_ns: [0; 4],
            stats: TrimStats::default(),
        }
    }

    /// Ranges one command carries at most (`host.trim_max_ranges`).
    pub fn max_ranges(&self) -> usize {
        self.max_ranges
    }

    /// When a command issued at `issue` may start: after a non-queued TRIM
    /// before it has completed, and, for a non-queued TRIM, after every
    /// command before it has.
    #[inline]
    pub fn admit(&mut self, op: Op, issue: SimTime) -> SimTime {
        let mut start = issue;
        if self.barrier > start {
            self.stats.held_commands += 1;
            self.stats_ns[HELD] += (self.barrier - start).0;
            start = self.barrier;
        }
        if op == Op::Trim && !self.queued && self.latest_done > start {
            self.stats.drain_waits += 1;
            self.stats_ns[DRAIN] += (self.latest_done - start).0;
            start = self.latest_done;
        }
        start
    }

    /// Records a command's completion (after [`admit`](Self::admit)).
    #[inline]
    pub fn complete(&mut self, op: Op, done: SimTime) {
        self.latest_done = self.latest_done.max(done);
        if op == Op::Trim && !self.queued {
            self.barrier = self.barrier.max(done);
        }
    }

    /// Serves one TRIM command of `ranges` (each inside the logical space)
    /// starting at `start`; returns its completion time.
    pub fn serve(
        &mut self,
        ctrl: &mut Controller,
        ftl: &mut dyn Ftl,
        dev: &mut Device,
        ranges: &[Span],
        start: SimTime,
    ) -> Result<SimTime> {
        debug_assert!(!ranges.is_empty() && ranges.len() <= self.max_ranges);
        self.stats.commands += 1;
        self.stats.ranges += ranges.len() as u64;
        let payload = (ranges.len() as u64 * DSM_ENTRY_BYTES).div_ceil(DSM_BLOCK_BYTES) * DSM_BLOCK_BYTES;
        let ready = dev.host_transfer(payload, start);
        let (core, core_start) = ctrl.cores.soonest(ready);
        let mut t = core_start + self.command;
        let mut core_ns = self.command.0;
        let mut done = t;
        for &span in ranges {
            t += self.range;
            core_ns += self.range.0;
            for piece in partial_ends(span, self.sectors_per_page).into_iter().flatten() {
                self.stats.partial_pages += 1;
                t += self.range;
                core_ns += self.range.0;
                if self.partial == TrimPartial::Zero && self.trim_enabled {
                    done = done.max(self.zero(ctrl, ftl, dev, piece, t)?);
                }
            }
            let before = ftl.ram_accesses();
            done = done.max(ctrl.trim(ftl, dev, span, t)?);
            let accesses = ftl.ram_accesses() - before;
            self.stats.mapping_ram_accesses += accesses;
            let ram = accesses * self.ram_access_ns;
            self.stats_ns[RAM] += ram;
            t += Nanos(ram);
        }
        self.stats_ns[CONTROLLER] += core_ns;
        ctrl.cores.occupy(core, core_start, t);
        Ok(done.max(t))
    }

    /// Writes zeros over a partial page's trimmed sectors if the page holds
    /// data: on flash, or newer than flash ([`Controller::held`]; asking
    /// the buffer alone, a page in COFTL's data cache kept its sectors).
    fn zero(
        &mut self,
        ctrl: &mut Controller,
        ftl: &mut dyn Ftl,
        dev: &mut Device,
        piece: Span,
        at: SimTime,
    ) -> Result<SimTime> {
        let lpn = crate::units::Lpn(split_sector(piece.start.0, self.sectors_per_page).0 as u32);
        if ftl.physical(lpn).is_none() && ctrl.held(ftl, lpn.0).next().is_none() {
            return Ok(at);
        }
        self.stats.partial_pages_zeroed += 1;
        let data = (!self.zeros.is_empty()).then(|| &self.zeros[..(piece.sectors * SECTOR_BYTES) as usize]);
        ctrl.write(ftl, dev, piece, at, at, data)
    }

    /// Time and counters restart (between measurement phases); the drive's
    /// state is settled, so nothing is outstanding.
    pub fn restart(&mut self) {
        self.barrier = SimTime::ZERO;
        self.latest_done = SimTime::ZERO;
        self.stats_ns = [0; 4];
        self.stats = TrimStats::default();
    }

    /// The report's figures, with the accumulated times in ms.
    pub fn report(&self) -> TrimStats {
        let ms = |i: usize| self.stats_ns[i] as f64 / 1e6;
        TrimStats {
            controller_ms: ms(CONTROLLER),
            mapping_ram_ms: ms(RAM),
            drain_wait_ms: ms(DRAIN),
            held_ms: ms(HELD),
            ..self.stats.clone()
        }
    }
}

/// The partial-page pieces at the ends of `span`: the head when it starts
/// inside a page, the tail when it ends inside a different one (a span
/// inside one page is a single piece).
pub fn partial_ends(span: Span, spp: u64) -> [Option<Span>; 2] {
    if span.sectors == 0 {
        return [None, None];
    }
    let end = span.start.0 + span.sectors;
    let (first_page, head_off) = split_sector(span.start.0, spp);
    let (last_page, tail_off) = split_sector(end, spp);
    let head = (head_off != 0 || span.sectors < spp && last_page == first_page).then(|| {
        let page_end = (first_page + 1) * spp;
        Span { start: span.start, sectors: page_end.min(end) - span.start.0 }
    });
    let tail =
        (tail_off != 0 && last_page != first_page).then(|| Span { start: Sector(last_page * spp), sectors: tail_off });
    [head, tail]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: u64, sectors: u64) -> Span {
        Span { start: Sector(start), sectors }
    }

    #[test]
    fn partial_ends_of_aligned_misaligned_and_small_spans() {
        assert_eq!(partial_ends(span(8, 16), 8), [None, None]);
        assert_eq!(partial_ends(span(9, 16), 8), [Some(span(9, 7)), Some(span(24, 1))]);
        assert_eq!(partial_ends(span(8, 17), 8), [None, Some(span(24, 1))]);
        assert_eq!(partial_ends(span(10, 3), 8), [Some(span(10, 3)), None]);
        assert_eq!(partial_ends(span(8, 3), 8), [Some(span(8, 3)), None]);
        assert_eq!(partial_ends(span(14, 4), 8), [Some(span(14, 2)), Some(span(16, 2))]);
        assert_eq!(partial_ends(span(0, 0), 8), [None, None]);
    }
}
