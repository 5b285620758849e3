//! The merges of the log-block FTLs (Kim et al. 2002; Lee et al. 2007),
//! shared by `bast` and `fast` (and `block`'s block rewrite):
//!
//! - **switch**: a log block written in order from page 0 to its end
//!   becomes the data block; the old data block is erased (1 erase);
//! - **partial**: a log block written in order up to page k takes the live
//!   pages of offsets k.. (N − k copies) and becomes the data block (1 erase);
//! - **full** ([`rebuild`]): the logical block's live pages, wherever they
//!   are, are copied in order into a fresh block (N reads + N programs),
//!   the old data block is erased, and the caller erases the log block(s).
//!
//! Merges run in the foreground on the device's timelines, their traffic
//! counted as [`Cause::Merge`]. Each first realizes the TRIM list for the
//! key ([`Hybrid::realize_trims`]), so trimmed pages are not copied.

use super::hybrid::Hybrid;
use crate::engine::{Cause, Device};
use crate::error::Result;
use crate::units::{BlockId, SimTime};

/// Whether the pages of `log` hold offsets 0, 1, .. of `key` in order.
pub fn in_order(core: &Hybrid, dev: &Device, key: u32, log: BlockId) -> bool {
    (0..core.written(dev, log))
        .all(|i| dev.array.oob_lpn(core.geo.ppn(log, i)).is_some_and(|l| core.stripes.lpn(key, i) == Some(l)))
}

/// Switch or partial merge: an in-order log block becomes `key`'s data block.
pub fn promote(core: &mut Hybrid, dev: &mut Device, key: u32, log: BlockId, now: SimTime) -> Result<SimTime> {
    let written = core.written(dev, log);
    core.realize_trims(key, written, now);
    let mut t = now;
    if written < core.ppb() {
        core.stats.merges_partial += 1;
        let end = core.live_end(key);
        t = core.fill(dev, key, log, end, now)?;
    } else {
        core.stats.merges_switch += 1;
    }
    let old = core.data_block(key);
    core.set_data_block(key, Some(log));
    match old {
        Some(old) => core.erase(dev, old, t, Cause::Merge),
        None => Ok(t),
    }
}

/// Full merge of one key: its live pages copied in order into a fresh data
/// block (none when no page is live), the old data block erased. Not
/// counted as a merge here: the caller counts the log block it reclaims.
pub fn rebuild(core: &mut Hybrid, dev: &mut Device, key: u32, now: SimTime) -> Result<SimTime> {
    core.realize_trims(key, 0, now);
    let end = core.live_end(key);
    let old = core.data_block(key);
    let mut t = now;
    let new = if end > 0 {
        let b = core.alloc(core.stripes.chip_of(key))?;
        t = core.fill(dev, key, b, end, now)?;
        Some(b)
    } else {
        None
    };
    core.set_data_block(key, new);
    match old {
        Some(old) => core.erase(dev, old, t, Cause::Merge),
        None => Ok(t),
    }
}
