//! `page`: the classic page-mapping FTL, with TRIM as described by Kim, Kim,
//! Lee and Won, "FTL Design for TRIM Command".
//!
//! Any LPN maps to any PPN. The forward map (LPN → PPN, 4 B per logical
//! page) lives in controller RAM; the backward map (PPN → LPN) is the OOB
//! LPN array the NAND model already keeps. TRIM updates the forward map at
//! once and the backward map lazily: a physical page is valid exactly when
//! the forward map still points at it, so GC, checking that, never copies a
//! trimmed page, and the per-block valid counts GC ranks victims by are
//! decremented at trim time.
//!
//! Writes rotate over the planes in the configured stripe order, one active
//! block per plane shared by host writes and GC copies. Each plane keeps a
//! reserve of free blocks for GC's copies (`gc.threshold` of its spare
//! blocks, at least `gc.min_free_blocks`): before the host opens a new block
//! in a plane holding no more free blocks than its reserve, foreground GC
//! reclaims victims chosen by the shared [`BlockPool`] policy, copying valid
//! pages within the plane, until the plane has one free block more, so the
//! reserve is still in hand once the host has taken its block. The host
//! never takes a plane's last free block (that only happens when GC could
//! not restore the reserve): with one free block GC can always make
//! progress, since reclaiming a victim never consumes more free blocks than
//! its erase returns. Partial-page writes read the old page first
//! (read-modify-write).
//!
//! Simplifications: no separate GC write frontier, no wear levelling beyond
//! the pool's oldest-erased-first free queue, GC copies go through the bus
//! (no copy-back).

use super::pool::{BlockPool, BlockState};
use super::{Ftl, FtlStats, PageChunk, Span, page_chunks, whole_pages};
use crate::config::{Config, StripeUnit, UnwrittenReads};
use crate::engine::{Cause, Device};
use crate::error::{Error, Result};
use crate::nand::{Geometry, Payload};
use crate::units::{BlockId, Lpn, PlaneId, Ppn, SimTime};

/// Forward-map value of a logical page never written (and never trimmed).
const NEVER: u32 = u32::MAX;
/// Forward-map value of a trimmed logical page.
const TRIMMED: u32 = u32::MAX - 1;
const NO_BLOCK: u32 = u32::MAX;

#[inline]
fn is_mapped(v: u32) -> bool {
    v < TRIMMED
}

pub struct PageFtl {
    geo: Geometry,
    fwd: Vec<u32>,
    pool: BlockPool,
    /// Active block of each plane, or `NO_BLOCK`.
    active: Vec<u32>,
    stripe: Vec<PlaneId>,
    cursor: usize,
    /// Free blocks per plane GC keeps in hand.
    reserve: u32,
    trim_enabled: bool,
    unwritten: UnwrittenReads,
    /// One page of bytes, for assembling payloads of partial writes.
    scratch: Vec<u8>,
    /// Live pages of the GC victim being reclaimed (reused allocation).
    live_scratch: Vec<u32>,
    stats: FtlStats,
}

impl PageFtl {
    pub fn new(cfg: &Config, dev: &Device) -> Result<PageFtl> {
        let geo = dev.geometry().clone();
        let logical = cfg.logical_pages() as usize;
        let data_blocks_per_plane = (logical as u64).div_ceil(geo.pages_per_block as u64 * geo.planes as u64);
        let spare = (geo.blocks_per_plane as u64).saturating_sub(data_blocks_per_plane);
        let reserve = ((cfg.gc.threshold * spare as f64).ceil() as u32).max(cfg.gc.min_free_blocks);
        // The host needs one block beyond GC's reserve to write into.
        if spare < reserve as u64 + 1 {
            return Err(Error::config(
                "overprovisioning",
                format!(
                    "leaves {spare} spare blocks per plane; the page FTL needs at least {} (GC reserve {reserve} from \
                     gc.threshold / gc.min_free_blocks, plus one to write into)",
                    reserve + 1
                ),
            ));
        }
        Ok(PageFtl {
            fwd: crate::mem::big_vec(logical, NEVER),
            pool: BlockPool::new(&geo, &cfg.gc, cfg.seed),
            active: vec![NO_BLOCK; geo.planes as usize],
            stripe: stripe_sequence(&geo, &cfg.ftl.stripe_order),
            cursor: 0,
            reserve,
            trim_enabled: cfg.ftl.trim,
            unwritten: cfg.host.unwritten_reads,
            scratch: if dev.array.stores_payloads() { vec![0; geo.page_size as usize] } else { Vec::new() },
            live_scratch: Vec::new(),
            stats: FtlStats::default(),
            geo,
        })
    }

    /// Free blocks per plane that GC keeps in hand.
    pub fn reserve_blocks(&self) -> u32 {
        self.reserve
    }

    /// The next programmable page of `plane`, opening a block if needed.
    /// Host allocations first let GC restore the plane's reserve plus the
    /// block the host takes; GC's own copies draw on that reserve. `None`:
    /// the plane has no room left for the host.
    fn next_page(&mut self, dev: &mut Device, plane: PlaneId, now: SimTime, for_gc: bool) -> Result<Option<Ppn>> {
        let mut collected = for_gc;
        loop {
            let a = self.active[plane.idx()];
            if a != NO_BLOCK {
                let written = dev.array.written_pages(BlockId(a));
                if written < self.geo.pages_per_block {
                    return Ok(Some(self.geo.ppn(BlockId(a), written)));
                }
                self.pool.close(BlockId(a), now);
                self.active[plane.idx()] = NO_BLOCK;
            }
            if !collected {
                collected = true;
                self.collect(dev, plane, now)?;
                continue;
            }
            // GC could not restore the reserve (a plane full of live data):
            // the last free block stays GC's, or the plane could never be
            // collected again once its data is overwritten elsewhere.
            if !for_gc && self.pool.free_count(plane) <= 1 {
                return Ok(None);
            }
            return Ok(self.pool.take_free(plane).map(|b| {
                self.active[plane.idx()] = b.0;
                self.geo.ppn(b, 0)
            }));
        }
    }

    /// A page for host data: the next plane in stripe order with room.
    fn alloc_host_page(&mut self, dev: &mut Device, now: SimTime) -> Result<Ppn> {
        for _ in 0..self.stripe.len() {
            let plane = self.stripe[self.cursor];
            self.cursor = (self.cursor + 1) % self.stripe.len();
            if let Some(ppn) = self.next_page(dev, plane, now, false)? {
                return Ok(ppn);
            }
        }
        Err(Error::DeviceFull("page FTL: no plane has a free page and GC cannot reclaim one".into()))
    }

    /// Foreground GC before the host opens a block: reclaims victims until
    /// the plane has more free blocks than its reserve.
    fn collect(&mut self, dev: &mut Device, plane: PlaneId, now: SimTime) -> Result<()> {
        let ppb = self.geo.pages_per_block;
        // FIFO, random and d-choices may pick full blocks (the models count
        // that waste too); bound the work per call.
        let mut budget = self.geo.blocks_per_plane;
        while self.pool.free_count(plane) <= self.reserve && budget > 0 {
            budget -= 1;
            let Some(victim) = self.pool.select_victim(plane, now) else { break };
            if self.pool.valid(victim) >= ppb && self.pool.fewest_valid(plane).is_none_or(|v| v >= ppb) {
                break; // the plane is full of live data: nothing to gain
            }
            self.reclaim(dev, victim, now)?;
        }
        Ok(())
    }

    fn reclaim(&mut self, dev: &mut Device, victim: BlockId, now: SimTime) -> Result<()> {
        self.stats.gc_invocations += 1;
        let plane = self.geo.plane_of(victim);
        let mut reads_done = now;
        // Find the live pages first, in a branch-free pass: the forward-map
        // lookups are independent cache misses the CPU can overlap, where a
        // branch on each would serialize them (this loop dominated run time).
        let mut live = std::mem::take(&mut self.live_scratch);
        let written = dev.array.written_pages(victim);
        live.resize(written as usize, 0);
        let first = self.geo.ppn(victim, 0).0;
        let mut n = 0;
        for src in first..first + written {
            let lpn = dev.array.oob_lpn(Ppn(src)).map_or(u32::MAX, |l| l.0);
            // Stale or trimmed pages fail this test: the lazy backward map says so.
            let is_live = self.fwd.get(lpn as usize).is_some_and(|&m| m == src);
            live[n] = src;
            n += is_live as usize;
        }
        live.truncate(n);
        let result = self.copy_live(dev, victim, plane, &live, now, &mut reads_done);
        self.live_scratch = live;
        result?;
        dev.erase(victim, reads_done, Cause::Gc)?;
        self.pool.release(victim)
    }

    fn copy_live(
        &mut self,
        dev: &mut Device,
        victim: BlockId,
        plane: PlaneId,
        live: &[u32],
        now: SimTime,
        reads_done: &mut SimTime,
    ) -> Result<()> {
        for &src in live {
            let src = Ppn(src);
            let lpn = dev.array.read(src)?;
            let read = dev.read(src, now, Cause::Gc)?;
            *reads_done = (*reads_done).max(read);
            let dst = self
                .next_page(dev, plane, now, true)?
                .ok_or_else(|| Error::invariant("page", format!("GC of {victim} found no free page in its plane")))?;
            dev.program(dst, lpn, read, Cause::Gc, Payload::CopyFrom(src))?;
            self.fwd[lpn.idx()] = dst.0;
            self.pool.invalidate(victim, now);
            self.pool.add_valid(self.geo.block_of(dst), now);
            self.stats.gc_pages_copied += 1;
        }
        Ok(())
    }

    fn write_page(
        &mut self,
        dev: &mut Device,
        c: PageChunk,
        now: SimTime,
        ready: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime> {
        let old = self.fwd[c.lpn.idx()];
        let mut start = ready;
        if !c.is_full_page(self.geo.sectors_per_page) && is_mapped(old) {
            start = dev.read(Ppn(old), ready, Cause::Host)?;
            self.stats.rmw_reads += 1;
        }
        // Assemble a partial page now: GC below may move or erase the old page.
        if let Some(data) = data.filter(|_| !c.is_full_page(self.geo.sectors_per_page)) {
            // Only a mapped page has data: NEVER and TRIMMED are not page numbers.
            match is_mapped(old).then(|| dev.array.page_data(Ppn(old))).flatten() {
                Some(bytes) => self.scratch.copy_from_slice(bytes),
                None => self.scratch.fill(0),
            }
            self.scratch[c.byte_range()].copy_from_slice(&data[c.buf_range()]);
        }
        if is_mapped(old) {
            self.pool.invalidate(self.geo.block_of(Ppn(old)), now);
        }
        // Unmapped while GC may run, so GC does not copy the page being replaced.
        self.fwd[c.lpn.idx()] = TRIMMED;
        let ppn = self.alloc_host_page(dev, now)?;
        let payload = match data {
            // A full page goes to flash straight from the host buffer.
            Some(data) if c.is_full_page(self.geo.sectors_per_page) => Payload::Bytes(&data[c.buf_range()]),
            Some(_) => Payload::Bytes(&self.scratch),
            None => Payload::None,
        };
        let done = dev.program(ppn, c.lpn, start, Cause::Host, payload)?;
        self.fwd[c.lpn.idx()] = ppn.0;
        self.pool.add_valid(self.geo.block_of(ppn), now);
        Ok(done)
    }

    /// Puts a never-written page on flash at no cost, as if written before the run.
    fn place(&mut self, dev: &mut Device, lpn: Lpn, now: SimTime) -> Result<Ppn> {
        let ppn = self.alloc_host_page(dev, now)?;
        dev.place(ppn, lpn, Payload::None)?;
        self.fwd[lpn.idx()] = ppn.0;
        self.pool.add_valid(self.geo.block_of(ppn), now);
        self.stats.placed_reads += 1;
        Ok(ppn)
    }
}

/// The order in which consecutive allocations visit planes: the first unit
/// of `order` varies fastest.
fn stripe_sequence(geo: &Geometry, order: &[StripeUnit]) -> Vec<PlaneId> {
    let size = |u: StripeUnit| match u {
        StripeUnit::Channel => geo.channels,
        StripeUnit::Chip => geo.chips_per_channel,
        StripeUnit::Die => geo.dies_per_chip,
        StripeUnit::Plane => geo.planes_per_die,
    };
    (0..geo.planes)
        .map(|i| {
            let (mut rem, mut coord) = (i, [0u32; 4]);
            for &u in order {
                coord[u as usize] = rem % size(u);
                rem /= size(u);
            }
            geo.plane_id(coord[0], coord[1], coord[2], coord[3])
        })
        .collect()
}

impl Ftl for PageFtl {
    fn name(&self) -> &'static str {
        "page"
    }

    fn read(&mut self, dev: &mut Device, span: Span, now: SimTime, mut out: Option<&mut [u8]>) -> Result<SimTime> {
        let mut done = now;
        for c in page_chunks(span, self.geo.sectors_per_page) {
            let mut m = self.fwd[c.lpn.idx()];
            if m == NEVER && self.unwritten == UnwrittenReads::Place {
                m = self.place(dev, c.lpn, now)?.0;
            }
            if is_mapped(m) {
                done = done.max(dev.read(Ppn(m), now, Cause::Host)?);
            }
            if let Some(out) = out.as_deref_mut() {
                let dst = &mut out[c.buf_range()];
                match is_mapped(m).then(|| dev.array.page_data(Ppn(m))).flatten() {
                    Some(page) => dst.copy_from_slice(&page[c.byte_range()]),
                    None => dst.fill(0),
                }
            }
        }
        Ok(done)
    }

    fn write(
        &mut self,
        dev: &mut Device,
        span: Span,
        now: SimTime,
        ready: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime> {
        let mut done = ready;
        for c in page_chunks(span, self.geo.sectors_per_page) {
            done = done.max(self.write_page(dev, c, now, ready, data)?);
        }
        Ok(done)
    }

    fn trim(&mut self, _dev: &mut Device, span: Span, now: SimTime) -> Result<SimTime> {
        if !self.trim_enabled {
            return Ok(now);
        }
        for lpn in whole_pages(span, self.geo.sectors_per_page) {
            let old = self.fwd[lpn as usize];
            if is_mapped(old) {
                self.pool.invalidate(self.geo.block_of(Ppn(old)), now);
                self.stats.trimmed_pages += 1;
            }
            self.fwd[lpn as usize] = TRIMMED;
        }
        Ok(now)
    }

    fn stats(&self) -> FtlStats {
        self.stats.clone()
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
    }

    fn mapping_ram_bytes(&self) -> u64 {
        // Forward map, backward map, and a 16-bit valid counter per block.
        self.fwd.len() as u64 * 4 + self.geo.pages as u64 * 4 + self.geo.blocks as u64 * 2
    }

    fn blocks_with_valid_data(&self) -> u64 {
        self.pool.blocks_with_valid_data()
    }

    fn check_invariants(&self, dev: &Device) -> Result<()> {
        let fail = |reason: String| Err(Error::invariant("page", reason));
        let mut valid = vec![0u32; self.geo.blocks as usize];
        for (lpn, &m) in self.fwd.iter().enumerate() {
            if !is_mapped(m) {
                continue;
            }
            let ppn = Ppn(m);
            match dev.array.read(ppn) {
                Ok(l) if l.idx() == lpn => {}
                _ => return fail(format!("LPN {lpn} maps to {ppn}, whose OOB does not hold it")),
            }
            valid[self.geo.block_of(ppn).idx()] += 1;
        }
        for b in 0..self.geo.blocks {
            let block = BlockId(b);
            if self.pool.valid(block) != valid[b as usize] {
                return fail(format!(
                    "{block}: pool counts {} valid pages, the map {}",
                    self.pool.valid(block),
                    valid[b as usize]
                ));
            }
            if self.pool.state(block) == BlockState::Free && dev.array.written_pages(block) != 0 {
                return fail(format!("{block} is free but not erased"));
            }
        }
        for (plane, &a) in self.active.iter().enumerate() {
            if a != NO_BLOCK && self.pool.state(BlockId(a)) != BlockState::Active {
                return fail(format!("active block {a} of plane {plane} is not in the active state"));
            }
        }
        Ok(())
    }
}
