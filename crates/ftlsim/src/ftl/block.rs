//! `block`: pure block mapping, the classic baseline (the "BL" scheme of
//! Chang et al.; the block-mapped half of every hybrid FTL).
//!
//! A logical block (per chip, see [`super::striping`]) maps to one physical
//! data block, where each logical page lives at its fixed offset. Writing an
//! offset at or above the block's write pointer programs it in place (holes
//! below it padded, as NAND pages are programmed in order); writing an
//! offset below it, i.e. rewriting, copies the block's live pages and the
//! new data in order to a free block and erases the old one: one full merge
//! per logical block a request rewrites, whatever number of its pages it
//! rewrites.
//!
//! Invariants: a key's live pages are all in its data block, at their
//! offsets. Modelled RAM: 4 B per logical block, plus the TRIM structure.

use super::hybrid::{Hybrid, core_delegates};
use super::{Ftl, FtlStats, PageChunk, Span, page_chunks};
use crate::config::Config;
use crate::engine::{Cause, Device};
use crate::error::Result;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct BlockFtl {
    core: Hybrid,
    /// The current request's pages, grouped by logical block (reused).
    group: Vec<(u32, u32, PageChunk)>,
}

impl BlockFtl {
    pub fn new(cfg: &Config, dev: &Device) -> Result<BlockFtl> {
        Ok(BlockFtl { core: Hybrid::new(cfg, dev, 0, "overprovisioning")?, group: Vec::new() })
    }

    /// Writes a request's pages of one logical block (ascending offsets).
    fn write_key(
        &mut self,
        dev: &mut Device,
        key: u32,
        pages: &[(u32, u32, PageChunk)],
        ready: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime> {
        let core = &mut self.core;
        let old = core.data_block(key);
        let rewrite = old.is_some_and(|b| pages[0].1 < core.written(dev, b));
        let target = match old {
            Some(b) if !rewrite => b,
            _ => core.alloc(core.stripes.chip_of(key))?,
        };
        if rewrite {
            core.realize_trims(key, 0, ready);
        }
        let mut done = ready;
        for &(_, off, chunk) in pages {
            let start = core.prepare(dev, chunk, ready, data)?;
            // Offsets below `off` without new data: live copies (rewrite) or pads.
            let filled = core.fill(dev, key, target, off, ready)?;
            done = done.max(core.program_host(dev, core.geo.ppn(target, off), chunk.lpn, start.max(filled))?);
        }
        core.set_data_block(key, Some(target));
        if let Some(old) = old.filter(|_| rewrite) {
            core.stats.merges_full += 1;
            let end = core.live_end(key);
            done = done.max(core.fill(dev, key, target, end, ready)?);
            done = done.max(core.erase(dev, old, done, Cause::Merge)?);
        }
        Ok(done)
    }
}

impl Ftl for BlockFtl {
    core_delegates!();

    fn name(&self) -> &'static str {
        "block"
    }

    fn write(
        &mut self,
        dev: &mut Device,
        span: Span,
        _now: SimTime,
        ready: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime> {
        self.core.unlist_span(span, ready);
        let mut group = std::mem::take(&mut self.group);
        group.clear();
        group.extend(page_chunks(span, self.core.geo.sectors_per_page).map(|c| {
            let (key, off) = self.core.stripes.locate(c.lpn);
            (key, off, c)
        }));
        // Stable: a key's pages stay in ascending offset order.
        group.sort_by_key(|&(key, ..)| key);
        let mut done = ready;
        let mut result = Ok(());
        for run in group.chunk_by(|a, b| a.0 == b.0) {
            match self.write_key(dev, run[0].0, run, ready, data) {
                Ok(t) => done = done.max(t),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.group = group;
        result.map(|()| done)
    }

    fn trim(&mut self, dev: &mut Device, span: Span, now: SimTime) -> Result<SimTime> {
        let mut done = now;
        for key in self.core.trim(dev, span) {
            done = done.max(self.core.drop_dead_data(dev, key, now)?);
        }
        Ok(done)
    }

    fn mapping_ram_bytes(&self) -> u64 {
        self.core.ram_bytes()
    }

    fn check_invariants(&self, dev: &Device) -> Result<()> {
        self.core.check_invariants(dev, |_, _| false)
    }

    fn power_cut(&mut self, dev: &mut Device, now: SimTime) -> Result<super::RecoveryReport> {
        self.core.recover(dev, now)
    }
}

#[cfg(test)]
mod tests {
    use super::super::hybrid::testing::{Cost, cost, drive, trim, write};

    #[test]
    fn in_place_writes_then_a_rewrite_copies_the_block() {
        let (mut f, mut d) = drive("block", &[]);
        let fill = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[0, 1, 2, 3]));
        assert_eq!(fill, Cost { copies: 0, erases: 0, kinds: [0, 0, 0] });
        let rewrite = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[1]));
        assert_eq!(rewrite, Cost { copies: 3, erases: 1, kinds: [0, 0, 1] }, "N - 1 copies + new data");
    }

    #[test]
    fn holes_are_padded_and_trimmed_tails_dropped() {
        let (mut f, mut d) = drive("block", &[]);
        write(f.as_mut(), &mut d, &[2]);
        assert_eq!(f.stats().pages_padded, 2, "offsets 0 and 1 padded to program offset 2 in order");
        write(f.as_mut(), &mut d, &[3]);
        trim(f.as_mut(), &mut d, 3, 1);
        let c = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[0]));
        assert_eq!(c, Cost { copies: 1, erases: 1, kinds: [0, 0, 1] }, "offset 2 copied, trimmed 3 not");
        assert_eq!(f.stats().trim_copies_saved, 1);
    }
}
