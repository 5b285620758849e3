//! `fast`: fully associative sector translation, Lee, Park, Chung, Lee,
//! Park and Song, "A log buffer-based flash translation layer using
//! fully-associative sector translation" (2007), with TRIM as in Kim, Kim,
//! Lee and Won, "FTL Design for TRIM Command" (1 sequential + 4 random log
//! blocks per chip there: `ftl.seq_log_blocks`, `ftl.rand_log_blocks`).
//!
//! Data blocks are block-mapped (see [`super::hybrid`]). A page's first
//! write goes **in place**, to its offset of the data block, when that
//! offset is still free (at or past the block's write pointer, with no live
//! page below it to move); the block is allocated on the key's first write.
//! Every other write is an update and goes to a log. Per chip:
//! - the **sequential log** takes a write at offset 0 (merging the previous
//!   sequential log first) and the writes that continue it in order; once
//!   full it is switched in, and a partly written one is partial-merged
//!   when the next offset-0 write arrives;
//! - every other write is appended to the **random logs**, shared by all
//!   logical blocks of the chip. When they are all full, the oldest is the
//!   victim: every logical block with a live page in it (its associativity
//!   A) gets a full merge, its live pages gathered from data and log blocks
//!   into a fresh block (A·N copies, A erases), then the victim is erased.
//!   A sequential log whose logical block is merged this way is emptied by
//!   it and erased too.
//!
//! Invariants: a key's live pages are in its data block (at their offsets),
//! its chip's sequential log (if it owns it) or its chip's random logs.
//! Modelled RAM: the data-block map, a 4 B page map entry per random-log
//! page, 8 B per sequential log, and the TRIM structure.

use super::hybrid::{Hybrid, PageWrites, core_delegates};
use super::merge;
use super::{Ftl, FtlStats, PageChunk, Span};
use crate::config::Config;
use crate::engine::{Cause, Device};
use crate::error::Result;
use crate::units::{BlockId, Lpn, Ppn, SimTime};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Serialize, Deserialize)]
pub struct Fast {
    core: Hybrid,
    /// Per chip: the sequential log block and the key it belongs to.
    seq_log: Vec<Option<(u32, BlockId)>>,
    /// Per chip: random log blocks, oldest first; the last is being written.
    rand_logs: Vec<VecDeque<BlockId>>,
    seq_enabled: bool,
    max_rand: u32,
    /// Keys associated with a victim (reused allocation).
    assoc: Vec<u32>,
}

impl Fast {
    pub fn new(cfg: &Config, dev: &Device) -> Result<Fast> {
        let f = &cfg.ftl;
        let core = Hybrid::new(cfg, dev, f.seq_log_blocks + f.rand_log_blocks, "ftl.rand_log_blocks")?;
        let chips = core.stripes.chips() as usize;
        Ok(Fast {
            seq_log: vec![None; chips],
            rand_logs: vec![VecDeque::new(); chips],
            seq_enabled: f.seq_log_blocks > 0,
            max_rand: f.rand_log_blocks,
            assoc: Vec::new(),
            core,
        })
    }

    /// Classic FAST's first write: `lpn` has no live copy and its offset of
    /// the data block is free, with only holes (no live page) below it;
    /// returns `None` when the write is an update for the logs.
    fn write_in_place(
        &mut self,
        dev: &mut Device,
        key: u32,
        off: u32,
        lpn: Lpn,
        start: SimTime,
    ) -> Result<Option<SimTime>> {
        let core = &mut self.core;
        if core.live(lpn).is_some() {
            return Ok(None);
        }
        let wp = core.data_block(key).map_or(0, |b| core.written(dev, b));
        if wp > off {
            return Ok(None);
        }
        for o in wp..off {
            if core.live(core.lpn(key, o)?).is_some() {
                return Ok(None);
            }
        }
        let b = match core.data_block(key) {
            Some(b) => b,
            None => {
                let b = core.alloc(core.stripes.chip_of(key))?;
                core.set_data_block(key, Some(b));
                b
            }
        };
        let filled = core.fill(dev, key, b, off, start)?;
        core.program_host(dev, core.geo.ppn(b, off), lpn, start.max(filled)).map(Some)
    }

    /// Switch or partial merge of the chip's sequential log, if any.
    fn close_seq(&mut self, dev: &mut Device, chip: usize, now: SimTime) -> Result<SimTime> {
        let Some((key, b)) = self.seq_log[chip].take() else { return Ok(now) };
        self.core.record_log_merge(1);
        merge::promote(&mut self.core, dev, key, b, now)
    }

    /// The next page of the chip's random logs, merging the oldest first
    /// when all are full; returns it and when the merge is done.
    fn rand_page(&mut self, dev: &mut Device, chip: usize, now: SimTime) -> Result<(Ppn, SimTime)> {
        if let Some(&b) = self.rand_logs[chip].back() {
            let w = self.core.written(dev, b);
            if w < self.core.ppb() {
                return Ok((self.core.geo.ppn(b, w), now));
            }
        }
        let mut t = now;
        if self.rand_logs[chip].len() as u32 >= self.max_rand {
            let victim = self.rand_logs[chip].pop_front().expect("full random logs");
            t = self.merge_victim(dev, chip, victim, now)?;
        }
        let b = self.core.alloc(chip as u32)?;
        self.rand_logs[chip].push_back(b);
        Ok((self.core.geo.ppn(b, 0), t))
    }

    /// Full merge of every logical block with a page in `victim`, then its erase.
    fn merge_victim(&mut self, dev: &mut Device, chip: usize, victim: BlockId, now: SimTime) -> Result<SimTime> {
        let mut keys = std::mem::take(&mut self.assoc);
        keys.clear();
        for i in 0..self.core.written(dev, victim) {
            let ppn = self.core.geo.ppn(victim, i);
            match dev.array.oob_lpn(ppn) {
                Some(lpn) if self.core.maps_to(lpn, ppn) => keys.push(self.core.stripes.locate(lpn).0),
                _ => {}
            }
        }
        keys.sort_unstable();
        keys.dedup();
        if !keys.is_empty() {
            // One full merge per data block rebuilt, as BAST counts them.
            self.core.stats.merges_full += keys.len() as u64;
            self.core.record_log_merge(keys.len() as u64);
        }
        let mut t = now;
        let mut result = Ok(());
        for &key in &keys {
            if let Err(e) = self.full_merge(dev, chip, key, now).map(|d| t = t.max(d)) {
                result = Err(e);
                break;
            }
        }
        self.assoc = keys;
        result?;
        self.core.erase(dev, victim, t, Cause::Merge)
    }

    /// Gathers `key`'s live pages into a fresh data block; a sequential log
    /// of the key is left without live pages and erased.
    fn full_merge(&mut self, dev: &mut Device, chip: usize, key: u32, now: SimTime) -> Result<SimTime> {
        let t = merge::rebuild(&mut self.core, dev, key, now)?;
        match self.seq_log[chip] {
            Some((k, b)) if k == key => {
                self.seq_log[chip] = None;
                self.core.erase(dev, b, t, Cause::Merge)
            }
            _ => Ok(t),
        }
    }
}

impl PageWrites for Fast {
    fn core_mut(&mut self) -> &mut Hybrid {
        &mut self.core
    }

    fn write_page(&mut self, dev: &mut Device, c: PageChunk, ready: SimTime, data: Option<&[u8]>) -> Result<SimTime> {
        let (key, off) = self.core.stripes.locate(c.lpn);
        let chip = self.core.stripes.chip_of(key) as usize;
        let start = self.core.prepare(dev, c, ready, data)?;
        if let Some(done) = self.write_in_place(dev, key, off, c.lpn, start)? {
            return Ok(done);
        }
        let continues = matches!(self.seq_log[chip], Some((k, b)) if k == key && self.core.written(dev, b) == off);
        if self.seq_enabled && (off == 0 || continues) {
            let mut t = ready;
            if off == 0 {
                t = self.close_seq(dev, chip, ready)?;
                self.seq_log[chip] = Some((key, self.core.alloc(chip as u32)?));
            }
            let (_, b) = self.seq_log[chip].expect("opened above");
            let done = self.core.program_host(dev, self.core.geo.ppn(b, off), c.lpn, start.max(t))?;
            if off + 1 == self.core.ppb() {
                return self.close_seq(dev, chip, done);
            }
            return Ok(done);
        }
        let (ppn, t) = self.rand_page(dev, chip, ready)?;
        self.core.program_host(dev, ppn, c.lpn, start.max(t))
    }
}

impl Ftl for Fast {
    core_delegates!();

    fn name(&self) -> &'static str {
        "fast"
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
            let chip = self.core.stripes.chip_of(key) as usize;
            if let Some((k, b)) = self.seq_log[chip] {
                if k == key && self.core.pool.valid(b) == 0 {
                    self.seq_log[chip] = None;
                    done = done.max(self.core.erase(dev, b, now, Cause::Gc)?);
                }
            }
            done = done.max(self.core.drop_dead_data(dev, key, now)?);
        }
        Ok(done)
    }

    fn mapping_ram_bytes(&self) -> u64 {
        let chips = self.core.stripes.chips() as u64;
        let rand_pages = self.max_rand as u64 * chips * self.core.ppb() as u64;
        self.core.ram_bytes() + rand_pages * 4 + self.seq_enabled as u64 * chips * 8
    }

    fn check_invariants(&self, dev: &Device) -> Result<()> {
        self.core.check_invariants(dev, |key, block| {
            let chip = self.core.stripes.chip_of(key) as usize;
            self.seq_log[chip] == Some((key, block)) || self.rand_logs[chip].contains(&block)
        })
    }

    /// Recovery merges every log block away ([`Hybrid::recover`]).
    fn power_cut(&mut self, dev: &mut Device, now: SimTime) -> Result<super::RecoveryReport> {
        let report = self.core.recover(dev, now)?;
        self.seq_log.fill(None);
        self.rand_logs.iter_mut().for_each(VecDeque::clear);
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::super::hybrid::testing::{Cost, cost, drive, trim, write};

    /// One sequential and one random log block per chip.
    const SMALL: &[&str] = &["ftl.rand_log_blocks=1"];

    #[test]
    fn first_writes_go_in_place_and_updates_to_the_logs() {
        let (mut f, mut d) = drive("fast", SMALL);
        let first = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[0, 1, 2, 3, 6]));
        assert_eq!(first, Cost { copies: 0, erases: 0, kinds: [0, 0, 0] }, "in place, no log, no merge");
        assert_eq!(f.stats().pages_padded, 2, "offsets 0 and 1 of key 1 padded below offset 2");
        // Offset 3 of key 1 is still free: in place. Offset 0 of key 1 is not: a log.
        let c = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[7, 4]));
        assert_eq!((c, f.stats().log_merges), (Cost { copies: 0, erases: 0, kinds: [0, 0, 0] }, 0));
    }

    #[test]
    fn sequential_log_switches_in() {
        let (mut f, mut d) = drive("fast", SMALL);
        write(f.as_mut(), &mut d, &[0, 1, 2, 3]);
        let again = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[0, 1, 2, 3]));
        assert_eq!(again, Cost { copies: 0, erases: 1, kinds: [1, 0, 0] }, "old data block erased");
    }

    #[test]
    fn partial_merge_of_the_sequential_log() {
        let (mut f, mut d) = drive("fast", SMALL);
        write(f.as_mut(), &mut d, &[0, 1, 2, 3, 4, 5, 6, 7, 0, 1]);
        let c = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[4]));
        assert_eq!(c, Cost { copies: 2, erases: 1, kinds: [0, 1, 0] }, "N - k = 2 copies, 1 erase");
    }

    #[test]
    fn random_log_merge_touches_every_associated_block() {
        let (mut f, mut d) = drive("fast", SMALL);
        write(f.as_mut(), &mut d, &[0, 1, 2, 3, 4, 5, 6, 7]); // keys 0 and 1 in place
        write(f.as_mut(), &mut d, &[1, 6, 3, 5]); // the random log: associativity 2
        let c = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[2]));
        assert_eq!(c, Cost { copies: 8, erases: 3, kinds: [0, 0, 2] }, "A·N copies, A + 1 erases");
        assert_eq!((f.stats().assoc_max, f.stats().log_merges), (2, 1));
    }

    #[test]
    fn a_merge_leaves_trimmed_holes_erased_unless_told_to_pad() {
        for pad in [false, true] {
            let (mut f, mut d) = drive("fast", &["ftl.rand_log_blocks=1", &format!("ftl.pad_trimmed_holes={pad}")]);
            write(f.as_mut(), &mut d, &[0, 1, 2, 3, 4, 5, 6, 7]);
            trim(f.as_mut(), &mut d, 1, 1);
            write(f.as_mut(), &mut d, &[2, 3, 3, 3]); // key 0's updates fill the random log
            let programs = |d: &crate::engine::Device| d.counters.programs.iter().sum::<u64>();
            let before = programs(&d);
            // Key 1's update merges key 0: offset 1 is trimmed below live 2 and 3.
            let c = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[6]));
            assert_eq!(c, Cost { copies: 3, erases: 2, kinds: [0, 0, 1] }, "pad {pad}: trimmed offset 1 not copied");
            assert_eq!(f.stats().pages_skipped, u64::from(!pad), "pad {pad}");
            assert_eq!(f.stats().pages_padded, u64::from(pad), "pad {pad}");
            // 3 copies and the host page, and the pad when padding.
            assert_eq!(programs(&d) - before, 4 + u64::from(pad), "pad {pad}");
        }
    }

    #[test]
    fn a_merge_erases_a_data_block_left_without_live_pages() {
        let (mut f, mut d) = drive("fast", SMALL);
        write(f.as_mut(), &mut d, &[0, 1, 2, 3, 4, 5, 6, 7]);
        write(f.as_mut(), &mut d, &[1]); // key 0 now has a page in the random log
        trim(f.as_mut(), &mut d, 0, 4); // all of key 0, kept in the list
        write(f.as_mut(), &mut d, &[5, 6, 7]); // the random log is full
        // The merge finds key 0 without live pages: its data block is erased, nothing copied for it.
        let c = cost(f.as_mut(), &mut d, |f, d| write(f, d, &[5]));
        assert_eq!(c, Cost { copies: 4, erases: 3, kinds: [0, 0, 2] }, "key 1 rebuilt (4 copies), key 0 only erased");
        assert_eq!(f.blocks_with_valid_data(), 2, "key 1's new data block and the new random log");
    }
}
