//! μ-FTL's crash recovery: a full OOB scan that rebuilds the μ-Tree from
//! the data pages.
//!
//! The paper's structure suggests another recovery: the μ-Tree is on
//! flash, each update writes a leaf-to-root path into a new page, so the
//! last root written plus a scan of the pages programmed since would do.
//! It is not taken here, for two reasons. The model's tree pages carry no
//! contents (nodes live only in the simulator's arena), so trusting them
//! would mean keeping a copy of every node version ever written. And the
//! last durable tree is not a safe base: GC moves extents and erases its
//! victims between write-backs, so the old tree points at erased and
//! reused pages, and the data written since lies in any block GC or a
//! partition opened, so the scan that corrects it reaches most of the
//! drive anyway. The design taken is the one `page`, `dac` and
//! `superblock` use, and is correct for the same reasons
//! ([`crate::ftl::recovery`]):
//!
//! 1. [`recovery::scan`] reads every programmed page's OOB and keeps each
//!    logical page's newest readable copy. Tree pages are told apart by
//!    their OOB LPN, the tree's tag just past the logical space
//!    ([`MuTree::tag`]): the scan counts them written but maps nothing to
//!    them, so every old tree page is garbage.
//! 2. Blocks left without a newest copy (every old tree block, stale or
//!    torn data blocks) are erased; each other block's invalid counter is
//!    its written pages (torn ones included) less its newest copies.
//! 3. A new tree gets the extents, each a maximal run of logical pages
//!    contiguous on flash within one block, and a bitmap entry for every
//!    sub-block with an invalid page (the bitmap cache, RAM, starts empty).
//! 4. A partly written data block becomes its partition's update block
//!    again (another one of the same partition is closed).
//! 5. The whole rebuilt tree is written back (one page per leaf, each with
//!    its path) before the drive serves commands, so the read and write
//!    caches start empty and within budget.
//!
//! Cost: every programmed page's OOB read (the scan's bound), the erases
//! of step 2 and the tree's programs of step 5, all in `recovery_us`;
//! `pages_scanned` and `pages_read` are the scan's. What a cut may lose
//! after the last FLUSH: the controller's write buffer, programs torn in
//! flight, and TRIMs not yet journalled (undone: the page reads its data
//! from before the TRIM). The tree's write cache and the bitmap cache are
//! lost but nothing depends on them; data the FTL programmed survives
//! whether or not a FLUSH followed.

use super::tree::MuTree;
use super::{BITMAP_KEYS, Mu, SUB_BLOCK, pack};
use crate::engine::{Cause, Device};
use crate::error::Result;
use crate::ftl::recovery::{self, RecoveryReport};
use crate::units::{BlockId, Lpn, Ppn, SimTime};

impl Mu {
    /// Power fails at `now`: rebuilds everything from a scan of flash (see
    /// the module doc).
    pub(super) fn recover(&mut self, dev: &mut Device, now: SimTime) -> Result<RecoveryReport> {
        let scan = recovery::scan(dev, now, self.logical, self.logical)?;
        self.journal.lose();
        self.forget_ram();
        let mut report = scan.report;
        let t = report.recovered_at;
        let partial = self.space.pool.restore(&scan.written, &scan.valid, t);
        for b in (0..self.geo.blocks).map(BlockId) {
            let (written, valid) = (scan.written[b.idx()], scan.valid[b.idx()]);
            if written > 0 && valid == 0 {
                dev.erase(b, t, Cause::Gc)?;
                self.space.release(b)?;
            } else {
                self.space.invalid[b.idx()] = (written - valid) as u8;
            }
        }
        let owner = self.rebuild_extents(&scan.newest);
        self.rebuild_bitmaps(&scan.newest, &scan.written, &scan.valid);
        for b in partial.into_iter().filter(|b| scan.valid[b.idx()] > 0) {
            let part = owner[b.idx()];
            if self.parts.update_block(part).is_none() {
                self.parts.set_update_block(part, Some(b));
            } else {
                self.close(b, t);
            }
        }
        self.write_back(dev, true, t)?;
        self.erase_wholly_invalid(dev, t)?;
        let done = dev.last_unit_end().max(t);
        report.recovery_us += (done - t).as_us_f64();
        report.recovered_at = done;
        Ok(report)
    }

    /// Drops every RAM structure: the tree (its counters kept), both its
    /// caches, the bitmap cache, the invalid counters, the update blocks.
    fn forget_ram(&mut self) {
        let (read, write) = self.tree.cache_pages();
        let stats = std::mem::take(&mut self.tree.stats);
        self.tree = MuTree::new(&self.geo, read as u32, write as u32, self.tree.tag(), BITMAP_KEYS);
        self.tree.stats = stats;
        self.bitmaps.clear();
        self.parts.clear();
        self.space.invalid.fill(0);
        self.to_erase.clear();
        self.prefetched = super::no_prefetches();
    }

    /// Inserts the extents of the map the scan found (`newest` per logical
    /// page), each a maximal run contiguous on flash in one block; returns
    /// the partition owning each block (a block holds one partition's pages).
    fn rebuild_extents(&mut self, newest: &[u32]) -> Vec<u32> {
        let mut owner = vec![u32::MAX; self.geo.blocks as usize];
        let mut lpn = 0;
        while lpn < self.logical {
            let p = newest[lpn as usize];
            if p == recovery::NONE {
                lpn += 1;
                continue;
            }
            let mut n = 1;
            while lpn + n < self.logical && newest[(lpn + n) as usize] == p + n && self.same_block(p, p + n) {
                n += 1;
            }
            owner[self.geo.block_of(Ppn(p)).idx()] = self.parts.of(Lpn(lpn));
            self.tree.insert(lpn, pack(p, n));
            lpn += n;
        }
        owner
    }

    /// Inserts a bitmap entry for every sub-block of a data block with a
    /// written page that holds no newest copy (torn pages included).
    fn rebuild_bitmaps(&mut self, newest: &[u32], written: &[u32], valid: &[u32]) {
        let subs = self.subs as usize;
        let mut bits = vec![0u32; self.geo.blocks as usize * subs];
        for (b, &w) in written.iter().enumerate() {
            if valid[b] > 0 {
                for i in 0..w {
                    bits[b * subs + (i / SUB_BLOCK) as usize] |= 1 << (i % SUB_BLOCK);
                }
            }
        }
        for &p in newest.iter().filter(|&&p| p != recovery::NONE) {
            let (b, i) = (self.geo.block_of(Ppn(p)).idx(), self.geo.page_in_block(Ppn(p)));
            bits[b * subs + (i / SUB_BLOCK) as usize] &= !(1 << (i % SUB_BLOCK));
        }
        for (k, &v) in bits.iter().enumerate().filter(|(_, v)| **v != 0) {
            self.tree.insert(BITMAP_KEYS + k as u32, v);
        }
    }
}
