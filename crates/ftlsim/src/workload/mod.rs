//! Synthetic fio-like workloads: a spec string such as
//! `rw=randwrite,bs=4k,ios=1000000,range=100%,iodepth=32,seed=7` turned into
//! a deterministic [`CmdSource`](crate::trace::CmdSource).
//!
//! [`WorkloadSpec`] is the parsed, capacity-independent description (its
//! `Display` is the canonical spec string); [`generator`] resolves it against
//! a device and yields [`Workload`], which generates commands without
//! allocating. Spec keys:
//!
//! | key | values | default |
//! |---|---|---|
//! | `rw` | `read`, `write`, `rw`, `trim` (sequential); `randread`, `randwrite`, `randrw`, `randtrim` | required |
//! | `rwmixread` / `rwmixwrite` | percent of reads (writes) in `rw`/`randrw`, to 0.01% | 50 |
//! | `trimmix` | percent of commands that are trims, in read/write modes | 0 |
//! | `bs` | `4k`, or `4k-64k` (uniform over multiples of the minimum) | `4k` |
//! | `bssplit` | `4k/80:64k/20` (fio syntax; sizes without a share split the rest) | — |
//! | `ios` / `size` | number of commands / total bytes (one is required) | — |
//! | `offset` | start of the range: bytes or % of the device | 0 |
//! | `range` | length of the range: bytes or % of the device | rest of the device |
//! | `align` | alignment of command starts relative to the range start | smallest bs |
//! | `dist` / `random_distribution` | `uniform`, `zipf:θ`, `hotcold:A/S`, `hotcold:A/S:scatter=SIZE` (random modes) | `uniform` |
//! | `iodepth` | closed loop with this queue depth | 1 |
//! | `rate` / `rate_iops` | open loop at this many commands/s (`10k`, `1.5m`) | — |
//! | `arrival` | `constant` or `poisson` inter-arrivals (with `rate`) | `constant` |
//! | `seed` | PRNG seed | 1 |
//!
//! Sizes use binary suffixes (`k` = 1024, as fio's default). Percentages of
//! the device are rounded down to the alignment. `hotcold:90/10` sends 90%
//! of commands to the first 10% of the range (a contiguous prefix, so the
//! hot set is easy to see in per-LBA statistics) and the rest uniformly to
//! the other 90%. `hotcold:90/10:scatter=4k` has as many hot slots, cut
//! into 4 KiB pieces that the seed's affine permutation (as zipf's) spreads
//! over the whole range, so a hot set smaller than a few flash blocks does
//! not sit on one or two chips; with pieces of a flash page it touches as
//! many distinct pages as the prefix does (SIZE is a multiple of `align`,
//! and the hot set must fill whole pieces). `zipf:θ` ranks blocks by popularity and scatters the ranks
//! over the range with an affine permutation (see `generate.rs`), so hot blocks
//! are spread out as in real skewed workloads rather than packed together.
//!
//! `rw=delete` is a different generator, a file-deletion workload on a small
//! file-system allocator with its own keys ([`DeleteSpec`], see `delete.rs`).
//! [`open`] takes either.

mod delete;
mod generate;
mod spec;

pub use delete::{DeleteSpec, DeleteWorkload, is_delete};
pub use generate::{Workload, generator};
pub use spec::parse_piece_bytes;
pub(crate) use spec::split_fields;
pub use spec::{AccessDist, Amount, Arrival, ArrivalProcess, BlockSize, Extent, RwMode, WorkloadSpec};

use crate::error::Result;
use crate::trace::CmdSource;

/// Opens a workload spec (fio-like or `rw=delete`) on a device of
/// `capacity_sectors`; a spec without `seed=` takes `default_seed`. Returns
/// the stream and how it arrives.
pub fn open(text: &str, default_seed: u64, capacity_sectors: u64) -> Result<(Box<dyn CmdSource>, Arrival)> {
    let seeded = text.contains("seed=");
    if is_delete(text) {
        let mut spec = DeleteSpec::parse(text)?;
        if !seeded {
            spec.seed = default_seed;
        }
        return Ok((Box::new(DeleteWorkload::new(&spec, capacity_sectors)?), spec.arrival));
    }
    let mut spec = WorkloadSpec::parse(text)?;
    if !seeded {
        spec.seed = default_seed;
    }
    Ok((Box::new(generator(&spec, capacity_sectors)?), spec.arrival))
}

#[cfg(test)]
mod tests;
