//! `bast`: the log-block scheme of Kim, Kim, Noh, Min and Cho, "A
//! space-efficient flash translation layer for CompactFlash systems" (2002),
//! called BAST (block-associative sector translation) by later papers.
//!
//! Data blocks are block-mapped (see [`super::hybrid`]). Every host page
//! goes to its logical block's own log block, appended at the log's write
//! pointer whatever its offset. Each chip has `ftl.log_blocks` log blocks;
//! a log block is merged when it is full or when another logical block
//! needs a log and none is free (the oldest-allocated log is the victim):
//! a switch merge if it holds offsets 0..N−1 in order, a partial merge if it
//! holds 0..k−1 in order, a full merge otherwise (see [`super::merge`]).
//! Associativity is always 1.
//!
//! Invariants: a key's live pages are in its data block (at their offsets)
//! or its log block. Modelled RAM: the data-block map, per log block its
//! owner (4 B) and a page table (2 B per page), and the TRIM structure.

use super::hybrid::{Hybrid, NONE, PageWrites, core_delegates};
use super::merge;
use super::{Ftl, FtlStats, PageChunk, Span};
use crate::config::Config;
use crate::engine::{Cause, Device};
use crate::error::Result;
use crate::units::{BlockId, SimTime};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Serialize, Deserialize)]
pub struct Bast {
    core: Hybrid,
    /// Log block of each key, or [`NONE`].
    log_of: Vec<u32>,
    /// Per chip: keys owning a log block, oldest allocation first.
    owners: Vec<VecDeque<u32>>,
    max_logs: u32,
}

impl Bast {
    pub fn new(cfg: &Config, dev: &Device) -> Result<Bast> {
        let core = Hybrid::new(cfg, dev, cfg.ftl.log_blocks, "ftl.log_blocks")?;
        Ok(Bast {
            log_of: vec![NONE; core.stripes.keys() as usize],
            owners: vec![VecDeque::new(); core.stripes.chips() as usize],
            max_logs: cfg.ftl.log_blocks,
            core,
        })
    }

    fn log(&self, key: u32) -> Option<BlockId> {
        (self.log_of[key as usize] != NONE).then(|| BlockId(self.log_of[key as usize]))
    }

    /// Detaches `key`'s log block from the key.
    fn take_log(&mut self, key: u32) -> Option<BlockId> {
        let log = self.log(key)?;
        self.log_of[key as usize] = NONE;
        let owners = &mut self.owners[self.core.stripes.chip_of(key) as usize];
        owners.retain(|&k| k != key);
        Some(log)
    }

    /// `key`'s log block with a free page, merging a full log or a victim
    /// first; returns it and when the merges are done.
    fn log_with_room(&mut self, dev: &mut Device, key: u32, now: SimTime) -> Result<(BlockId, SimTime)> {
        let mut t = now;
        if let Some(log) = self.log(key) {
            if self.core.written(dev, log) < self.core.ppb() {
                return Ok((log, t));
            }
            t = self.merge(dev, key, now)?;
        }
        let chip = self.core.stripes.chip_of(key);
        if self.owners[chip as usize].len() as u32 >= self.max_logs {
            let victim = self.owners[chip as usize][0];
            t = t.max(self.merge(dev, victim, now)?);
        }
        let b = self.core.alloc(chip)?;
        self.log_of[key as usize] = b.0;
        self.owners[chip as usize].push_back(key);
        Ok((b, t))
    }

    /// Merges `key`'s log block: switch, partial or full.
    fn merge(&mut self, dev: &mut Device, key: u32, now: SimTime) -> Result<SimTime> {
        let Some(log) = self.take_log(key) else { return Ok(now) };
        let core = &mut self.core;
        core.record_log_merge(1);
        if merge::in_order(core, dev, key, log) {
            return merge::promote(core, dev, key, log, now);
        }
        core.stats.merges_full += 1;
        let t = merge::rebuild(core, dev, key, now)?;
        core.erase(dev, log, t, Cause::Merge)
    }
}

impl PageWrites for Bast {
    fn core_mut(&mut self) -> &mut Hybrid {
        &mut self.core
    }

    fn write_page(&mut self, dev: &mut Device, c: PageChunk, ready: SimTime, data: Option<&[u8]>) -> Result<SimTime> {
        let (key, _) = self.core.stripes.locate(c.lpn);
        let start = self.core.prepare(dev, c, ready, data)?;
        let (log, merged) = self.log_with_room(dev, key, ready)?;
        let ppn = self.core.geo.ppn(log, self.core.written(dev, log));
        self.core.program_host(dev, ppn, c.lpn, start.max(merged))
    }
}

impl Ftl for Bast {
    core_delegates!();

    fn name(&self) -> &'static str {
        "bast"
    }

    fn write(
        &mut self,
        dev: &mut Device,
        span: Span,
        _now: SimTime,
        ready: SimTime,
        data: Option<&[u8]>,
    ) -> Result<SimTime> {
        self.write_span(dev, span, ready, data)
    }

    fn trim(&mut self, dev: &mut Device, span: Span, now: SimTime) -> Result<SimTime> {
        let mut done = now;
        for key in self.core.trim(dev, span) {
            if let Some(log) = self.take_log(key) {
                done = done.max(self.core.erase(dev, log, now, Cause::Gc)?);
            }
            done = done.max(self.core.drop_dead_data(dev, key, now)?);
        }
        Ok(done)
    }

    fn mapping_ram_bytes(&self) -> u64 {
        let logs = self.max_logs as u64 * self.core.stripes.chips() as u64;
        self.core.ram_bytes() + logs * (4 + 2 * self.core.ppb() as u64)
    }

    fn check_invariants(&self, dev: &Device) -> Result<()> {
        for (chip, owners) in self.owners.iter().enumerate() {
            if owners.len() as u32 > self.max_logs || owners.iter().any(|&k| self.log(k).is_none()) {
                return Err(crate::Error::invariant(
                    "bast",
                    format!("chip {chip}: log owners {owners:?} inconsistent"),
                ));
            }
        }
        self.core.check_invariants(dev, |key, block| self.log(key) == Some(block))
    }

    /// Recovery merges every log block away ([`Hybrid::recover`]).
    fn power_cut(&mut self, dev: &mut Device, now: SimTime) -> Result<super::RecoveryReport> {
        let report = self.core.recover(dev, now)?;
        self.log_of.fill(NONE);
        self.owners.iter_mut().for_each(VecDeque::clear);
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::super::hybrid::testing::{Cost, cost, drive, trim, write};

    /// One log block per chip: a second logical block's write merges the first's log.
    const ONE_LOG: &[&str] = &["ftl.log_blocks=1"];

    #[test]
    fn switch_merge_is_one_erase() {
        let (mut f, mut d) = drive("bast", ONE_LOG);
        write(f.as_mut(), &mut d, &[0, 1, 2, 3]);
        let first = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[4]));
        assert_eq!(first, Cost { copies: 0, erases: 0, kinds: [1, 0, 0] }, "no old data block yet");
        // Key 1's one-page log is partial-merged here, before key 0 takes the log.
        write(f.as_mut(), &mut d, &[0, 1, 2, 3]);
        let second = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[5]));
        assert_eq!(second, Cost { copies: 0, erases: 1, kinds: [1, 0, 0] }, "the old data block erased");
    }

    #[test]
    fn partial_merge_copies_the_rest() {
        let (mut f, mut d) = drive("bast", ONE_LOG);
        write(f.as_mut(), &mut d, &[0, 1, 2, 3, 4]); // key 0 switched in, full
        write(f.as_mut(), &mut d, &[0, 1]); // key 0's log: offsets 0, 1 in order
        let c = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[5]));
        assert_eq!(c, Cost { copies: 2, erases: 1, kinds: [0, 1, 0] }, "N - k = 2 copies, 1 erase");
    }

    #[test]
    fn full_merge_is_n_copies_and_two_erases() {
        let (mut f, mut d) = drive("bast", ONE_LOG);
        write(f.as_mut(), &mut d, &[0, 1, 2, 3, 4]);
        write(f.as_mut(), &mut d, &[1, 0]);
        let c = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[5]));
        assert_eq!(c, Cost { copies: 4, erases: 2, kinds: [0, 0, 1] }, "N reads + N writes, 2 erases");
    }

    #[test]
    fn trimmed_pages_are_not_copied() {
        let (mut f, mut d) = drive("bast", ONE_LOG);
        write(f.as_mut(), &mut d, &[0, 1, 2, 3, 4]);
        write(f.as_mut(), &mut d, &[1, 0]);
        trim(f.as_mut(), &mut d, 2, 2);
        let c = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[5]));
        assert_eq!(c, Cost { copies: 2, erases: 2, kinds: [0, 0, 1] }, "offsets 2 and 3 trimmed");
        assert_eq!(f.stats().trim_copies_saved, 2);
        assert_eq!(f.stats().trim_list_entries, 0, "the merge realized the list");
    }
}
