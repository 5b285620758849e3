//! Page and block state of the whole array, kept compact: a block's pages
//! are erased exactly from its write pointer on, so page state needs no
//! per-page byte; OOB holds each programmed page's LPN (4 B per page) and,
//! when recording is on, a program sequence number (8 B per page). A page
//! below the write pointer whose OOB holds no LPN was *skipped*: left erased
//! while a later page of its block was programmed (pages go in ascending
//! order; leaving one out is allowed, going back is not), and it cannot be
//! read.
//!
//! The OOB LPN array doubles as the page FTL's backward (physical → logical)
//! map, as in the TRIM paper: storing it twice would double the model's
//! largest structure for no information.

use crate::error::{Error, Result};
use crate::nand::Geometry;
use crate::nand::payload::PayloadStore;
use crate::units::{BlockId, Lpn, Ppn};

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
}

pub struct NandArray {
    geo: Geometry,
    endurance: u32,
    oob_lpn: Vec<u32>,
    oob_seq: Option<Vec<u64>>,
    write_ptr: Vec<u16>,
    erase_count: Vec<u32>,
    payload: Option<PayloadStore>,
    next_seq: u64,
}

impl NandArray {
    pub fn new(geo: Geometry, endurance: u32, store_payloads: bool, record_sequence: bool) -> NandArray {
        let pages = geo.pages as usize;
        let blocks = geo.blocks as usize;
        NandArray {
            endurance,
            oob_lpn: crate::mem::big_vec(pages, NO_LPN),
            oob_seq: record_sequence.then(|| vec![0; pages]),
            write_ptr: vec![0; blocks],
            erase_count: vec![0; blocks],
            payload: store_payloads
                .then(|| PayloadStore::new(blocks, geo.pages_per_block as usize, geo.page_size as usize)),
            next_seq: 1,
            geo,
        }
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    pub fn stores_payloads(&self) -> bool {
        self.payload.is_some()
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
                Payload::None => data.write(dst.0, dst.1, None),
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
        self.oob_lpn[ppn.idx()] = lpn.0;
        if let Some(seq) = &mut self.oob_seq {
            seq[ppn.idx()] = self.next_seq;
        }
        self.next_seq += 1;
        self.write_ptr[block.idx()] += 1;
        Ok(())
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

    /// Copies programmed pages of one block (`src`, ascending or not) into
    /// consecutive pages of another from `dst` on: GC's copy loop as one
    /// call, with the checks of [`read`](Self::read) and
    /// [`program`](Self::program) made once per run where they can be.
    pub fn copy_run(&mut self, src: &[u32], dst: Ppn) -> Result<()> {
        let Some(&first_src) = src.first() else { return Ok(()) };
        let (block, page) = self.check_programmable(dst)?;
        if page + src.len() as u32 > self.geo.pages_per_block {
            return Err(Error::Physics(format!(
                "copy of {} pages into {block} from page {page}: the block has {} pages",
                src.len(),
                self.geo.pages_per_block
            )));
        }
        // Readable = below its block's write pointer; one block for the run.
        self.check_readable(Ppn(first_src))?;
        let src_block = self.geo.block_of(Ppn(first_src));
        let src_first = self.geo.ppn(src_block, 0).0;
        let src_written = self.write_ptr[src_block.idx()] as u32;
        if src_block == block {
            return Err(Error::Physics(format!("copy of pages of {block} into itself")));
        }
        // All checked before anything changes, so a refused run leaves no trace.
        if let Some(&s) = src.iter().find(|&&s| s.wrapping_sub(src_first) >= src_written) {
            self.check_readable(Ppn(s))?;
            return Err(Error::Physics(format!("copy run mixes {src_block} with {}", Ppn(s))));
        }
        if let Some(&s) = src.iter().find(|&&s| self.oob_lpn[s as usize] == NO_LPN) {
            return Err(Error::Physics(format!("copy of {}: the page was skipped, it holds no data", Ppn(s))));
        }
        for (i, &s) in src.iter().enumerate() {
            let d = dst.idx() + i;
            self.oob_lpn[d] = self.oob_lpn[s as usize];
            if let Some(seq) = &mut self.oob_seq {
                seq[d] = self.next_seq;
            }
            self.next_seq += 1;
            if let Some(data) = &mut self.payload {
                data.copy((src_block.idx(), (s - src_first) as usize), (block.idx(), page as usize + i));
            }
        }
        self.write_ptr[block.idx()] += src.len() as u16;
        Ok(())
    }

    /// Checks `ppn` is its block's next programmable page; returns its block
    /// and page index.
    fn check_programmable(&self, ppn: Ppn) -> Result<(BlockId, u32)> {
        if ppn.0 >= self.geo.pages {
            return Err(Error::Physics(format!("program of {ppn}: beyond the device's {} pages", self.geo.pages)));
        }
        let (block, page) = (self.geo.block_of(ppn), self.geo.page_in_block(ppn));
        let wp = self.write_ptr[block.idx()] as u32;
        if page != wp {
            let why = if page < wp { "page is not erased" } else { "pages of a block must be programmed in order" };
            return Err(Error::Physics(format!(
                "program of {ppn} ({block}, page {page}): {why} (next programmable page is {wp})"
            )));
        }
        Ok((block, page))
    }

    /// Checks a page may be read and returns the LPN its OOB records.
    #[inline]
    pub fn read(&self, ppn: Ppn) -> Result<Lpn> {
        self.check_readable(ppn)?;
        Ok(Lpn(self.oob_lpn[ppn.idx()]))
    }

    #[inline]
    fn check_readable(&self, ppn: Ppn) -> Result<()> {
        if ppn.0 >= self.geo.pages {
            return Err(Error::Physics(format!("read of {ppn}: beyond the device's {} pages", self.geo.pages)));
        }
        let block = self.geo.block_of(ppn);
        if self.geo.page_in_block(ppn) >= self.write_ptr[block.idx()] as u32 || self.oob_lpn[ppn.idx()] == NO_LPN {
            return Err(Error::Physics(format!("read of {ppn} ({block}): page was never programmed since erase")));
        }
        Ok(())
    }

    /// Erases a block: all its pages become programmable again, in order.
    pub fn erase(&mut self, block: BlockId) -> Result<()> {
        if block.0 >= self.geo.blocks {
            return Err(Error::Physics(format!("erase of {block}: beyond the device's {} blocks", self.geo.blocks)));
        }
        let count = &mut self.erase_count[block.idx()];
        if *count >= self.endurance {
            return Err(Error::Physics(format!(
                "erase of {block}: worn out after {} program/erase cycles (nand.endurance)",
                self.endurance
            )));
        }
        *count += 1;
        let first = self.geo.ppn(block, 0).idx();
        let used = self.write_ptr[block.idx()] as usize;
        self.oob_lpn[first..first + used].fill(NO_LPN);
        self.write_ptr[block.idx()] = 0;
        Ok(())
    }

    /// The LPN recorded in a page's OOB, `None` for an erased page.
    #[inline]
    pub fn oob_lpn(&self, ppn: Ppn) -> Option<Lpn> {
        let v = self.oob_lpn[ppn.idx()];
        (v != NO_LPN).then_some(Lpn(v))
    }

    /// The raw OOB LPN word of a page ([`NO_LPN`] when erased).
    #[inline]
    pub fn oob_lpn_raw(&self, ppn: Ppn) -> u32 {
        self.oob_lpn[ppn.idx()]
    }

    /// The program sequence number of a page, when recording is on.
    pub fn oob_seq(&self, ppn: Ppn) -> Option<u64> {
        let seq = self.oob_seq.as_ref()?;
        (self.oob_lpn[ppn.idx()] != NO_LPN).then(|| seq[ppn.idx()])
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

    fn array(payloads: bool) -> NandArray {
        let geo = Geometry::new(&GeometryConfig {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 4,
            pages_per_block: 4,
            page_size: 512,
        });
        NandArray::new(geo, 3, payloads, payloads)
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
        let e = a.erase(BlockId(1)).unwrap_err().to_string();
        assert!(e.contains("worn out"), "{e}");
        assert_eq!(a.erase_count(BlockId(1)), 3);
    }

    #[test]
    fn copy_run_moves_oob_and_payloads_in_order() {
        let mut a = array(true);
        for (i, byte) in [1u8, 2, 3].into_iter().enumerate() {
            a.program(Ppn(i as u32), Lpn(10 + i as u32), Payload::Bytes(&[byte; 512])).unwrap();
        }
        a.program(Ppn(4), Lpn(99), Payload::None).unwrap();
        a.copy_run(&[2, 0], Ppn(5)).unwrap();
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
        a.program(Ppn(4), Lpn(4), Payload::None).unwrap();
        a.program(Ppn(5), Lpn(5), Payload::None).unwrap();
        refuse(&mut a, &[0, 1, 0], 6, "the block has 4 pages");
        refuse(&mut a, &[4], 6, "into itself");
        // Refused runs changed nothing: the pages are still programmable in order.
        assert_eq!(a.written_pages(BlockId(1)), 2);
        assert_eq!(a.oob_lpn(Ppn(6)), None);
        a.copy_run(&[0, 1], Ppn(6)).unwrap();
        assert_eq!(a.read(Ppn(7)).unwrap(), Lpn(2));
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
