//! The drive's TRIM log: which logical pages were trimmed, durably, and
//! when in program order.
//!
//! A TRIM changes only an FTL's RAM map, so after a power cut a recovery
//! that rebuilds the map from OOB records would bring trimmed data back.
//! Real drives therefore journal TRIMs in a system area of the flash,
//! outside the blocks the FTL allocates. Here the log holds, per logical
//! page, the program sequence number current when its latest durable TRIM
//! was made: a page on flash for that LPN with a lower sequence number is
//! older than the TRIM and stays trimmed after recovery. FTLs append at a
//! FLUSH (see `ftl::recovery::TrimJournal`), which pays for the log's page
//! programs on the device.
//!
//! Simplifications: the log is kept as its net contents (one sequence
//! number per trimmed page) rather than as appended records with
//! checkpoints, and its pages live outside the FTL's geometry, so they
//! take no blocks from it and need no GC.

use serde::{Deserialize, Serialize};

/// Bytes one log record takes on flash: a 4-byte LPN and a 4-byte
/// sequence delta.
pub const RECORD_BYTES: u64 = 8;

#[derive(Default, Serialize, Deserialize)]
pub struct TrimLog {
    /// Per logical page: the sequence number of its latest durable TRIM
    /// (0: none). Grown on demand: a drive that never trims keeps none.
    seq: Vec<u64>,
    /// Records appended so far, and the pages they fill on flash (each
    /// append starts a page).
    records: u64,
    pages: u64,
}

impl TrimLog {
    /// Makes the TRIMs of `lpns`, each made when the program sequence
    /// stood at its `seq`, durable; returns the pages of `page_size` bytes
    /// the records take.
    pub fn append(&mut self, trims: &[(u32, u64)], page_size: u32) -> u64 {
        for &(lpn, seq) in trims {
            let i = lpn as usize;
            if i >= self.seq.len() {
                self.seq.resize(i + 1, 0);
            }
            self.seq[i] = self.seq[i].max(seq);
        }
        self.records += trims.len() as u64;
        let pages = (trims.len() as u64 * RECORD_BYTES).div_ceil(page_size as u64);
        self.pages += pages;
        pages
    }

    /// The sequence number of `lpn`'s latest durable TRIM (0: none): data
    /// programmed before it is trimmed.
    #[inline]
    pub fn trimmed_at(&self, lpn: u32) -> u64 {
        self.seq.get(lpn as usize).copied().unwrap_or(0)
    }

    /// Records appended since the drive was new.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Pages the log fills on flash.
    pub fn pages(&self) -> u64 {
        self.pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_latest_trim_per_page() {
        let mut log = TrimLog::default();
        assert_eq!(log.trimmed_at(5), 0);
        assert_eq!(log.append(&[(5, 10), (2, 3), (4, 4)], 16), 2);
        assert_eq!(log.append(&[(5, 7)], 16), 1);
        assert_eq!((log.trimmed_at(5), log.trimmed_at(2), log.trimmed_at(9)), (10, 3, 0));
        assert_eq!((log.records(), log.pages()), (4, 3));
    }
}
