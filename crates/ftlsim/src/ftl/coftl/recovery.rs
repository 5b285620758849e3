//! COFTL's log versions and crash recovery.
//!
//! A log version is the VBT (each virtual block's primary set) and the free
//! list, written into one of two log sets (the dual buffer): versions are
//! appended to the current buffer; one that does not fit switches to the
//! other, erasing it, so the latest complete version is always on flash.
//! Sets are allocated from the free list's head and erased ones go to its
//! end, so between versions allocations take exactly the first sets the
//! latest version listed, in order (at most `listed` of them: then a new
//! version is written).
//!
//! Recovery, after the RAM tables are lost:
//! 1. reads the first page of both buffers, the header of each version of
//!    the newer one, and the latest version's pages;
//! 2. reads the first page of each listed free set: a programmed one was
//!    allocated since, and its OOB names its virtual block;
//! 3. follows each chain from its primary (the log's, or a set of step 2
//!    that no chain links to: a merge's new primary) through the
//!    replacement pages;
//! 4. rebuilds each virtual page table from the summary at the end of the
//!    last-but-one set and a scan of the last set's page sets (every lane's
//!    OOB of a data page set, for the lanes that hold data rather than
//!    padding; a summary page's contents);
//! 5. puts every set in no chain on the free list (erasing any programmed
//!    one) and writes a new log version.
//!
//! Each read is timed on the device (sets of one step read in parallel,
//! a chain's replacement pages one after another); the report gives the
//! flash time and the pages read and scanned.

use super::sets::{LOG, LOW, Loc, Oob, Sets, decode};
use super::{Coftl, NIL, Tables};
use crate::engine::{Cause, Device};
use crate::error::{Error, Result};
use crate::ftl::RecoveryReport;
use crate::nand::Payload;
use crate::units::{Lpn, SimTime};
use serde::{Deserialize, Serialize};
use std::time::Instant;

#[derive(Serialize, Deserialize)]
pub struct LogVersion {
    seq: u64,
    start: u32,
    pub(super) pages: u32,
    primaries: Vec<u32>,
    free: Vec<u32>,
    pub(super) listed: u32,
}

#[derive(Default, Serialize, Deserialize)]
pub struct LogBuffer {
    pub(super) versions: Vec<LogVersion>,
    next: u32,
}

/// Pages of a log version: a 16-byte header, then 4 B per virtual block
/// and per free set.
pub fn version_pages(s: &Sets, free: u32, page_size: u32) -> u32 {
    (16 + 4 * (s.vbs as u64 + free as u64)).div_ceil(page_size as u64) as u32
}

impl Coftl {
    /// Writes the VBT and free list as a new log version.
    pub(super) fn write_log_version(&mut self, dev: &mut Device, t: SimTime) -> Result<SimTime> {
        let pages = version_pages(&self.s, self.t.free.len() as u32, self.page_bytes as u32);
        let k = self.s.k;
        let mut start_at = t;
        if self.flash.log[self.t.log_current].next + pages > k * self.s.pages_per_block {
            let other = 1 - self.t.log_current;
            let set = self.s.log_set(other);
            for lane in 0..k {
                let b = self.s.block(set, lane);
                if dev.array.written_pages(b) > 0 {
                    start_at = start_at.max(dev.erase(b, t, Cause::Mapping)?);
                }
            }
            self.flash.log[other] = LogBuffer::default();
            self.t.log_current = other;
        }
        let cur = self.t.log_current;
        let set = self.s.log_set(cur);
        self.t.log_seq += 1;
        let seq = self.t.log_seq;
        let start = self.flash.log[cur].next;
        let mut done = start_at;
        for p in start..start + pages {
            let ppn = self.s.ppn(set, p % k, p / k);
            let word = LOG | (seq as u32 & LOW);
            done = done.max(dev.program(ppn, Lpn(word), start_at, Cause::Mapping, Payload::None)?);
        }
        let listed = (self.log_free_sets as usize).min(self.t.free.len()) as u32;
        self.flash.log[cur].versions.push(LogVersion {
            seq,
            start,
            pages,
            primaries: self.t.chains.iter().map(|c| c.first().copied().unwrap_or(NIL)).collect(),
            free: self.t.free.iter().copied().collect(),
            listed,
        });
        self.flash.log[cur].next = start + pages;
        self.t.since_log = 0;
        self.t.listed = listed;
        self.co.log_versions += 1;
        Ok(done)
    }
}

/// Reads OOB words (of page set `off` of `set`: its scan lane's, or one
/// lane's), counting them.
struct Reader {
    reads: u64,
}

impl Reader {
    fn oob(&mut self, dev: &mut Device, s: &Sets, set: u32, off: u32, t: SimTime) -> (Option<u32>, SimTime) {
        self.lane_oob(dev, s, set, s.scan_lane(set, off), off, t)
    }

    fn lane_oob(
        &mut self,
        dev: &mut Device,
        s: &Sets,
        set: u32,
        lane: u32,
        off: u32,
        t: SimTime,
    ) -> (Option<u32>, SimTime) {
        self.reads += 1;
        let (lpn, done) = dev.probe(s.ppn(set, lane, off), t, Cause::Mapping);
        (lpn.map(|l| l.0), done)
    }
}

/// The virtual block a set's page belongs to, from its OOB word.
fn owner(s: &Sets, word: u32) -> Option<u32> {
    match decode(word) {
        Oob::Data(l) | Oob::Pad(l) => Some(s.vb_of_lpn(l)),
        Oob::Summary(vb) | Oob::Link(vb) => Some(vb),
        Oob::Log => None,
    }
}

/// Rebuilds COFTL's RAM tables from flash after a power cut at `now`.
pub fn recover(c: &mut Coftl, dev: &mut Device, now: SimTime) -> Result<RecoveryReport> {
    let wall = Instant::now();
    let start = now.max(dev.last_unit_end());
    c.t = Tables::new(&c.s);
    c.t.free.clear();
    let mut rd = Reader { reads: 0 };
    let mut report = RecoveryReport { at_s: now.as_secs_f64(), ..RecoveryReport::default() };

    // 1. The latest log version.
    let (version, mut t) = latest_version(c, dev, &mut rd, start);
    report.log_pages_read = rd.reads;
    let (primaries, free, listed) = match version {
        Some((buf, i)) => {
            let v = &c.flash.log[buf].versions[i];
            c.t.log_current = buf;
            c.t.log_seq = v.seq;
            (v.primaries.clone(), v.free.clone(), v.listed as usize)
        }
        None => (vec![NIL; c.s.vbs as usize], (0..c.s.data_sets()).collect::<Vec<_>>(), c.s.data_sets() as usize),
    };

    // 2. Sets allocated since: the listed free sets now programmed.
    let before = rd.reads;
    let mut hits = Vec::new();
    let t_log = t;
    for &set in &free[..listed] {
        let (word, done) = rd.oob(dev, &c.s, set, 0, t_log);
        t = t.max(done);
        if let Some(vb) = word.and_then(|w| owner(&c.s, w)) {
            hits.push((set, vb));
        }
    }
    report.free_sets_probed = rd.reads - before;

    // 3. Chains through the replacement pages.
    let t_chains = t;
    let mut ends = vec![t_chains; c.s.vbs as usize];
    for vb in 0..c.s.vbs {
        if primaries[vb as usize] != NIL {
            (c.t.chains[vb as usize], ends[vb as usize]) = follow(c, dev, &mut rd, primaries[vb as usize], t_chains)?;
        }
    }
    for (set, vb) in hits {
        if vb < c.s.vbs && !c.t.chains[vb as usize].contains(&set) {
            (c.t.chains[vb as usize], ends[vb as usize]) = follow(c, dev, &mut rd, set, t_chains)?;
        }
    }

    // 4. Each table: the last full set's summary, then a scan of the last set.
    let before = rd.reads;
    let mut end = t;
    for vb in 0..c.s.vbs {
        if !c.t.chains[vb as usize].is_empty() {
            end = end.max(rebuild(c, dev, &mut rd, vb, ends[vb as usize])?);
        }
    }
    report.pages_scanned = rd.reads - before;

    // 5. The free list: listed and unlisted free sets, then every other set
    //    in no chain (erased since the version, or allocated and dropped).
    let mut used = vec![false; c.s.sets as usize];
    for chain in &c.t.chains {
        for &set in chain {
            used[set as usize] = true;
        }
    }
    let mut listed_free = vec![false; c.s.sets as usize];
    for &set in &free {
        listed_free[set as usize] = true;
        if !used[set as usize] {
            c.t.free.push_back(set);
        }
    }
    for set in 0..c.s.data_sets() {
        if used[set as usize] || listed_free[set as usize] {
            continue;
        }
        let (word, done) = rd.oob(dev, &c.s, set, 0, t);
        end = end.max(done);
        if word.is_some() {
            end = end.max(c.erase_set(dev, set, done)?);
        } else {
            c.t.free.push_back(set);
        }
    }
    c.t.erases_since_wl = 0;
    let done = c.write_log_version(dev, end)?;
    report.pages_read = rd.reads;
    report.recovery_us = (done - start).as_us_f64();
    report.recovered_at = done;
    report.wall_ms = wall.elapsed().as_secs_f64() * 1e3;
    Ok(report)
}

/// Reads the first page of both buffers, then the newer one's version
/// headers in turn, then the latest version's pages: (buffer, version).
fn latest_version(c: &Coftl, dev: &mut Device, rd: &mut Reader, start: SimTime) -> (Option<(usize, usize)>, SimTime) {
    let mut t = start;
    let mut first = [None, None];
    for (b, f) in first.iter_mut().enumerate() {
        // A buffer's first page is on lane 0 (log pages fill lanes first).
        let (word, done) = rd.lane_oob(dev, &c.s, c.s.log_set(b), 0, 0, start);
        t = t.max(done);
        if word.is_some() {
            *f = c.flash.log[b].versions.first().map(|v| v.seq);
        }
    }
    let buf = match first {
        [Some(a), Some(b)] => usize::from(b > a),
        [Some(_), None] => 0,
        [None, Some(_)] => 1,
        [None, None] => return (None, t),
    };
    let set = c.s.log_set(buf);
    let k = c.s.k;
    let versions = &c.flash.log[buf].versions;
    // Header by header (each names the next one's position), then the end.
    for v in versions.iter().skip(1) {
        rd.reads += 1;
        t = dev.probe(c.s.ppn(set, v.start % k, v.start / k), t, Cause::Mapping).1;
    }
    let last = versions.len() - 1;
    let v = &versions[last];
    let mut done = t;
    for p in v.start + 1..v.start + v.pages {
        rd.reads += 1;
        done = done.max(dev.probe(c.s.ppn(set, p % k, p / k), t, Cause::Mapping).1);
    }
    (Some((buf, last)), done)
}

/// A chain from `set` on, through written replacement pages.
fn follow(c: &Coftl, dev: &mut Device, rd: &mut Reader, set: u32, mut t: SimTime) -> Result<(Vec<u32>, SimTime)> {
    let mut chain = vec![set];
    loop {
        let last = *chain.last().expect("non-empty");
        let (word, done) = rd.oob(dev, &c.s, last, c.s.pages_per_block - 1, t);
        t = done;
        if !matches!(word.map(decode), Some(Oob::Link(_))) {
            return Ok((chain, t));
        }
        let next = c.flash.links[last as usize];
        if next == NIL || chain.len() > c.max_chain || chain.contains(&next) {
            return Err(Error::invariant("coftl", format!("replacement page of set {last} names no valid set")));
        }
        chain.push(next);
    }
}

/// Rebuilds `vb`'s table and write position from its chain.
fn rebuild(c: &mut Coftl, dev: &mut Device, rd: &mut Reader, vb: u32, t: SimTime) -> Result<SimTime> {
    let (v, k) = (c.s.v, c.s.k);
    let chain = c.t.chains[vb as usize].clone();
    let last_idx = chain.len() as u32 - 1;
    let last = chain[last_idx as usize];
    let mut done = t;
    if last_idx > 0 {
        let prev = chain[last_idx as usize - 1];
        let (word, d) = rd.oob(dev, &c.s, prev, v, t);
        done = done.max(d);
        if !matches!(word.map(decode), Some(Oob::Summary(_))) {
            return Err(Error::invariant("coftl", format!("full set {prev} of virtual block {vb} has no summary")));
        }
        load_summary(c, vb, prev, v)?;
        c.t.summary_at[vb as usize] = Some((last_idx - 1, v));
    }
    // A full set ends with its summary: one read instead of a scan.
    let (word, d) = rd.oob(dev, &c.s, last, v, t);
    done = done.max(d);
    if matches!(word.map(decode), Some(Oob::Summary(_))) {
        load_summary(c, vb, last, v)?;
        c.t.summary_at[vb as usize] = Some((last_idx, v));
        c.t.next_off[vb as usize] = v;
        return Ok(done);
    }
    let mut written = 0;
    for off in 0..v {
        let (word, d) = rd.oob(dev, &c.s, last, off, t);
        done = done.max(d);
        let Some(word) = word else { break };
        match decode(word) {
            Oob::Data(l) | Oob::Pad(l) => {
                let (_, vpa, _) = c.s.locate(l);
                let e = c.entry(vb, vpa);
                c.t.locs[e] = Loc::new(last_idx, off);
                // One lane's OOB names the virtual page, not which of its
                // lanes hold data: a lane with none (never written, trimmed,
                // or dropped by a merge) was padded. Each lane's OOB says,
                // read on its own plane beside the first.
                let mut mask = 0;
                for lane in 0..k {
                    let lane_word = if lane == c.s.scan_lane(last, off) {
                        Some(word)
                    } else {
                        let (w, d) = rd.lane_oob(dev, &c.s, last, lane, off, t);
                        done = done.max(d);
                        w
                    };
                    if matches!(lane_word.map(decode), Some(Oob::Data(_))) {
                        mask |= 1 << lane;
                    }
                }
                c.t.masks[e] = mask;
            }
            Oob::Summary(_) => {
                load_summary(c, vb, last, off)?;
                c.t.summary_at[vb as usize] = Some((last_idx, off));
            }
            Oob::Link(_) | Oob::Log => {
                return Err(Error::invariant("coftl", format!("set {last} holds a foreign page at {off}")));
            }
        }
        written = (off + 1).min(v);
    }
    if written == 0 && last_idx == 0 {
        c.t.chains[vb as usize].clear(); // merged away since the log version
    }
    c.t.next_off[vb as usize] = written;
    Ok(done)
}

fn load_summary(c: &mut Coftl, vb: u32, set: u32, off: u32) -> Result<()> {
    let Some((_, locs, masks)) = c.flash.summaries[set as usize].iter().find(|(o, ..)| *o == off) else {
        return Err(Error::invariant("coftl", format!("no summary recorded at set {set} offset {off}")));
    };
    let range = c.entry(vb, 0)..c.entry(vb, c.s.v);
    c.t.locs[range.clone()].copy_from_slice(locs);
    c.t.masks[range].copy_from_slice(masks);
    Ok(())
}
