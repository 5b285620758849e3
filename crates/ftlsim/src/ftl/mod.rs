//! Flash translation layers: one trait, one module per scheme.
//!
//! An FTL turns host reads, writes and trims of logical sectors into flash
//! operations on the [`Device`], which times them. It owns its mapping
//! tables and calls the shared [`pool::BlockPool`] for block allocation and
//! victim selection rather than keeping its own. Every FTL keeps the same
//! contract, checked by one conformance suite against a plain block device:
//! what was written and not trimmed reads back; trimmed or never-written
//! sectors read as zeros.

pub mod bast;
pub mod block;
pub mod cmt;
pub mod coftl;
pub mod dac;
pub mod dftl;
pub mod fast;
pub mod hat;
pub mod hybrid;
pub mod merge;
pub mod mu;
pub mod page;
pub mod pool;
pub mod recovery;
pub mod striping;
pub mod superblock;
pub mod trim_list;

use crate::config::Config;
use crate::controller::buffer::SectorMask;
use crate::engine::Device;
use crate::error::{Error, Result};
use crate::units::{BlockId, Lpn, PlaneId, Ppn, Sector, SimTime};
use serde::{Deserialize, Serialize};

/// Names accepted by `--ftl`.
pub const FTL_NAMES: &[&str] =
    &["page", "block", "bl", "bast", "fast", "dftl", "hat", "mu", "dac", "superblock", "coftl"];

/// One line on what an FTL of [`FTL_NAMES`] models and from which paper
/// (`ftlsim ftls`); the module's doc comment says the rest.
pub fn describe(name: &str) -> &'static str {
    match name {
        "page" => {
            "page mapping, any LPN to any PPN, greedy/cost-benefit/... GC, TRIM (classic; Kim et al., FTL design for TRIM)"
        }
        "block" => {
            "block mapping, fixed page offset; a rewritten offset copies the block (classic; Chang et al.'s BL baseline)"
        }
        "bast" => "one log block per data block, switch/partial/full merges (Kim et al. 2002, BAST)",
        "fast" => "1 sequential + N shared random log blocks, TRIM list (Lee et al. 2007, FAST; + Kim et al.'s TRIM)",
        "dftl" => "page mapping with an LRU cached map (CMT) and translation pages on flash (Gupta et al. 2009, DFTL)",
        "hat" => "page mapping with the full map in PCM and an LRU quick map in RAM (Hu et al., HAT)",
        "mu" => "extents in a flash-resident B+-tree, bitmap cache, partitions (Lee et al., mu-FTL)",
        "dac" => "page mapping with hot/cold regions, pages promoted/demoted on update and GC (Chiang et al., DAC)",
        "superblock" => {
            "block mapping over superblocks, page mapping inside in the spare area (Kang et al., superblock)"
        }
        "bl" => "alias of block: Chang et al.'s BL baseline (LBA -> VBA + page offset, one table)",
        "coftl" => {
            "virtual blocks over block sets across channels, cached VPTs, adaptive data cache, chains, crash recovery (Chang et al., multi-chipped FTL)"
        }
        _ => "",
    }
}

/// FTL-side counters for the report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FtlStats {
    pub gc_invocations: u64,
    pub gc_pages_copied: u64,
    /// Preemptible GC: host allocations that waited for a plane's whole GC
    /// job because it had fallen behind (its free blocks below the reserve).
    pub gc_jobs_waited_out: u64,
    /// Mapping-table accesses in controller RAM (energy model).
    pub ram_accesses: u64,
    /// Demand-cached maps: host translations, and those the cache served.
    pub map_lookups: u64,
    pub map_hits: u64,
    /// The FTL caches its map (a hit ratio is meaningful).
    pub map_cached: bool,
    /// Reads of never-written pages served by placing data first (no cost).
    pub placed_reads: u64,
    /// Pages whose mapping a TRIM removed.
    pub trimmed_pages: u64,
    /// Partial-page writes that read the old page first.
    pub rmw_reads: u64,
    /// Block-mapped FTLs: merges by kind (see `merge`).
    pub merges_switch: u64,
    pub merges_partial: u64,
    pub merges_full: u64,
    /// Live pages merges copied.
    pub merge_pages_copied: u64,
    /// Pages programmed without data so a block's pages stay in order.
    pub pages_padded: u64,
    /// Sub-page mapping units (`ftl.map_unit_bytes`) programmed empty: a
    /// write call's (or destaged batch's) last page, and a GC run's.
    pub units_padded: u64,
    /// Trimmed pages a merge left erased (skipped) instead of padding.
    pub pages_skipped: u64,
    /// Merges that reclaimed a log block, and the data blocks they touched
    /// (associativity): summed and at most.
    pub log_merges: u64,
    pub assoc_sum: u64,
    pub assoc_max: u64,
    /// TRIM list: ranges listed at the end, at most, modelled bytes at the
    /// peak, and page copies it saved merges.
    pub trim_list_entries: u64,
    pub trim_list_peak_entries: u64,
    pub trim_list_bytes: u64,
    pub trim_copies_saved: u64,
    /// μ-FTL's own counters.
    pub mu: Option<mu::MuStats>,
    /// COFTL's own counters.
    pub coftl: Option<coftl::CoftlStats>,
}

/// What an FTL's crash recovery did after a power cut (see
/// [`Ftl::power_cut`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecoveryReport {
    /// Simulated time of the cut, s.
    pub at_s: f64,
    /// Host commands served before the cut.
    pub after_commands: u64,
    /// Flash time from the cut (or the end of the work in flight) until the
    /// tables were rebuilt, µs.
    pub recovery_us: f64,
    /// Flash pages recovery read (all steps).
    pub pages_read: u64,
    /// Of those: log pages, first pages of listed free sets, and pages of
    /// last sets scanned (COFTL's steps; other FTLs say what theirs are).
    pub log_pages_read: u64,
    pub free_sets_probed: u64,
    pub pages_scanned: u64,
    /// Pages whose program the cut interrupted (unreadable since).
    pub pages_torn: u64,
    /// Wall-clock time the simulator took to recover, ms.
    pub wall_ms: f64,
    /// Pages whose acknowledged and flushed data were checked after it.
    pub pages_checked: u64,
    /// When recovery ended (the drive serves commands again).
    #[serde(skip)]
    pub recovered_at: SimTime,
}

/// A host command's address range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: Sector,
    pub sectors: u64,
}

pub trait Ftl: Send {
    fn name(&self) -> &'static str;

    /// Reads the span; fills `out` (span-sized) when payloads are stored.
    /// Returns when the last flash read completes.
    fn read(&mut self, dev: &mut Device, span: Span, now: SimTime, out: Option<&mut [u8]>) -> Result<SimTime>;

    /// Writes the span; `data` (span-sized) when payloads are stored.
    /// `ready` is when the data has arrived over the host link.
    fn write(
        &mut self,
        dev: &mut Device,
        span: Span,
        now: SimTime,
        ready: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime>;

    /// Writes several spans as one batch, each with its data when payloads
    /// are stored (the write buffer destaging a page's worth of mapping
    /// units): an FTL mapping units smaller than the page packs them into
    /// shared pages. By default, one [`write`](Ftl::write) per span.
    fn write_batch(
        &mut self,
        dev: &mut Device,
        spans: &[(Span, Option<&[u8]>)],
        now: SimTime,
        ready: SimTime,
    ) -> Result<SimTime> {
        write_each(self, dev, spans, now, ready)
    }

    /// Forgets the whole pages the span covers. Called only when `ftl.trim`
    /// is on: the controller acknowledges and ignores TRIM otherwise.
    fn trim(&mut self, dev: &mut Device, span: Span, now: SimTime) -> Result<SimTime>;

    /// A hint that a command on `span` comes next, so its mapping can be
    /// pulled into cache while the current one is served. Never changes results.
    fn prefetch(&self, _span: Span) {}

    /// A second hint for a command [`prefetch`](Self::prefetch) announced a
    /// few commands ago: its mapping has likely arrived in cache, so what
    /// the mapping points to can be pulled in too. Never changes results.
    fn prefetch_mapped(&self, _span: Span) {}

    fn flush(&mut self, _dev: &mut Device, now: SimTime) -> Result<SimTime> {
        Ok(now)
    }

    /// One step of `plane`'s background work (a GC page copy or erase)
    /// starting no earlier than `at`, when the engine finds the plane idle
    /// (the FTL asked for it with [`Device::wake`]). Returns when the plane
    /// could take the next step, or `None` when it has nothing left. The FTL
    /// decides what a step does; the engine decides when it runs.
    fn background(&mut self, _dev: &mut Device, _plane: PlaneId, _at: SimTime) -> Result<Option<SimTime>> {
        Ok(None)
    }

    /// Work the FTL left for later that a drive left idle would do (DFTL:
    /// the translation-page rewrites GC's batch updates queued), booked
    /// from `now`. Returns when it ends, `None` when there was none.
    /// [`Simulation::settle`](crate::Simulation::settle) calls it once the
    /// engine's background work has run to its end, and again while it finds some.
    fn settle(&mut self, _dev: &mut Device, _now: SimTime) -> Result<Option<SimTime>> {
        Ok(None)
    }

    /// Whether a destage issued now would first have to make GC copies
    /// other writes left owed (`gc.debt = "background"` with every plane
    /// owing): the controller then leaves it until a
    /// [`background`](Ftl::background) step pays some off, unless the
    /// destage is forced (a FLUSH, a writer with nothing else to wait for).
    fn destage_must_wait(&self) -> bool {
        false
    }

    fn stats(&self) -> FtlStats;

    /// Accesses to the FTL's tables in controller RAM so far (the report's
    /// `ram_accesses`): the TRIM cost model times those a TRIM makes. An
    /// FTL whose [`stats`](Ftl::stats) is not cheap overrides this.
    fn ram_accesses(&self) -> u64 {
        self.stats().ram_accesses
    }

    fn reset_stats(&mut self);

    /// Modelled controller RAM of the FTL's tables, bytes.
    fn mapping_ram_bytes(&self) -> u64;

    /// Blocks holding at least one valid page (N_vb).
    fn blocks_with_valid_data(&self) -> u64;

    /// Checks every internal invariant against the device (slow; tests).
    fn check_invariants(&self, dev: &Device) -> Result<()>;

    /// The page holding `lpn`'s data now, found without side effects (no
    /// time, no cache change): `None` when it reads as zeros (never
    /// written, or trimmed).
    fn physical(&self, lpn: Lpn) -> Option<Ppn>;

    /// The bytes of logical page `lpn` on flash, read without side effects
    /// (payload mode): `None` when it reads as zeros. An FTL whose pages
    /// hold pieces of several LPNs assembles it.
    fn page_data<'a>(&'a self, dev: &'a Device, lpn: Lpn) -> Option<std::borrow::Cow<'a, [u8]>> {
        self.physical(lpn).and_then(|p| dev.array.page_data(p)).map(std::borrow::Cow::Borrowed)
    }

    /// Sectors of `lpn` the FTL holds newer than flash in its own data
    /// cache (COFTL's), and their page bytes (payload mode; else empty).
    fn cached_page(&self, _lpn: Lpn) -> Option<(SectorMask, &[u8])> {
        None
    }

    /// The FTL's whole state, for a preconditioned snapshot
    /// ([`crate::snapshot`]); `None` for an FTL that cannot be saved yet.
    fn saved_state(&mut self) -> Option<&mut dyn SavedState> {
        None
    }

    /// Conditions a new drive without time (`--precondition
    /// ...,mode=functional`, see `page::functional`); `tick` is told the
    /// pages written so far. Only the page FTL has it.
    fn precondition_functional(
        &mut self,
        _dev: &mut Device,
        _c: &page::Conditioning,
        _rng: &mut crate::rng::SimRng,
        _tick: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        Err(page::functional_unsupported(format!("this drive runs the '{}' FTL", self.name())))
    }

    /// Power fails at `now`: the FTL drops everything volatile (RAM
    /// tables, its data cache), rebuilds its tables from flash alone (OOB,
    /// summary and log pages), timing the reads on `dev`, and reports.
    /// Writes completed before the last FLUSH must survive. An FTL that
    /// cannot recover refuses, changing nothing.
    fn power_cut(&mut self, _dev: &mut Device, _now: SimTime) -> Result<RecoveryReport> {
        Err(Error::config(
            "power_cut",
            format!("the '{}' FTL does not implement crash recovery; run it without power cuts", self.name()),
        ))
    }
}

/// An FTL's state to a snapshot and back ([`Ftl::saved_state`]); every
/// serde-derived FTL has it.
pub trait SavedState {
    /// Writes the state as the snapshot's next section.
    fn save(&self, out: &mut crate::snapshot::Writer) -> Result<()>;
    /// Replaces the state, in place, with the snapshot's next section, which
    /// [`save`](SavedState::save) wrote for the same config; else why not,
    /// the state then unspecified (rebuild the FTL).
    fn load(&mut self, r: &mut crate::snapshot::Reader) -> std::result::Result<(), String>;
}

impl<T: Serialize + serde::de::DeserializeOwned> SavedState for T {
    fn save(&self, out: &mut crate::snapshot::Writer) -> Result<()> {
        out.section(self)
    }
    fn load(&mut self, r: &mut crate::snapshot::Reader) -> std::result::Result<(), String> {
        r.section(&mut [self])
    }
}

/// [`Ftl::write_batch`] as one [`Ftl::write`] per span.
pub fn write_each<F: Ftl + ?Sized>(
    ftl: &mut F,
    dev: &mut Device,
    spans: &[(Span, Option<&[u8]>)],
    now: SimTime,
    ready: SimTime,
) -> Result<SimTime> {
    let mut done = ready;
    for &(span, data) in spans {
        done = done.max(ftl.write(dev, span, now, ready, data)?);
    }
    Ok(done)
}

/// Builds the FTL named `name` for a validated config.
pub fn build(name: &str, cfg: &Config, dev: &Device) -> Result<Box<dyn Ftl>> {
    if cfg.units_per_page() > 1 && name != "page" {
        return Err(Error::config(
            "ftl.map_unit_bytes",
            format!(
                "{} bytes is below the {}-byte page: only the 'page' FTL maps sub-page units, not '{name}'",
                cfg.map_unit_bytes(),
                cfg.geometry.page_size
            ),
        ));
    }
    match name {
        "page" => Ok(Box::new(page::PageFtl::new(cfg, dev)?)),
        "block" | "bl" => Ok(Box::new(block::BlockFtl::new(cfg, dev)?)),
        "coftl" => Ok(Box::new(coftl::Coftl::new(cfg, dev)?)),
        "bast" => Ok(Box::new(bast::Bast::new(cfg, dev)?)),
        "fast" => Ok(Box::new(fast::Fast::new(cfg, dev)?)),
        "dftl" => Ok(Box::new(dftl::Dftl::new(cfg, dev)?)),
        "hat" => Ok(Box::new(hat::Hat::new(cfg, dev)?)),
        "mu" => Ok(Box::new(mu::Mu::new(cfg, dev)?)),
        "dac" => Ok(Box::new(dac::Dac::new(cfg, dev)?)),
        "superblock" => Ok(Box::new(superblock::Superblock::new(cfg, dev)?)),
        _ => Err(Error::Unknown { what: "FTL", name: name.into(), available: FTL_NAMES.join(", ") }),
    }
}

/// The part of one logical page a host command touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageChunk {
    pub lpn: Lpn,
    /// First sector of the chunk within its page.
    pub first_sector: u32,
    pub sectors: u32,
    /// Byte offset of the chunk in the command's buffer.
    pub buf_offset: usize,
}

impl PageChunk {
    pub fn is_full_page(&self, sectors_per_page: u32) -> bool {
        self.sectors == sectors_per_page
    }

    pub fn byte_range(&self) -> std::ops::Range<usize> {
        self.first_sector as usize * 512..(self.first_sector + self.sectors) as usize * 512
    }

    pub fn buf_range(&self) -> std::ops::Range<usize> {
        self.buf_offset..self.buf_offset + self.sectors as usize * 512
    }
}

/// `sector / spp` and `sector % spp`, with a shift and mask for the usual
/// power-of-two page: a 64-bit division costs tens of cycles, several times
/// per host command.
#[inline]
pub fn split_sector(sector: u64, spp: u64) -> (u64, u64) {
    if spp.is_power_of_two() {
        (sector >> spp.trailing_zeros(), sector & (spp - 1))
    } else {
        (sector / spp, sector % spp)
    }
}

/// Splits a span into per-page chunks. The caller has checked the span lies
/// inside the logical space, so every LPN fits in 32 bits.
pub fn page_chunks(span: Span, sectors_per_page: u32) -> impl Iterator<Item = PageChunk> {
    let spp = sectors_per_page as u64;
    let end = span.start.0 + span.sectors;
    let mut sector = span.start.0;
    std::iter::from_fn(move || {
        if sector >= end {
            return None;
        }
        let (lpn, first) = split_sector(sector, spp);
        let n = (spp - first).min(end - sector);
        let chunk = PageChunk {
            lpn: Lpn(lpn as u32),
            first_sector: first as u32,
            sectors: n as u32,
            buf_offset: ((sector - span.start.0) * 512) as usize,
        };
        sector += n;
        Some(chunk)
    })
}

/// How many distinct blocks of `blocks` the list names (N_vb of FTLs that
/// keep no valid count per block: the blocks their mapped pages lie in).
pub fn distinct_blocks(blocks: usize, named: impl IntoIterator<Item = BlockId>) -> u64 {
    let mut seen = vec![false; blocks];
    for b in named {
        seen[b.idx()] = true;
    }
    seen.iter().filter(|&&s| s).count() as u64
}

/// The LPNs a span covers completely (TRIM works on whole pages only).
pub fn whole_pages(span: Span, sectors_per_page: u32) -> std::ops::Range<u32> {
    let spp = sectors_per_page as u64;
    let first = span.start.0.div_ceil(spp);
    let end = (span.start.0 + span.sectors) / spp;
    first as u32..end.max(first) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_at_page_boundaries() {
        let c: Vec<_> = page_chunks(Span { start: Sector(6), sectors: 12 }, 8).collect();
        assert_eq!(c.len(), 3);
        assert_eq!((c[0].lpn, c[0].first_sector, c[0].sectors, c[0].buf_offset), (Lpn(0), 6, 2, 0));
        assert_eq!((c[1].lpn, c[1].first_sector, c[1].sectors, c[1].buf_offset), (Lpn(1), 0, 8, 1024));
        assert_eq!((c[2].lpn, c[2].first_sector, c[2].sectors), (Lpn(2), 0, 2));
        assert!(c[1].is_full_page(8) && !c[0].is_full_page(8));
    }

    #[test]
    fn whole_pages_excludes_partial_ends() {
        assert_eq!(whole_pages(Span { start: Sector(6), sectors: 12 }, 8), 1..2);
        assert_eq!(whole_pages(Span { start: Sector(8), sectors: 16 }, 8), 1..3);
        assert_eq!(whole_pages(Span { start: Sector(1), sectors: 3 }, 8), 1..1);
    }
}
