//! The page-mapped data path for mapping units smaller than the page
//! (`ftl.map_unit_bytes`; see the parent module's doc comment): host units
//! are staged and packed, units of any LPNs, into whole pages; reads read the
//! page holding each unit. Forward-map values are unit addresses
//! (`PPN × units per page + slot`), OOB holds one LPN per unit, valid counts
//! are in units. GC's unit-aware parts stay beside page-unit GC in the
//! parent (they differ only in the address arithmetic).
//!
//! Invariant: a staged unit's map entry is `TRIMMED` until its page is
//! programmed, so GC running inside the page's allocation never copies the
//! unit being replaced, and its old copy's bytes are taken beforehand.

use super::{MapTable, NEVER, PageCore, TRIMMED, is_mapped};
use crate::config::UnwrittenReads;
use crate::engine::{Cause, Device};
use crate::error::Result;
use crate::ftl::{PageChunk, Span, page_chunks};
use crate::nand::NO_LPN;
use crate::units::{Lpn, Ppn, SimTime};

impl PageCore {
    fn units_per_page(&self) -> usize {
        1 << self.unit_shift
    }

    fn sectors_per_unit(&self) -> u32 {
        self.geo.sectors_per_page >> self.unit_shift
    }

    fn unit_bytes(&self) -> usize {
        self.geo.page_size as usize >> self.unit_shift
    }

    /// Writes the spans as one batch: their units packed into pages, the
    /// last partial page padded. Returns when the last program ends.
    pub(super) fn write_units<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        spans: &[(Span, Option<&[u8]>)],
        now: SimTime,
        ready: SimTime,
    ) -> Result<SimTime> {
        let mut done = ready;
        for &(span, data) in spans {
            for c in page_chunks(span, self.sectors_per_unit()) {
                done = done.max(self.stage_unit(map, dev, c, now, ready, data)?);
            }
        }
        Ok(done.max(self.program_staged(map, dev, now)?))
    }

    /// Stages unit `c.lpn` (read-modify-write of a partial unit), and
    /// programs the staged page once it is full.
    fn stage_unit<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        c: PageChunk,
        now: SimTime,
        ready: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime> {
        if let Some(k) = self.staged.iter().position(|&u| u == c.lpn.0) {
            // The unit is staged already: a batch may hold several runs of
            // one unit's sectors (a buffered unit's dirty sectors in runs).
            // They join its staged copy; staging it again would map it
            // twice and take its old bytes from the TRIMMED entry (zeros).
            if let Some(data) = data {
                let ub = self.unit_bytes();
                self.scratch[k * ub..(k + 1) * ub][c.byte_range()].copy_from_slice(&data[c.buf_range()]);
            }
            self.staged_ready = self.staged_ready.max(ready);
            return Ok(ready);
        }
        let full = c.sectors == self.sectors_per_unit();
        let (old, start) = self.lookup_for_write(map, dev, c.lpn, full, now, ready)?;
        if let Some(data) = data {
            let ub = self.unit_bytes();
            let at = self.staged.len() * ub;
            let unit = &mut self.scratch[at..at + ub];
            if !full {
                // Taken now: GC below may move or erase the old page.
                match is_mapped(old).then(|| dev.array.unit_data(old)).flatten() {
                    Some(bytes) => unit.copy_from_slice(bytes),
                    None => unit.fill(0),
                }
            }
            unit[c.byte_range()].copy_from_slice(&data[c.buf_range()]);
        }
        if is_mapped(old) {
            self.stale(self.geo.block_of(Ppn(old >> self.unit_shift)), now);
        }
        map.set(c.lpn, TRIMMED);
        self.staged.push(c.lpn.0);
        self.staged_ready = self.staged_ready.max(start);
        if self.staged.len() == self.units_per_page() {
            return self.program_staged(map, dev, now);
        }
        Ok(start)
    }

    /// Programs the staged units into a host page, its spare units empty
    /// (padded); returns when the program ends (`now` if nothing is staged).
    fn program_staged<M: MapTable>(&mut self, map: &mut M, dev: &mut Device, now: SimTime) -> Result<SimTime> {
        let n = self.staged.len();
        if n == 0 {
            return Ok(now);
        }
        let upp = self.units_per_page();
        self.stats.units_padded += (upp - n) as u64;
        self.staged.resize(upp, NO_LPN);
        let start = std::mem::replace(&mut self.staged_ready, SimTime::ZERO);
        let ppn = self.alloc_host_page(map, dev, now, true);
        let ppn = match ppn {
            Ok(ppn) => ppn,
            Err(e) => {
                self.staged.clear();
                return Err(e);
            }
        };
        let bytes = if self.scratch.is_empty() {
            None
        } else {
            let used = n * self.unit_bytes();
            self.scratch[used..].fill(0);
            Some(&self.scratch[..])
        };
        let done = dev.program_units(ppn, &self.staged, start, Cause::Host, bytes);
        let first = ppn.0 << self.unit_shift;
        for (k, &lun) in self.staged[..n].iter().enumerate() {
            map.set(Lpn(lun), first + k as u32);
            self.pool.add_valid(self.geo.block_of(ppn), now);
        }
        self.staged.clear();
        done
    }

    /// Reads the span's units: each page holding one once for consecutive
    /// units of it, whole (tR and a page transfer).
    pub(super) fn read_units<M: MapTable>(
        &mut self,
        map: &mut M,
        dev: &mut Device,
        span: Span,
        now: SimTime,
        mut out: Option<&mut [u8]>,
    ) -> Result<SimTime> {
        let (mut done, mut last_page) = (now, u32::MAX);
        for c in page_chunks(span, self.sectors_per_unit()) {
            let (mut m, known) = map.lookup(self, dev, c.lpn, now)?;
            if m == NEVER && self.unwritten == UnwrittenReads::Place {
                m = self.place_units(map, dev, c.lpn, now)?;
            }
            if is_mapped(m) && m >> self.unit_shift != last_page {
                last_page = m >> self.unit_shift;
                done = done.max(dev.read(Ppn(last_page), known, Cause::Host)?);
            }
            if let Some(out) = out.as_deref_mut() {
                let dst = &mut out[c.buf_range()];
                match is_mapped(m).then(|| dev.array.unit_data(m)).flatten() {
                    Some(unit) => dst.copy_from_slice(&unit[c.byte_range()]),
                    None => dst.fill(0),
                }
            }
        }
        Ok(done)
    }

    /// Puts the never-written units of the logical page holding unit `unit`
    /// on flash at no cost, packed into one page, as if written before the
    /// run; returns where `unit` is now.
    fn place_units<M: MapTable>(&mut self, map: &mut M, dev: &mut Device, unit: Lpn, now: SimTime) -> Result<u32> {
        let mut lpns: Vec<u32> =
            self.units_of(Lpn(unit.0 >> self.unit_shift)).filter(|&u| map.get(u) == NEVER).collect();
        let placed = lpns.len();
        lpns.resize(self.units_per_page(), NO_LPN);
        let ppn = self.alloc_host_page(map, dev, now, false)?;
        dev.place_units(ppn, &lpns)?;
        for (k, &u) in lpns[..placed].iter().enumerate() {
            self.pool.add_valid(self.geo.block_of(ppn), now);
            map.placed(self, dev, Lpn(u), Ppn((ppn.0 << self.unit_shift) + k as u32), now)?;
        }
        self.stats.placed_reads += 1;
        Ok(map.get(unit.0))
    }

    /// The units of logical page `lpn` (host LPNs are pages; map entries units).
    fn units_of(&self, lpn: Lpn) -> std::ops::Range<u32> {
        lpn.0 << self.unit_shift..(lpn.0 + 1) << self.unit_shift
    }

    /// The page holding one of `lpn`'s units, if any is mapped.
    pub(super) fn physical_unit<M: MapTable>(&self, map: &M, lpn: Lpn) -> Option<Ppn> {
        self.units_of(lpn).map(|u| map.get(u)).find(|&v| is_mapped(v)).map(|v| Ppn(v >> self.unit_shift))
    }

    /// Logical page `lpn`'s bytes, assembled from its units (payload mode).
    pub(super) fn page_of_units<M: MapTable>(&self, map: &M, dev: &Device, lpn: Lpn) -> Option<Vec<u8>> {
        if !dev.array.stores_payloads() || self.physical_unit(map, lpn).is_none() {
            return None;
        }
        let ub = self.unit_bytes();
        let mut page = vec![0u8; self.geo.page_size as usize];
        for (k, u) in self.units_of(lpn).enumerate() {
            let v = map.get(u);
            if let Some(bytes) = is_mapped(v).then(|| dev.array.unit_data(v)).flatten() {
                page[k * ub..(k + 1) * ub].copy_from_slice(bytes);
            }
        }
        Some(page)
    }
}
