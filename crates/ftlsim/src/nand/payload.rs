//! Where pages' data live in host memory (payload mode).
//!
//! Blocks take slots of one large, lazily backed area in the order they are
//! first programmed, not by block number, so the memory a run has touched
//! is always one growing prefix of the area. That lets a helper thread
//! fault memory in just ahead of use ([`PayloadStore::prefault`]): the
//! first write to a fresh page of memory costs the kernel a fault and a
//! zeroing, which would otherwise fall on the thread serving the write and
//! cost more than the write's own copy (profiled on `ftlsim serve`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

const NO_SLOT: u32 = u32::MAX;
/// Memory faulted in per step of the helper thread.
const PREFAULT_STEP: usize = 2 << 20;

pub struct PayloadStore {
    data: Vec<u8>,
    slot: Vec<u32>,
    next_slot: u32,
    page_size: usize,
    block_bytes: usize,
    /// A page of zeros: the contents of a page of a block never programmed.
    zeros: Vec<u8>,
    prefault: Option<Prefault>,
}

struct Prefault {
    /// Bytes of the area in use (slots handed out).
    used: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl PayloadStore {
    pub fn new(blocks: usize, pages_per_block: usize, page_size: usize) -> PayloadStore {
        PayloadStore {
            // Zeroed allocations are lazily backed by the OS, so an unused
            // payload area costs address space, not memory.
            data: vec![0; blocks * pages_per_block * page_size],
            slot: vec![NO_SLOT; blocks],
            next_slot: 0,
            page_size,
            block_bytes: pages_per_block * page_size,
            zeros: vec![0; page_size],
            prefault: None,
        }
    }

    /// Where `page` of `block` lives, giving the block a slot if it has none.
    fn place(&mut self, block: usize, page: usize) -> usize {
        if self.slot[block] == NO_SLOT {
            self.slot[block] = self.next_slot;
            self.next_slot += 1;
            if let Some(p) = &self.prefault {
                let used = self.next_slot as usize * self.block_bytes;
                p.used.store(used, Ordering::Relaxed);
                if used % PREFAULT_STEP < self.block_bytes {
                    p.thread.thread().unpark();
                }
            }
        }
        self.slot[block] as usize * self.block_bytes + page * self.page_size
    }

    /// The data area of `page` of `block` (`bytes`, or zeros when `None`).
    pub fn write(&mut self, block: usize, page: usize, bytes: Option<&[u8]>) {
        let at = self.place(block, page);
        let dst = &mut self.data[at..at + self.page_size];
        match bytes {
            Some(b) => dst.copy_from_slice(b),
            None => dst.fill(0),
        }
    }

    /// Copies one page's data area to another's.
    pub fn copy(&mut self, from: (usize, usize), to: (usize, usize)) {
        let src = self.place(from.0, from.1);
        let dst = self.place(to.0, to.1);
        self.data.copy_within(src..src + self.page_size, dst);
    }

    pub fn read(&self, block: usize, page: usize) -> &[u8] {
        match self.slot[block] {
            NO_SLOT => &self.zeros,
            s => {
                let at = s as usize * self.block_bytes + page * self.page_size;
                &self.data[at..at + self.page_size]
            }
        }
    }

    /// Starts a helper thread that keeps the memory of the next `ahead`
    /// bytes of slots faulted in. Without kernel support
    /// (`MADV_POPULATE_WRITE`, Linux 5.14) the thread just ends.
    pub fn prefault(&mut self, ahead: usize) {
        if self.prefault.is_some() || self.data.is_empty() {
            return;
        }
        let used = Arc::new(AtomicUsize::new(self.next_slot as usize * self.block_bytes));
        let stop = Arc::new(AtomicBool::new(false));
        let (base, len) = (self.data.as_mut_ptr() as usize, self.data.len());
        let (u, s) = (used.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut done = 0;
            while done < len && !s.load(Ordering::Relaxed) {
                let want = (u.load(Ordering::Relaxed) + ahead).min(len);
                if done >= want {
                    std::thread::park_timeout(Duration::from_millis(100));
                    continue;
                }
                let n = PREFAULT_STEP.min(want - done);
                if !populate(base + done, n) {
                    return;
                }
                done += n;
            }
        });
        self.prefault = Some(Prefault { used, stop, thread });
    }
}

impl Drop for PayloadStore {
    fn drop(&mut self) {
        // The helper must be gone before the area it faults in is freed.
        if let Some(p) = self.prefault.take() {
            p.stop.store(true, Ordering::Relaxed);
            p.thread.thread().unpark();
            let _ = p.thread.join();
        }
    }
}

/// Faults in the memory pages overlapping `len` bytes at `addr`.
#[cfg(target_os = "linux")]
fn populate(addr: usize, len: usize) -> bool {
    const PAGE: usize = 4096;
    let start = addr / PAGE * PAGE;
    let end = (addr + len).next_multiple_of(PAGE);
    // SAFETY: the range lies within one live allocation of this process
    // (rounded out to whole memory pages, which the allocation's mapping
    // spans). MADV_POPULATE_WRITE only faults pages in, as a write would,
    // without changing a byte, so it cannot disturb the owner's accesses.
    unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_POPULATE_WRITE) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn populate(_addr: usize, _len: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_take_slots_in_first_program_order_and_keep_them() {
        let mut p = PayloadStore::new(8, 2, 4);
        p.prefault(64);
        p.write(5, 0, Some(&[5; 4]));
        p.write(2, 1, Some(&[2; 4]));
        assert_eq!((p.slot[5], p.slot[2], p.slot[0]), (0, 1, NO_SLOT));
        p.copy((5, 0), (0, 0));
        p.write(5, 1, None);
        assert_eq!(p.read(0, 0), &[5; 4]);
        assert_eq!(p.read(2, 1), &[2; 4]);
        assert_eq!(p.read(5, 1), &[0; 4]);
        assert_eq!(p.read(7, 0), &[0; 4], "never programmed");
        assert_eq!(p.slot[0], 2);
        assert_eq!(&p.data[..4], &[5; 4], "slot 0 is block 5's");
    }

    #[test]
    fn prefaulting_keeps_contents() {
        // 64 blocks of 64 KiB: prefaulted in 2 MiB steps while being written.
        let mut p = PayloadStore::new(64, 16, 4096);
        p.prefault(4 << 20);
        for b in 0..64 {
            for pg in 0..16 {
                p.write(b, pg, Some(&[(b * 16 + pg) as u8; 4096]));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
        for b in 0..64 {
            for pg in 0..16 {
                assert!(p.read(b, pg).iter().all(|&x| x == (b * 16 + pg) as u8), "block {b} page {pg}");
            }
        }
    }
}
