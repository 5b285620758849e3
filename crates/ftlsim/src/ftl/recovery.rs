//! Crash recovery from OOB records, shared by the FTLs that rebuild their
//! map by scanning flash: the page-mapped family (`page`, `dftl`, `hat`,
//! `dac`), `superblock`, `mu` (which rebuilds its μ-Tree from the scan,
//! `mu::recovery`) and the block-mapped one (`block`, `bast`, `fast`; see
//! `hybrid::recovery` for what they do after the scan).
//!
//! What a power cut loses and what survives:
//!
//! - lost: every RAM table (forward map, mapping caches, GC jobs, block
//!   states), the controller's write buffer, and TRIMs not yet journalled;
//! - torn: programs still in flight at the cut (`engine::power`): their
//!   pages read as ECC failures and are skipped;
//! - kept: every programmed page's OOB (its LPN and program sequence
//!   number, which the NAND model records), PCM (HAT's map), and the TRIM
//!   log in the system area ([`crate::nand::trim_log`]).
//!
//! [`scan`] reads the OOB of every programmed page (each block up to its
//! first erased page), timed on the device, and keeps for each map entry
//! the readable page with the highest sequence number: the newest copy,
//! whether the host wrote it or GC copied it (an interrupted GC leaves
//! the victim's pages in place, older than their copies). A host page whose
//! newest copy is older than its last journalled TRIM stays trimmed.
//!
//! TRIM semantics across a power cut: a TRIM followed by a completed FLUSH
//! survives (the FLUSH journals it, [`TrimJournal`]); a TRIM not yet
//! flushed may or may not: the page reads either zeros or the data it held
//! before the TRIM, never anything else. (GC journals pending TRIMs before
//! it erases a block, so the page's newest copy is never erased while an
//! older one could come back.) The FTL's own TRIM handling is
//! unchanged; journalling is only paid for on a drive that records program
//! sequence numbers (`nand.record_sequence`), the drives a power cut can be
//! made on.
//!
//! Simplifications: the scan reads every programmed page (no map
//! checkpoint bounds it, and `dftl`/`hat` do not trust their flash or PCM
//! image of the map, which GC updates before its copy is durable); an
//! erase in progress at the cut counts as done.

pub use super::RecoveryReport;
use crate::engine::{Cause, Device};
use crate::nand::PageOob;
use crate::units::{BlockId, Ppn, SimTime};
use serde::{Deserialize, Serialize};

/// An entry no readable page holds.
pub const NONE: u32 = u32::MAX;

/// What the OOB scan found.
pub struct Scan {
    /// Per map entry (host LPNs, then the map's own pages): the page with
    /// its newest readable copy, or [`NONE`].
    pub newest: Vec<u32>,
    /// Host LPNs whose newest copy a journalled TRIM removed.
    pub trimmed: Vec<bool>,
    /// Per block: pages programmed (readable or torn), and those holding
    /// an entry's newest copy.
    pub written: Vec<u32>,
    pub valid: Vec<u32>,
    pub report: RecoveryReport,
}

/// Power fails at `now`: tears the programs in flight, then reads the TRIM
/// log and every programmed page's OOB from when the array is idle. `entries`
/// map entries are kept, the first `logical` of them host LPNs.
pub fn scan(dev: &mut Device, now: SimTime, entries: u32, logical: u32) -> crate::error::Result<Scan> {
    let wall = std::time::Instant::now();
    let (cut, torn) = dev.cut_power(now)?;
    let start = cut.max(dev.last_unit_end());
    let geo = dev.geometry().clone();
    let log_pages = dev.array.trim_log.pages();
    let mut done = dev.system_read(log_pages, start);
    let mut newest = vec![NONE; entries as usize];
    let mut seqs = vec![0u64; entries as usize];
    let mut written = vec![0u32; geo.blocks as usize];
    let mut probes = 0u64;
    for b in 0..geo.blocks {
        for page in 0..geo.pages_per_block {
            let ppn = geo.ppn(BlockId(b), page);
            let (oob, t) = dev.scan_oob(ppn, start, Cause::Mapping);
            probes += 1;
            done = done.max(t);
            match oob {
                PageOob::Erased => break,
                PageOob::Torn => {}
                PageOob::Programmed { lpn, seq } => {
                    let x = lpn.0 as usize;
                    if x < newest.len() && seq >= seqs[x] {
                        (newest[x], seqs[x]) = (ppn.0, seq);
                    }
                }
            }
            written[b as usize] = page + 1;
        }
    }
    let mut trimmed = vec![false; logical as usize];
    for (x, t) in trimmed.iter_mut().enumerate() {
        if newest[x] != NONE && seqs[x] < dev.array.trim_log.trimmed_at(x as u32) {
            (newest[x], *t) = (NONE, true);
        }
    }
    let mut valid = vec![0u32; geo.blocks as usize];
    for &p in newest.iter().filter(|&&p| p != NONE) {
        valid[geo.block_of(Ppn(p)).idx()] += 1;
    }
    let report = RecoveryReport {
        at_s: cut.as_secs_f64(),
        recovery_us: (done - start).as_us_f64(),
        pages_read: probes + log_pages,
        log_pages_read: log_pages,
        pages_scanned: probes,
        pages_torn: torn,
        wall_ms: wall.elapsed().as_secs_f64() * 1e3,
        recovered_at: done,
        ..RecoveryReport::default()
    };
    Ok(Scan { newest, trimmed, written, valid, report })
}

/// TRIMs since the last FLUSH, journalled to the drive's TRIM log at the
/// next one (see the module doc). Inert on a drive that records no program
/// sequence (no power cut can be made on it).
#[derive(Default, Serialize, Deserialize)]
pub struct TrimJournal {
    on: bool,
    pending: Vec<(u32, u64)>,
}

impl TrimJournal {
    pub fn new(dev: &Device) -> TrimJournal {
        TrimJournal { on: dev.array.records_sequence(), pending: Vec::new() }
    }

    /// `lpn` was trimmed now: data programmed from now on is newer.
    #[inline]
    pub fn trimmed(&mut self, dev: &Device, lpn: u32) {
        if self.on {
            self.pending.push((lpn, dev.array.next_seq()));
        }
    }

    /// A FLUSH: appends the pending TRIMs to the log; returns when its
    /// pages are programmed.
    pub fn flush(&mut self, dev: &mut Device, now: SimTime) -> SimTime {
        if self.pending.is_empty() {
            return now;
        }
        let pages = dev.array.trim_log.append(&self.pending, dev.geometry().page_size);
        self.pending.clear();
        dev.system_program(pages, now)
    }

    /// A block is about to be erased: pending TRIMs are journalled first,
    /// or a page they removed could be erased while an older copy of it
    /// stays on flash, to come back after a cut. Returns when the erase
    /// may start.
    #[inline]
    pub fn before_erase(&mut self, dev: &mut Device, now: SimTime) -> SimTime {
        if self.pending.is_empty() { now } else { self.flush(dev, now) }
    }

    /// Power failed: the pending TRIMs are lost.
    pub fn lose(&mut self) {
        self.pending.clear();
    }
}
