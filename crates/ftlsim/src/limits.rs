//! The largest value every user-given count, size and depth may take.
//!
//! Each input is checked against its limit before anything is allocated or
//! looped over, and refused with one line naming the key and the largest
//! accepted value: a hostile or mistyped number must not abort the process
//! (an allocation failure), hang it, or make it hold memory out of
//! proportion to the work asked for.
//!
//! | input | limit |
//! |---|---|
//! | `host.queue_depth`, `--qd`, a workload's `iodepth=` | [`MAX_QUEUE_DEPTH`] |
//! | `controller.cores` | [`MAX_CONTROLLER_CORES`] |
//! | `--precondition overwrite=` | [`MAX_OVERWRITE`] × the filled space |
//! | one trace line (after gzip decompression) | [`MAX_LINE_BYTES`] |
//! | `cache.bytes` | the drive's logical capacity |
//! | `ftl.trim_list_groups` | [`MAX_TRIM_LIST_GROUPS`] |
//! | `pcm.write_queue` | [`MAX_PCM_WRITE_QUEUE`] |
//! | `pcm.entries_per_write` | [`MAX_PCM_ENTRIES_PER_WRITE`] |
//! | `gc.d` | `geometry.blocks_per_plane` (more samples than blocks add nothing) |
//! | `ftl.cache_bytes`, `ftl.mu_bitmap_cache_bytes`, `ftl.coftl_cache_bytes` | [`MAX_CONTROLLER_RAM_BYTES`] |
//! | `host.time_scale`, `--time-scale` | any finite factor; an arrival it scales past the simulated clock is refused naming the request and the key |
//! | `geometry.*` | a page count that fits 32 bits, at most [`MAX_ARRAY_UNITS`] planes, and tables (and payloads, when stored) that fit this machine's memory ([`check_memory`]) |

use crate::error::{Error, Result};

/// Commands a host keeps outstanding at most: NVMe's largest queue (64 Ki
/// entries). Closed-loop replay keeps one completion time per slot.
pub const MAX_QUEUE_DEPTH: u32 = 65_536;

/// Firmware cores of a controller at most: each keeps one free time, and a
/// command takes the earliest (a scan), so a few dozen are meant; real
/// controllers have 2 to 16.
pub const MAX_CONTROLLER_CORES: u32 = 1024;

/// Preconditioning writes at most this many times the filled space: enough
/// for any steady state (a few overwrites reach it), finite so a typo cannot
/// run forever.
pub const MAX_OVERWRITE: f64 = 100.0;

/// Longest trace line read, in bytes: real records are well under 1 KiB, so
/// a longer line is a corrupt or wrong file, refused before it is held.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Planes (array units) of a drive at most: each has its own timeline and
/// block pool. Real drives have a few thousand at most.
pub const MAX_ARRAY_UNITS: u64 = 1 << 20;

/// Hash buckets of FAST's TRIM list at most: one per 4 KiB page of a 4 TiB
/// drive; each bucket is a list head in memory.
pub const MAX_TRIM_LIST_GROUPS: u32 = 1 << 30;

/// Mapping-entry writes the controller holds for the PCM at most: as many
/// as commands a host keeps outstanding.
pub const MAX_PCM_WRITE_QUEUE: u32 = MAX_QUEUE_DEPTH;

/// Mapping entries one PCM write programs at most: 4 KiB of 4-byte
/// entries, past any part's program buffer.
pub const MAX_PCM_ENTRIES_PER_WRITE: u32 = 1024;

/// A controller-RAM cache (mapping cache, bitmap cache, data cache) of at
/// most 1 TiB: far beyond any drive's DRAM, small enough that sizes
/// derived from it cannot overflow.
pub const MAX_CONTROLLER_RAM_BYTES: u64 = 1 << 40;

/// Simulator memory per physical page (forward and reverse maps, OOB,
/// validity), a floor across the FTLs.
const BYTES_PER_PAGE: u64 = 12;
/// Simulator memory per block (write pointer, erase and valid counts, pool
/// links), a floor across the FTLs.
const BYTES_PER_BLOCK: u64 = 32;

/// Checks that a drive of `pages` pages in `blocks` blocks (and, with
/// `payload_bytes`, its stored data) fits in `machine_bytes` of memory.
/// Errors name `geometry` (or `nand.store_payloads`) and the largest size
/// accepted.
pub fn check_memory(pages: u64, blocks: u64, payload_bytes: Option<u64>, machine_bytes: u64) -> Result<()> {
    let tables = pages.saturating_mul(BYTES_PER_PAGE).saturating_add(blocks.saturating_mul(BYTES_PER_BLOCK));
    if tables > machine_bytes {
        return Err(Error::config(
            "geometry",
            format!(
                "{pages} pages in {blocks} blocks need at least {} of simulator tables, more than this machine's {} \
                 of memory; use fewer, larger pages or blocks",
                gib(tables),
                gib(machine_bytes)
            ),
        ));
    }
    if let Some(data) = payload_bytes {
        let room = machine_bytes - tables;
        if data > room {
            return Err(Error::config(
                "nand.store_payloads",
                format!(
                    "storing the drive's {} of data needs more than the {} of memory left on this machine \
                     (largest drive with payloads: about {}); set nand.store_payloads = false or use a smaller geometry",
                    gib(data),
                    gib(room),
                    gib(room)
                ),
            ));
        }
    }
    Ok(())
}

/// This machine's memory (RAM and swap) in bytes, from `/proc/meminfo`;
/// `u64::MAX` (no limit) where that cannot be read.
pub fn machine_bytes() -> u64 {
    let Ok(info) = std::fs::read_to_string("/proc/meminfo") else { return u64::MAX };
    let kib = |key: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    match (kib("MemTotal:"), kib("SwapTotal:")) {
        (Some(mem), swap) => (mem + swap.unwrap_or(0)).saturating_mul(1024),
        (None, _) => u64::MAX,
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_beyond_the_machine_are_refused() {
        let err = check_memory(1 << 32, 1 << 32, None, 16 << 30).unwrap_err().to_string();
        assert!(err.starts_with("config: geometry:") && err.contains("16.0 GiB"), "{err}");
        check_memory(1 << 20, 1 << 12, None, 16 << 30).unwrap();
    }

    #[test]
    fn payloads_beyond_the_machine_are_refused() {
        let err = check_memory(1 << 10, 1 << 4, Some(64 << 30), 16 << 30).unwrap_err().to_string();
        assert!(err.starts_with("config: nand.store_payloads:") && err.contains("64.0 GiB"), "{err}");
        check_memory(1 << 10, 1 << 4, Some(1 << 30), 16 << 30).unwrap();
    }

    #[test]
    fn machine_memory_is_read() {
        assert!(machine_bytes() > 1 << 20);
    }
}
