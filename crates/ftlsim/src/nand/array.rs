//! Page and block state of the whole array, kept compact: a block's pages
//! are erased exactly from its write pointer on, so page state needs no
//! per-page byte; OOB holds each programmed page's LPN (4 B per page) and,
//! when recording is on, a program sequence number (8 B per page). A page
//! below the write pointer whose OOB holds no LPN was *skipped*: left erased
//! while a later page of its block was programmed (pages go in ascending
//! order; leaving one out is allowed, going back is not), and it cannot be
//! read.
//!
//! A power cut during a program tears the page ([`NandArray::tear`]): it
//! stays consumed (its block's write pointer is past it) but no longer
//! reads, as a page whose ECC fails. Torn pages are rare, so they are kept
//! in a sorted set rather than a per-page flag.
//!
//! The OOB LPN array doubles as the page FTL's backward (physical → logical)
//! map, as in the TRIM paper: storing it twice would double the model's
//! largest structure for no information.
//!
//! With mapping units smaller than the page (`ftl.map_unit_bytes`), OOB holds
//! one LPN per unit, as drives that map 4 KiB units in 16 KiB pages keep one
//! per unit in the spare area; the entries of unit `u` of page `p` sit at
//! `p × units per page + u`, so with one unit a page nothing changes. A page
//! is still programmed once, whole: its units are written together
//! ([`program_units`](NandArray::program_units)), unused ones left empty.

use crate::error::{Error, Result};
use crate::nand::Geometry;
use crate::nand::payload::PayloadStore;
use crate::nand::trim_log::TrimLog;
use crate::units::{BlockId, Lpn, Ppn};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// OOB marker of a page that holds no LPN (erased).
pub const NO_LPN: u32 = u32::MAX;

/// What a program puts in the page's data area when payloads are stored.
#[derive(Clone, Copy, Debug)]
pub enum Payload<'a> {
    /// Timing-only run, or contents that do not matter (zeros).
    None,
    /// A full page of bytes.
    Bytes(&'a [u8]),
    /// The current contents of another, still-programmed page (GC copies).
    CopyFrom(Ppn),
    /// No data, programmed only to keep a block's pages in order (a pad):
    /// zeros, with sequence number 0 in OOB, older than any copy of its
    /// LPN that holds data, so crash recovery never prefers it.
    Pad,
}

/// What reading a page's OOB finds (crash recovery's scan).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageOob {
    /// Erased: the block's programmed pages end before it.
    Erased,
    /// Programmed, but torn by a power cut: unreadable.
    Torn,
    /// Programmed: its LPN and program sequence number (0 when sequence
    /// recording is off).
    Programmed { lpn: Lpn, seq: u64 },
}

/// Where a copy run went ([`NandArray::copy_run`]): its source block,
/// its destination block and the page in it the run starts at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyPlace {
    pub src: BlockId,
    pub dst: BlockId,
    pub first_in_block: u32,
}

#[derive(Serialize, Deserialize)]
pub struct NandArray {
    geo: Geometry,
    /// log2 of the mapping units per page (0: one LPN a page).
    unit_shift: u32,
    endurance: u32,
    oob_lpn: crate::mem::BigVec<u32>,
    oob_seq: Option<Vec<u64>>,
    write_ptr: Vec<u16>,
    erase_count: Vec<u32>,
    /// Not in snapshots: a drive storing payloads is never saved (see `snapshot`).
    #[serde(skip)]
    payload: Option<PayloadStore>,
    next_seq: u64,
    /// Pages torn by power cuts since their block's erase.
    torn: BTreeSet<u32>,
    /// The system area's TRIM log (non-volatile).
    pub trim_log: TrimLog,
}

impl NandArray {
    pub fn new(geo: Geometry, endurance: u32, store_payloads: bool, record_sequence: bool) -> NandArray {
        NandArray::with_units(geo, endurance, store_payloads, record_sequence, 1)
    }

    /// An array whose OOB holds `units_per_page` (a power of two) LPNs a page.
    pub fn with_units(
        geo: Geometry,
        endurance: u32,
        store_payloads: bool,
        record_sequence: bool,
        units_per_page: u32,
    ) -> NandArray {
        assert!(units_per_page.is_power_of_two(), "units per page {units_per_page} is not a power of two");
        let pages = geo.pages as usize;
        let blocks = geo.blocks as usize;
        let unit_shift = units_per_page.trailing_zeros();
        NandArray {
            unit_shift,
            endurance,
            oob_lpn: crate::mem::big_vec(pages << unit_shift, NO_LPN),
            oob_seq: record_sequence.then(|| vec![0; pages]),
            write_ptr: vec![0; blocks],
            erase_count: vec![0; blocks],
            payload: store_payloads
                .then(|| PayloadStore::new(blocks, geo.pages_per_block as usize, geo.page_size as usize)),
            next_seq: 1,
            torn: BTreeSet::new(),
            trim_log: TrimLog::default(),
            geo,
        }
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// Whether programs record a sequence number in OOB.
    pub fn records_sequence(&self) -> bool {
        self.oob_seq.is_some()
    }

    pub fn stores_payloads(&self) -> bool {
        self.payload.is_some()
    }

    /// Mapping units per page (OOB LPNs a page holds).
    #[inline]
    pub fn units_per_page(&self) -> u32 {
        1 << self.unit_shift
    }

    /// Programs the next page of its block, recording `lpn` in OOB.
    pub fn program(&mut self, ppn: Ppn, lpn: Lpn, payload: Payload<'_>) -> Result<()> {
        let (block, page) = self.check_programmable(ppn)?;
        if lpn.0 == NO_LPN {
            return Err(Error::Physics(format!("program of {ppn} with the reserved LPN {NO_LPN}")));
        }
        if let Payload::CopyFrom(src) = payload {
            self.check_readable(src)?;
        }
        if let Some(data) = &mut self.payload {
            let size = self.geo.page_size as usize;
            let dst = (block.idx(), page as usize);
            match payload {
                Payload::None | Payload::Pad => data.write(dst.0, dst.1, None),
                Payload::Bytes(bytes) => {
                    if bytes.len() != size {
                        return Err(Error::Physics(format!(
                            "program of {ppn}: {} payload bytes for a {size}-byte page",
                            bytes.len()
                        )));
                    }
                    data.write(dst.0, dst.1, Some(bytes));
                }
                Payload::CopyFrom(src) => {
                    let from = (self.geo.block_of(src).idx(), self.geo.page_in_block(src) as usize);
                    data.copy(from, dst);
                }
            }
        }
        self.oob_lpn[ppn.idx() << self.unit_shift] = lpn.0;
        if let Some(seq) = &mut self.oob_seq {
            seq[ppn.idx()] = if matches!(payload, Payload::Pad) { 0 } else { self.next_seq };
        }
        self.next_seq += 1;
        self.write_ptr[block.idx()] += 1;
        Ok(())
    }

    /// Programs the next page of its block with one LPN per unit in OOB
    /// (`lpns`, one per unit of the page; [`NO_LPN`] for a unit left empty,
    /// but the first must hold data) and, in payload mode, `bytes` (a page).
    pub fn program_units(&mut self, ppn: Ppn, lpns: &[u32], bytes: Option<&[u8]>) -> Result<()> {
        let (block, page) = self.check_programmable(ppn)?;
        if lpns.len() != self.units_per_page() as usize || lpns[0] == NO_LPN {
            return Err(Error::Physics(format!(
                "program of {ppn}: {lpns:?} is not the LPNs of its {} units, the first holding data",
                self.units_per_page()
            )));
        }
        if let Some(data) = &mut self.payload {
            if bytes.is_some_and(|b| b.len() != self.geo.page_size as usize) {
                return Err(Error::Physics(format!("program of {ppn}: payload is not one page")));
            }
            data.write(block.idx(), page as usize, bytes);
        }
        let first = ppn.idx() << self.unit_shift;
        self.oob_lpn[first..first + lpns.len()].copy_from_slice(lpns);
        if let Some(seq) = &mut self.oob_seq {
            seq[ppn.idx()] = self.next_seq;
        }
        self.next_seq += 1;
        self.write_ptr[block.idx()] += 1;
        Ok(())
    }

    /// Copies units (`src`, unit addresses of readable pages outside the
    /// destination block) packed into consecutive pages from `dst` on, the
    /// last page's spare units left empty: GC of sub-page units. Returns
    /// the pages programmed.
    pub fn copy_units(&mut self, src: &[u32], dst: Ppn) -> Result<u32> {
        let upp = self.units_per_page() as usize;
        let pages = src.len().div_ceil(upp) as u32;
        let (block, page) = self.check_programmable(dst)?;
        if page + pages > self.geo.pages_per_block {
            return Err(Error::Physics(format!(
                "copy of {} units into {block} from page {page}: the block has {} pages",
                src.len(),
                self.geo.pages_per_block
            )));
        }
        // All checked before anything changes, so a refused copy leaves no trace.
        for &u in src {
            let from = Ppn(u >> self.unit_shift);
            self.check_readable(from)?;
            if self.geo.block_of(from) == block {
                return Err(Error::Physics(format!("copy of a unit of {block} into itself")));
            }
        }
        let unit_bytes = self.geo.page_size as usize >> self.unit_shift;
        let mut bytes = vec![0u8; if self.payload.is_some() { self.geo.page_size as usize } else { 0 }];
        for (i, units) in src.chunks(upp).enumerate() {
            let to = Ppn(dst.0 + i as u32);
            let first = to.idx() << self.unit_shift;
            for (k, &u) in units.iter().enumerate() {
                self.oob_lpn[first + k] = self.oob_lpn[u as usize];
                if let Some(data) = self.unit_data(u) {
                    bytes[k * unit_bytes..(k + 1) * unit_bytes].copy_from_slice(data);
                }
            }
            if let Some(data) = &mut self.payload {
                bytes[units.len() * unit_bytes..].fill(0);
                data.write(block.idx(), (page + i as u32) as usize, Some(&bytes));
            }
            if let Some(seq) = &mut self.oob_seq {
                seq[to.idx()] = self.next_seq;
            }
            self.next_seq += 1;
        }
        self.write_ptr[block.idx()] += pages as u16;
        Ok(pages)
    }

    /// The raw OOB LPN word of unit address `u` (page × units per page +
    /// unit; [`NO_LPN`] when erased or empty). With one unit a page, `u` is
    /// the PPN.
    #[inline]
    pub fn oob_unit_raw(&self, u: u32) -> u32 {
        self.oob_lpn[u as usize]
    }

    /// [`oob_unit_raw`](Self::oob_unit_raw) of each of `units`.
    #[inline]
    pub fn oob_units_raw(&self, units: std::ops::Range<u32>) -> &[u32] {
        &self.oob_lpn[units.start as usize..units.end as usize]
    }

    /// The bytes of unit address `u` (payload mode only).
    pub fn unit_data(&self, u: u32) -> Option<&[u8]> {
        let unit_bytes = self.geo.page_size as usize >> self.unit_shift;
        let slot = (u as usize & ((1 << self.unit_shift) - 1)) * unit_bytes;
        self.page_data(Ppn(u >> self.unit_shift)).map(|p| &p[slot..slot + unit_bytes])
    }

    /// Leaves the next page of its block erased: the block's later pages
    /// may be programmed, this one cannot be, nor read, until the erase.
    pub fn skip(&mut self, ppn: Ppn) -> Result<()> {
        let (block, page) = self.check_programmable(ppn)?;
        if let Some(data) = &mut self.payload {
            data.write(block.idx(), page as usize, None);
        }
        self.write_ptr[block.idx()] += 1;
        Ok(())
    }

    /// Programs `rounds` pages of each block from its page `firsts[k]` on,
    /// in turns: round `r` programs page `firsts[k] + r` of each block in
    /// `firsts`' order, the `i`-th page so programmed holding LPN
    /// `first_lpn + i` (no payload). What as many [`program`](Self::program)
    /// calls in that order do (OOB, sequence numbers, write pointers), with
    /// the checks made once: a sequential fill striped over planes.
    pub fn program_rounds(&mut self, firsts: &[Ppn], rounds: u32, first_lpn: u32) -> Result<()> {
        if self.unit_shift != 0 {
            return Err(Error::Physics("whole-page programs of pages holding sub-page units: program units".into()));
        }
        let n = firsts.len() as u32;
        if first_lpn as u64 + n as u64 * rounds as u64 > NO_LPN as u64 {
            return Err(Error::Physics(format!(
                "{rounds} rounds of {n} pages from LPN {first_lpn} reach the reserved LPN"
            )));
        }
        let mut blocks = Vec::with_capacity(firsts.len());
        for &first in firsts {
            let (block, page) = self.check_programmable(first)?;
            if page + rounds > self.geo.pages_per_block {
                return Err(Error::Physics(format!(
                    "{rounds} programs into {block} from page {page}: the block has {} pages",
                    self.geo.pages_per_block
                )));
            }
            blocks.push(block);
        }
        // Two runs on one block would program its pages out of order.
        blocks.sort_unstable();
        if let Some(w) = blocks.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::Physics(format!("{} programmed in two runs of one round", w[0])));
        }
        let oob = &mut self.oob_lpn[..];
        for (k, &first) in firsts.iter().enumerate() {
            for r in 0..rounds {
                oob[first.idx() + r as usize] = first_lpn + r * n + k as u32;
            }
        }
        if let Some(seq) = &mut self.oob_seq {
            for (k, &first) in firsts.iter().enumerate() {
                for r in 0..rounds as u64 {
                    seq[first.idx() + r as usize] = self.next_seq + r * n as u64 + k as u64;
                }
            }
        }
        if let Some(data) = &mut self.payload {
            for &first in firsts {
                let (block, page) = (self.geo.block_of(first), self.geo.page_in_block(first));
                for r in 0..rounds {
                    data.write(block.idx(), (page + r) as usize, None);
                }
            }
        }
        self.next_seq += n as u64 * rounds as u64;
        for &first in firsts {
            self.write_ptr[self.geo.block_of(first).idx()] += rounds as u16;
        }
        Ok(())
    }

    /// Copies programmed pages of one block (`src`, ascending or not) into
    /// consecutive pages of another from `dst` on: GC's copy loop as one
    /// call, with the checks of [`read`](Self::read) and
    /// [`program`](Self::program) made once per run where they can be.
    /// Returns where the run went (none for an empty one), which the
    /// checks found anyway and the caller's timing needs.
    pub fn copy_run(&mut self, src: &[u32], dst: Ppn) -> Result<Option<CopyPlace>> {
        let Some(&first_src) = src.first() else { return Ok(None) };
        if self.unit_shift != 0 {
            return Err(Error::Physics("whole-page copy of pages holding sub-page units: copy units instead".into()));
        }
        let (block, page) = self.check_programmable(dst)?;
        if page + src.len() as u32 > self.geo.pages_per_block {
            return Err(Error::Physics(format!(
                "copy of {} pages into {block} from page {page}: the block has {} pages",
                src.len(),
                self.geo.pages_per_block
            )));
        }
        // Readable = below its block's write pointer; one block for the run.
        // The first source is checked as the rest are, in the loop below
        // (its refusal named as a read's would be: `check_readable`), once
        // it is known to be on the device.
        if first_src >= self.geo.pages {
            self.check_readable(Ppn(first_src))?;
        }
        let src_block = self.geo.block_of(Ppn(first_src));
        let src_first = self.geo.ppn(src_block, 0).0;
        let src_written = self.write_ptr[src_block.idx()] as u32;
        if src_block == block {
            self.check_readable(Ppn(first_src))?;
            return Err(Error::Physics(format!("copy of pages of {block} into itself")));
        }
        // The OOB entries are copied as the sources are checked (inside the
        // source block, not skipped: one pass without branches per page,
        // GC copies being most of a run's programs); a refused run erases
        // the destination's entries again (erased, they were `NO_LPN`), so
        // it leaves no trace, and only then looks for its first bad page,
        // to name it. Torn pages, rare, are looked for apart.
        let outside = |s: u32| s.wrapping_sub(src_first) >= src_written;
        let (to, n) = (dst.idx(), src.len());
        // The source block's written entries and the destination's, apart
        // (two blocks), so a source's lookup is its one range test.
        let (from, into) = {
            let (from, to_end) = (src_first as usize, to + n);
            let oob = &mut self.oob_lpn[..];
            if from < to {
                let (lo, hi) = oob.split_at_mut(to);
                (&lo[from..from + src_written as usize], &mut hi[..n])
            } else {
                let (lo, hi) = oob.split_at_mut(to_end);
                (&hi[from - to_end..from - to_end + src_written as usize], &mut lo[to..])
            }
        };
        debug_assert!(into.iter().all(|&l| l == NO_LPN), "erased pages' OOB holds LPNs");
        let mut bad = false;
        for (at, &s) in into.iter_mut().zip(src) {
            // Whole pages only (`unit_shift` is 0, refused above otherwise).
            let lpn = from.get(s.wrapping_sub(src_first) as usize).copied().unwrap_or(NO_LPN);
            bad |= lpn == NO_LPN;
            *at = lpn;
        }
        let torn = |s: u32| self.torn.contains(&s);
        if bad || (!self.torn.is_empty() && src.iter().any(|&s| torn(s))) {
            self.oob_lpn[to..to + n].fill(NO_LPN);
            self.check_readable(Ppn(first_src))?;
            let skipped = |s: u32| self.oob_lpn[s as usize] == NO_LPN;
            let &s = src.iter().find(|&&s| outside(s) || skipped(s) || torn(s)).expect("a refused page");
            if outside(s) {
                self.check_readable(Ppn(s))?;
                return Err(Error::Physics(format!("copy run mixes {src_block} with {}", Ppn(s))));
            }
            if torn(s) {
                self.check_readable(Ppn(s))?;
            }
            return Err(Error::Physics(format!("copy of {}: the page was skipped, it holds no data", Ppn(s))));
        }
        let first = self.next_seq;
        self.next_seq += src.len() as u64;
        if let Some(seq) = &mut self.oob_seq {
            for (i, at) in seq[dst.idx()..dst.idx() + src.len()].iter_mut().enumerate() {
                *at = first + i as u64;
            }
        }
        if let Some(data) = &mut self.payload {
            for (i, &s) in src.iter().enumerate() {
                data.copy((src_block.idx(), (s - src_first) as usize), (block.idx(), page as usize + i));
            }
        }
        self.write_ptr[block.idx()] += src.len() as u16;
        Ok(Some(CopyPlace { src: src_block, dst: block, first_in_block: page }))
    }

    /// The block and page of `ppn`, if it is the next page its block may
    /// program. Inlined, its refusal out of line: every program passes here.
    #[inline(always)]
    fn check_programmable(&self, ppn: Ppn) -> Result<(BlockId, u32)> {
        if ppn.0 < self.geo.pages {
            let (block, page) = (self.geo.block_of(ppn), self.geo.page_in_block(ppn));
            if page == self.write_ptr[block.idx()] as u32 {
                return Ok((block, page));
            }
        }
        Err(self.unprogrammable(ppn))
    }

    /// Why `ppn` may not be programmed now.
    #[cold]
    #[inline(never)]
    fn unprogrammable(&self, ppn: Ppn) -> Error {
        if ppn.0 >= self.geo.pages {
            return Error::Physics(format!("program of {ppn}: beyond the device's {} pages", self.geo.pages));
        }
        let (block, page) = (self.geo.block_of(ppn), self.geo.page_in_block(ppn));
        let wp = self.write_ptr[block.idx()] as u32;
        let why = if page < wp { "page is not erased" } else { "pages of a block must be programmed in order" };
        Error::Physics(format!("program of {ppn} ({block}, page {page}): {why} (next programmable page is {wp})"))
    }

    /// Checks a page may be read and returns the LPN its OOB records.
    #[inline]
    pub fn read(&self, ppn: Ppn) -> Result<Lpn> {
        self.check_readable(ppn)?;
        Ok(Lpn(self.oob_lpn[ppn.idx() << self.unit_shift]))
    }

    #[inline]
    fn check_readable(&self, ppn: Ppn) -> Result<()> {
        if ppn.0 >= self.geo.pages {
            return Err(Error::Physics(format!("read of {ppn}: beyond the device's {} pages", self.geo.pages)));
        }
        let block = self.geo.block_of(ppn);
        if self.geo.page_in_block(ppn) >= self.write_ptr[block.idx()] as u32
            || self.oob_lpn[ppn.idx() << self.unit_shift] == NO_LPN
        {
            return Err(Error::Physics(format!("read of {ppn} ({block}): page was never programmed since erase")));
        }
        if !self.torn.is_empty() && self.torn.contains(&ppn.0) {
            return Err(Error::Physics(format!(
                "read of {ppn} ({block}): torn by a power cut during its program (ECC fails)"
            )));
        }
        Ok(())
    }

    /// A power cut interrupted the program of `ppn`: the page stays
    /// consumed but reads fail from now on, until its block is erased.
    pub fn tear(&mut self, ppn: Ppn) -> Result<()> {
        self.check_readable(ppn)?;
        self.torn.insert(ppn.0);
        Ok(())
    }

    /// Pages torn and not yet erased.
    pub fn torn_pages(&self) -> usize {
        self.torn.len()
    }

    /// What a read of `ppn`'s OOB finds.
    pub fn oob(&self, ppn: Ppn) -> PageOob {
        let block = self.geo.block_of(ppn);
        if self.geo.page_in_block(ppn) >= self.write_ptr[block.idx()] as u32 {
            PageOob::Erased
        } else if self.torn.contains(&ppn.0) {
            PageOob::Torn
        } else {
            let seq = self.oob_seq.as_ref().map_or(0, |s| s[ppn.idx()]);
            PageOob::Programmed { lpn: Lpn(self.oob_lpn[ppn.idx() << self.unit_shift]), seq }
        }
    }

    /// The sequence number the next program will get: data programmed
    /// from now on is newer than anything done now (a TRIM's place in
    /// program order).
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Erases a block: all its pages become programmable again, in order.
    pub fn erase(&mut self, block: BlockId) -> Result<()> {
        if block.0 >= self.geo.blocks {
            return Err(Error::Physics(format!("erase of {block}: beyond the device's {} blocks", self.geo.blocks)));
        }
        if self.erase_count[block.idx()] >= self.endurance {
            let total: u64 = self.erase_count.iter().map(|&c| c as u64).sum();
            return Err(Error::WornOut {
                block: block.0 as u64,
                endurance: self.endurance,
                mean_erases: total as f64 / self.erase_count.len() as f64,
            });
        }
        self.erase_count[block.idx()] += 1;
        let first = self.geo.ppn(block, 0).idx();
        let used = self.write_ptr[block.idx()] as usize;
        self.oob_lpn[first << self.unit_shift..(first + used) << self.unit_shift].fill(NO_LPN);
        if !self.torn.is_empty() {
            let torn: Vec<u32> = self.torn.range(first as u32..(first + used) as u32).copied().collect();
            for p in torn {
                self.torn.remove(&p);
            }
        }
        self.write_ptr[block.idx()] = 0;
        Ok(())
    }

    /// The LPN recorded in a page's OOB, `None` for an erased (or torn)
    /// page.
    #[inline]
    pub fn oob_lpn(&self, ppn: Ppn) -> Option<Lpn> {
        let v = self.oob_lpn[ppn.idx() << self.unit_shift];
        (v != NO_LPN && (self.torn.is_empty() || !self.torn.contains(&ppn.0))).then_some(Lpn(v))
    }

    /// The raw OOB LPN word of a page ([`NO_LPN`] when erased), its first
    /// unit's with units smaller than the page.
    #[inline]
    pub fn oob_lpn_raw(&self, ppn: Ppn) -> u32 {
        self.oob_lpn[ppn.idx() << self.unit_shift]
    }

    /// Hints the cache to load unit address `u`'s OOB LPN (a random place
    /// in a big table).
    #[inline]
    pub fn prefetch_oob_unit(&self, u: u32) {
        crate::mem::prefetch(&self.oob_lpn, u as usize);
    }

    /// The program sequence number of a page, when recording is on.
    pub fn oob_seq(&self, ppn: Ppn) -> Option<u64> {
        let seq = self.oob_seq.as_ref()?;
        (self.oob_lpn[ppn.idx() << self.unit_shift] != NO_LPN).then(|| seq[ppn.idx()])
    }

    /// Pages programmed in a block since its last erase.
    #[inline]
    pub fn written_pages(&self, block: BlockId) -> u32 {
        self.write_ptr[block.idx()] as u32
    }

    pub fn erase_count(&self, block: BlockId) -> u32 {
        self.erase_count[block.idx()]
    }

    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    /// The data area of a programmed page (payload mode only).
    pub fn page_data(&self, ppn: Ppn) -> Option<&[u8]> {
        let (block, page) = (self.geo.block_of(ppn).idx(), self.geo.page_in_block(ppn) as usize);
        self.payload.as_ref().map(|d| d.read(block, page))
    }

    /// An empty payload store, replacing any (a drive loaded from saved
    /// state, which carries no data: [`NandArray::restore_page_data`] puts
    /// it back).
    pub fn reset_payloads(&mut self) {
        let geo = &self.geo;
        self.payload =
            Some(PayloadStore::new(geo.blocks as usize, geo.pages_per_block as usize, geo.page_size as usize));
    }

    /// Sets the data area of the programmed page `ppn` without programming
    /// it (restoring saved state; payload mode only).
    pub fn restore_page_data(&mut self, ppn: Ppn, bytes: &[u8]) -> Result<()> {
        self.check_readable(ppn)?;
        let (block, page) = (self.geo.block_of(ppn).idx(), self.geo.page_in_block(ppn) as usize);
        let size = self.geo.page_size as usize;
        match &mut self.payload {
            Some(data) if bytes.len() == size => {
                data.write(block, page, Some(bytes));
                Ok(())
            }
            Some(_) => Err(Error::Physics(format!("restoring {ppn}: {} bytes for a {size}-byte page", bytes.len()))),
            None => Err(Error::Physics(format!("restoring {ppn}: the drive stores no payloads"))),
        }
    }

    /// Keeps the payload memory of the next `ahead` bytes of blocks to be
    /// programmed faulted in by a helper thread (payload mode only), off the
    /// path of the thread programming them.
    pub fn prefault_payloads(&mut self, ahead: usize) {
        if let Some(p) = &mut self.payload {
            p.prefault(ahead);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GeometryConfig;

    /// One plane of 4 blocks of 4 pages of `page_size` bytes.
    fn geometry(page_size: u32) -> Geometry {
        Geometry::new(&GeometryConfig {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 4,
            pages_per_block: 4,
            page_size,
        })
    }

    fn array(payloads: bool) -> NandArray {
        NandArray::new(geometry(512), 3, payloads, payloads)
    }

    #[test]
    fn programs_in_order_only() {
        let mut a = array(false);
        a.program(Ppn(0), Lpn(7), Payload::None).unwrap();
        let e = a.program(Ppn(2), Lpn(8), Payload::None).unwrap_err().to_string();
        assert!(e.contains("in order"), "{e}");
        let e = a.program(Ppn(0), Lpn(8), Payload::None).unwrap_err().to_string();
        assert!(e.contains("not erased"), "{e}");
        a.program(Ppn(1), Lpn(8), Payload::None).unwrap();
        assert_eq!(a.read(Ppn(1)).unwrap(), Lpn(8));
    }

    #[test]
    fn refuses_reading_unwritten_pages() {
        let mut a = array(false);
        assert!(a.read(Ppn(0)).unwrap_err().to_string().contains("never programmed"));
        a.program(Ppn(0), Lpn(1), Payload::None).unwrap();
        a.erase(BlockId(0)).unwrap();
        assert!(a.read(Ppn(0)).is_err());
        assert_eq!(a.oob_lpn(Ppn(0)), None);
    }

    #[test]
    fn a_skipped_page_stays_erased_and_later_pages_go_on_in_order() {
        let mut a = array(true);
        a.skip(Ppn(0)).unwrap();
        a.program(Ppn(1), Lpn(3), Payload::None).unwrap();
        assert_eq!(a.written_pages(BlockId(0)), 2);
        assert!(a.read(Ppn(0)).unwrap_err().to_string().contains("never programmed"));
        assert!(a.program(Ppn(0), Lpn(4), Payload::None).unwrap_err().to_string().contains("not erased"));
        assert!(a.skip(Ppn(3)).unwrap_err().to_string().contains("in order"));
        assert!(a.copy_run(&[1, 0], Ppn(4)).unwrap_err().to_string().contains("skipped"));
        let e = a.program(Ppn(4), Lpn(4), Payload::CopyFrom(Ppn(0))).unwrap_err().to_string();
        assert!(e.contains("never programmed"), "{e}");
        a.erase(BlockId(0)).unwrap();
        a.program(Ppn(0), Lpn(4), Payload::None).unwrap();
    }

    #[test]
    fn erase_respects_endurance() {
        let mut a = array(false);
        for _ in 0..3 {
            a.erase(BlockId(1)).unwrap();
        }
        let e = a.erase(BlockId(1)).unwrap_err();
        let blocks = a.erase_counts().len() as f64;
        assert!(
            matches!(e, Error::WornOut { block: 1, endurance: 3, mean_erases } if mean_erases == 3.0 / blocks),
            "{e:?}"
        );
        let line = e.to_string();
        assert!(line.starts_with("drive worn out: block 1 reached nand.endurance (3 erases;"), "{line}");
        assert!(line.contains("so the wear is uneven"), "one block of {blocks} erased: {line}");
        assert_eq!(a.erase_count(BlockId(1)), 3);
    }

    #[test]
    fn copy_run_moves_oob_and_payloads_in_order() {
        let mut a = array(true);
        for (i, byte) in [1u8, 2, 3].into_iter().enumerate() {
            a.program(Ppn(i as u32), Lpn(10 + i as u32), Payload::Bytes(&[byte; 512])).unwrap();
        }
        a.program(Ppn(4), Lpn(99), Payload::None).unwrap();
        // Into block 1 from its second page (4 pages a block), out of block 0.
        let placed = a.copy_run(&[2, 0], Ppn(5)).unwrap();
        assert_eq!(placed, Some(CopyPlace { src: BlockId(0), dst: BlockId(1), first_in_block: 1 }));
        assert_eq!(a.copy_run(&[], Ppn(7)).unwrap(), None);
        assert_eq!(a.oob_lpn(Ppn(5)), Some(Lpn(12)));
        assert_eq!(a.oob_lpn(Ppn(6)), Some(Lpn(10)));
        assert_eq!(a.page_data(Ppn(5)).unwrap(), &[3; 512][..]);
        assert_eq!(a.page_data(Ppn(6)).unwrap(), &[1; 512][..]);
        assert_eq!(a.written_pages(BlockId(1)), 3);
        assert!(a.oob_seq(Ppn(6)).unwrap() > a.oob_seq(Ppn(5)).unwrap());
    }

    #[test]
    fn copy_run_refuses_what_page_by_page_copies_would() {
        let mut a = array(false);
        a.program(Ppn(0), Lpn(1), Payload::None).unwrap();
        a.program(Ppn(1), Lpn(2), Payload::None).unwrap();
        a.program(Ppn(8), Lpn(3), Payload::None).unwrap();
        let refuse = |a: &mut NandArray, src: &[u32], dst: u32, why: &str| {
            let e = a.copy_run(src, Ppn(dst)).unwrap_err().to_string();
            assert!(e.contains(why), "{src:?} -> {dst}: {e}");
        };
        refuse(&mut a, &[0], 6, "in order");
        refuse(&mut a, &[0], 8, "not erased");
        refuse(&mut a, &[0, 2], 4, "never programmed");
        refuse(&mut a, &[0, 8], 4, "mixes");
        refuse(&mut a, &[0, 1], 3, "in order");
        refuse(&mut a, &[0, 1], 1 << 20, "beyond");
        // The first source refused as a read of it would be.
        refuse(&mut a, &[2, 0], 4, "page was never programmed");
        refuse(&mut a, &[1 << 20, 0], 4, "beyond the device");
        a.program(Ppn(4), Lpn(4), Payload::None).unwrap();
        a.program(Ppn(5), Lpn(5), Payload::None).unwrap();
        refuse(&mut a, &[0, 1, 0], 6, "the block has 4 pages");
        refuse(&mut a, &[4], 6, "into itself");
        refuse(&mut a, &[7], 6, "page was never programmed");
        // Refused runs changed nothing: the pages are still programmable in order.
        assert_eq!(a.written_pages(BlockId(1)), 2);
        assert_eq!(a.oob_lpn(Ppn(6)), None);
        a.copy_run(&[0, 1], Ppn(6)).unwrap();
        assert_eq!(a.read(Ppn(7)).unwrap(), Lpn(2));
    }

    #[test]
    fn program_rounds_is_page_by_page_programs_in_turns() {
        let (mut rounds, mut one_by_one) = (array(true), array(true));
        for a in [&mut rounds, &mut one_by_one] {
            a.program(Ppn(8), Lpn(0), Payload::None).unwrap();
        }
        let firsts = [Ppn(9), Ppn(0), Ppn(4)];
        rounds.program_rounds(&firsts, 3, 20).unwrap();
        for (i, (r, first)) in (0..3).flat_map(|r| firsts.iter().map(move |f| (r, f))).enumerate() {
            one_by_one.program(Ppn(first.0 + r), Lpn(20 + i as u32), Payload::None).unwrap();
        }
        for ppn in (0..16).map(Ppn) {
            assert_eq!(rounds.oob_lpn(ppn), one_by_one.oob_lpn(ppn), "{ppn}");
            assert_eq!(rounds.oob_seq(ppn), one_by_one.oob_seq(ppn), "{ppn}");
            assert_eq!(rounds.page_data(ppn), one_by_one.page_data(ppn), "{ppn}");
        }
        for b in (0..4).map(BlockId) {
            assert_eq!(rounds.written_pages(b), one_by_one.written_pages(b), "{b}");
        }
        assert_eq!(rounds.oob_lpn(Ppn(5)), Some(Lpn(25)), "round 1 of the third block: the 6th page");
        // Refused as page-by-page programs would be, changing nothing.
        let refuse = |a: &mut NandArray, firsts: &[u32], n: u32, why: &str| {
            let firsts: Vec<Ppn> = firsts.iter().map(|&p| Ppn(p)).collect();
            let e = a.program_rounds(&firsts, n, 40).unwrap_err().to_string();
            assert!(e.contains(why), "{firsts:?} x {n}: {e}");
        };
        refuse(&mut rounds, &[2, 12], 1, "not erased");
        refuse(&mut rounds, &[12, 14], 1, "in order");
        refuse(&mut rounds, &[3, 7], 2, "the block has 4 pages");
        refuse(&mut rounds, &[12, 12], 1, "two runs");
        refuse(&mut rounds, &[12], 1 << 20, "the block has 4 pages");
        assert!(rounds.program_rounds(&[Ppn(12)], 1, NO_LPN).unwrap_err().to_string().contains("reserved LPN"));
        assert_eq!(rounds.written_pages(BlockId(3)), 0);
        assert!(unit_array().program_rounds(&[Ppn(0)], 1, 0).unwrap_err().to_string().contains("units"));
    }

    /// Four 512-byte units a 2 KiB page.
    fn unit_array() -> NandArray {
        NandArray::with_units(geometry(2048), 3, true, true, 4)
    }

    #[test]
    fn pages_of_units_are_programmed_whole_with_one_lpn_a_unit() {
        let mut a = unit_array();
        let page: Vec<u8> = (0..2048).map(|i| (i / 512) as u8 + 1).collect();
        let refused = |a: &mut NandArray, ppn: u32, lpns: &[u32]| {
            a.program_units(Ppn(ppn), lpns, Some(&page)).unwrap_err().to_string()
        };
        assert!(refused(&mut a, 0, &[5, 9]).contains("units"));
        assert!(refused(&mut a, 0, &[NO_LPN, 9, 1, 2]).contains("first holding data"));
        a.program_units(Ppn(0), &[5, 9, NO_LPN, NO_LPN], Some(&page)).unwrap();
        assert!(refused(&mut a, 0, &[1, 2, 3, 4]).contains("not erased"));
        assert_eq!([0, 1, 2, 3].map(|u| a.oob_unit_raw(u)), [5, 9, NO_LPN, NO_LPN]);
        assert_eq!(a.read(Ppn(0)).unwrap(), Lpn(5));
        assert_eq!(a.unit_data(1).unwrap(), &[2; 512][..]);
        assert!(a.copy_run(&[0], Ppn(4)).unwrap_err().to_string().contains("copy units"));
    }

    #[test]
    fn copy_units_packs_units_of_several_pages_and_checks_first() {
        let mut a = unit_array();
        let page = |b: u8| vec![b; 2048];
        a.program_units(Ppn(0), &[10, 11, 12, 13], Some(&page(1))).unwrap();
        a.program_units(Ppn(1), &[20, 21, 22, 23], Some(&page(2))).unwrap();
        // Refused copies change nothing.
        assert!(a.copy_units(&[1, 9], Ppn(4)).unwrap_err().to_string().contains("never programmed"));
        assert!(a.copy_units(&[1], Ppn(2)).unwrap_err().to_string().contains("into itself"));
        assert!(a.copy_units(&[1; 20], Ppn(4)).unwrap_err().to_string().contains("the block has 4 pages"));
        assert_eq!(a.written_pages(BlockId(1)), 0);
        // Five units: one full page, one holding a unit and three empty.
        assert_eq!(a.copy_units(&[1, 3, 4, 6, 7], Ppn(4)).unwrap(), 2);
        assert_eq!(
            (16..24).map(|u| a.oob_unit_raw(u)).collect::<Vec<_>>(),
            [11, 13, 20, 22, 23, NO_LPN, NO_LPN, NO_LPN]
        );
        assert_eq!(a.unit_data(17).unwrap(), &[1; 512][..]);
        assert_eq!(a.unit_data(18).unwrap(), &[2; 512][..]);
        assert_eq!(a.unit_data(21).unwrap(), &[0; 512][..]);
        assert_eq!(a.written_pages(BlockId(1)), 2);
        assert!(a.oob_seq(Ppn(5)).unwrap() > a.oob_seq(Ppn(4)).unwrap());
        a.erase(BlockId(0)).unwrap();
        assert!((0..8).all(|u| a.oob_unit_raw(u) == NO_LPN));
        assert_eq!(a.oob_unit_raw(16), 11);
    }

    #[test]
    fn torn_pages_stay_consumed_and_unreadable_until_erased() {
        let mut a = array(true);
        a.program(Ppn(0), Lpn(3), Payload::Bytes(&[1; 512])).unwrap();
        a.program(Ppn(1), Lpn(4), Payload::Bytes(&[2; 512])).unwrap();
        assert!(a.tear(Ppn(2)).is_err(), "an erased page cannot be torn");
        a.tear(Ppn(1)).unwrap();
        assert_eq!(a.oob(Ppn(1)), PageOob::Torn);
        assert_eq!(a.oob(Ppn(2)), PageOob::Erased);
        assert!(matches!(a.oob(Ppn(0)), PageOob::Programmed { lpn: Lpn(3), seq } if seq > 0));
        assert!(a.read(Ppn(1)).unwrap_err().to_string().contains("torn"));
        assert_eq!(a.oob_lpn(Ppn(1)), None);
        assert!(a.program(Ppn(1), Lpn(4), Payload::None).unwrap_err().to_string().contains("not erased"));
        assert!(a.copy_run(&[1], Ppn(4)).is_err());
        a.program(Ppn(2), Lpn(5), Payload::None).unwrap();
        a.erase(BlockId(0)).unwrap();
        assert_eq!(a.torn_pages(), 0);
        a.program(Ppn(0), Lpn(3), Payload::None).unwrap();
        a.program(Ppn(1), Lpn(3), Payload::None).unwrap();
        assert_eq!(a.read(Ppn(1)).unwrap(), Lpn(3));
    }

    #[test]
    fn payloads_move_with_copies() {
        let mut a = array(true);
        let page = vec![0xAB; 512];
        a.program(Ppn(0), Lpn(5), Payload::Bytes(&page)).unwrap();
        a.program(Ppn(4), Lpn(5), Payload::CopyFrom(Ppn(0))).unwrap();
        assert_eq!(a.page_data(Ppn(4)).unwrap(), &page[..]);
        assert!(a.oob_seq(Ppn(4)).unwrap() > a.oob_seq(Ppn(0)).unwrap());
        let e = a.program(Ppn(8), Lpn(5), Payload::CopyFrom(Ppn(9))).unwrap_err();
        assert!(e.to_string().contains("never programmed"));
    }
}
