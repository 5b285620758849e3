//! Crash recovery of the block-mapped FTLs (`block`, `bast`, `fast`).
//!
//! After a power cut the data-block map, the log blocks' page maps and the
//! TRIM list are gone. Recovery scans every programmed page's OOB
//! ([`recovery::scan`](crate::ftl::recovery::scan)), keeping each logical
//! page's newest readable copy (a pad holds no data and counts as older
//! than any), then brings the drive back to a state with no log blocks:
//!
//! 1. blocks holding no newest copy are erased;
//! 2. a logical block whose newest pages all sit at their offsets of one
//!    block, alone, keeps that block as its data block;
//! 3. any other is full-merged into a new data block (its newest copies
//!    copied in offset order, holes padded), and the blocks it leaves
//!    empty are erased at once, so a chip never needs more than the one
//!    free block a merge builds into.
//!
//! Every read, copy and erase is timed on the device and counted as a
//! merge; the report's `recovery_us` runs to the last of them. Each scheme
//! then forgets its log blocks ([`Hybrid::recover`]'s caller).
//!
//! Simplification: the scan reads every programmed page (no checkpoint of
//! the data-block map bounds it).

use super::{Hybrid, NEVER, NONE, TRIMMED};
use crate::engine::{Cause, Device};
use crate::error::Result;
use crate::ftl::RecoveryReport;
use crate::ftl::recovery::{self, NONE as NO_COPY};
use crate::units::{BlockId, Lpn, SimTime};

impl Hybrid {
    /// Rebuilds the data-block map from flash after a power cut at `now`,
    /// merging away every log block.
    pub fn recover(&mut self, dev: &mut Device, now: SimTime) -> Result<RecoveryReport> {
        let logical = self.fwd.len() as u32;
        let scan = recovery::scan(dev, now, logical, logical)?;
        self.journal.lose();
        for (x, &p) in scan.newest.iter().enumerate() {
            self.fwd[x] = match p {
                NO_COPY if scan.trimmed[x] => TRIMMED,
                NO_COPY => NEVER,
                p => p,
            };
        }
        if let Some(list) = self.trims.as_mut() {
            for (s, e) in self.stripes.chip_ranges(0, logical) {
                list.remove(s, e);
            }
        }
        self.data.fill(NONE);
        let mut report = scan.report;
        let t = report.recovered_at;
        self.pool.restore_in_use(&scan.written, &scan.valid);
        let mut done = t;
        for b in (0..self.geo.blocks).map(BlockId) {
            if scan.written[b.idx()] > 0 && scan.valid[b.idx()] == 0 {
                done = done.max(self.erase(dev, b, t, Cause::Merge)?);
            }
        }
        for key in 0..self.stripes.keys() {
            done = done.max(self.recover_key(dev, key, t)?);
        }
        report.recovery_us += (done - t).as_us_f64();
        report.recovered_at = done;
        Ok(report)
    }

    /// Gives `key` its data block back: the block holding all its newest
    /// pages at their offsets, or a new one they are merged into.
    fn recover_key(&mut self, dev: &mut Device, key: u32, t: SimTime) -> Result<SimTime> {
        let mut homes: Vec<BlockId> = Vec::new();
        let mut in_place = true;
        for off in 0..self.ppb() {
            let Some(lpn) = self.stripes.lpn(key, off) else { break };
            if let Some(p) = self.live(lpn) {
                let b = self.geo.block_of(p);
                in_place &= self.geo.page_in_block(p) == off;
                if !homes.contains(&b) {
                    homes.push(b);
                }
            }
        }
        let Some(&home) = homes.first() else { return Ok(t) };
        if homes.len() == 1 && in_place && self.holds_only(dev, key, home) {
            self.set_data_block(key, Some(home));
            return Ok(t);
        }
        let into = self.alloc(self.stripes.chip_of(key))?;
        let end = self.live_end(key);
        let mut done = self.fill(dev, key, into, end, t)?;
        self.stats.merges_full += 1;
        self.set_data_block(key, Some(into));
        for b in homes {
            if self.pool.valid(b) == 0 {
                done = done.max(self.erase(dev, b, done, Cause::Merge)?);
            }
        }
        Ok(done)
    }

    /// Whether every newest copy in `b` is a page of `key`.
    fn holds_only(&self, dev: &Device, key: u32, b: BlockId) -> bool {
        (0..dev.array.written_pages(b)).all(|i| {
            let ppn = self.geo.ppn(b, i);
            match dev.array.oob_lpn(ppn) {
                Some(l) if l.0 < self.fwd.len() as u32 && self.maps_to(Lpn(l.0), ppn) => {
                    self.stripes.locate(l).0 == key
                }
                _ => true,
            }
        })
    }
}
