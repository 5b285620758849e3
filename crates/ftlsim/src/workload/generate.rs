//! The command generator: a [`WorkloadSpec`] resolved against a device
//! capacity, producing [`HostCmd`]s on demand.
//!
//! Model and simplifications:
//! - The addressed range is `[offset, offset + range)`. It is cut into
//!   `align`-sized slots; a random command starts at a slot chosen by the
//!   access distribution. Slots are counted so that the *largest* command
//!   still fits, so with variable block sizes the last `max_bs - align` bytes
//!   of the range are reached only by commands that start before them.
//! - Sequential modes keep one cursor per operation (like fio's per-direction
//!   position), advance it by the command size rounded up to `align`, and
//!   wrap to the range start when the next command would cross the end.
//! - Trims drawn by `trimmix` use the same size and address distributions as
//!   the reads and writes they are mixed with.
//! - Closed-loop commands carry time 0 (the host layer times them); open-loop
//!   times start at 0 and are rounded to whole nanoseconds from an exact
//!   (constant) or accumulated (Poisson) floating-point clock, so rounding
//!   never drifts.
//!
//! All randomness comes from one `Xoshiro256PlusPlus` seeded with
//! `seed_from_u64(seed)`, drawn in a fixed order per command, so a spec, seed
//! and capacity always give the same stream. Integer draws use Lemire's
//! unbiased multiply-and-reject method, implemented here so the stream does
//! not depend on a `rand` version's range-sampling algorithm.

use super::spec::{AccessDist, Amount, Arrival, ArrivalProcess, BlockSize, Extent, WorkloadSpec};
use crate::error::{Error, Result};
use crate::trace::{CmdSource, HostCmd, Op, Progress};
use crate::units::{SECTOR_BYTES, Sector, SimTime};
use rand_core::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use rand_xoshiro::Xoshiro256PlusPlus;

fn err(key: &str, reason: impl Into<String>) -> Error {
    Error::Workload { key: key.to_string(), reason: reason.into() }
}

/// Uniform integer in `[0, n)`, `n > 0` (Lemire 2019, unbiased).
#[inline(always)]
pub(super) fn bounded(rng: &mut Xoshiro256PlusPlus, n: u64) -> u64 {
    let mut m = u128::from(rng.next_u64()) * u128::from(n);
    if (m as u64) < n {
        let t = n.wrapping_neg() % n;
        while (m as u64) < t {
            m = u128::from(rng.next_u64()) * u128::from(n);
        }
    }
    (m >> 64) as u64
}

/// Uniform float in `[0, 1)` with 53 random bits.
#[inline(always)]
fn unit_f64(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `r -> (a*r + c) mod n`, a bijection on `[0, n)` because `gcd(a, n) = 1`.
///
/// `a` is the coprime nearest above `n/φ` (golden-ratio multiplicative
/// hashing): consecutive ranks land about 0.38·n apart and, by the
/// three-distance theorem, any run of popular ranks spreads evenly over the
/// range instead of clustering. `c` comes from the seed, so different seeds
/// put the hottest block in different places.
#[derive(Clone, Copy, Debug)]
struct Affine {
    a: u64,
    c: u64,
    n: u64,
}

impl Affine {
    fn new(n: u64, rng: &mut Xoshiro256PlusPlus) -> Affine {
        let n = n.max(1);
        let mut a = ((n as f64 * 0.618_033_988_749_894_9) as u64).clamp(1, n);
        while gcd(a, n) != 1 {
            a = if a + 1 >= n { 1 } else { a + 1 };
        }
        let c = bounded(rng, n);
        Affine { a: a % n, c, n }
    }

    #[inline(always)]
    fn map(&self, r: u64) -> u64 {
        if self.n <= 1 << 32 {
            // Both factors are below 2^32, so the product fits 64 bits and
            // the cheap 64-bit remainder suffices.
            (self.a * r + self.c) % self.n
        } else {
            ((u128::from(self.a) * u128::from(r) + u128::from(self.c)) % u128::from(self.n)) as u64
        }
    }
}

/// Zipf over `1..=n` with exponent `s > 0`: the rejection sampler of
/// `rand_distr::Zipf` (after Jason Crease), specialised to `f64`.
///
/// `rand_distr`'s version computes the acceptance ratio as
/// `x^-s * inv_b^s`; here it is `(inv_b / x)^s`, one `powf` instead of two,
/// which with the monomorphic code makes it about 4x faster (20+ M samples/s
/// instead of ~5 M). It draws the same uniforms in the same order, so it
/// returns the same samples up to the last-bit rounding of the ratio; a test
/// checks the two agree on the same random stream.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastZipf {
    s: f64,
    t: f64,
    q: f64,
}

impl FastZipf {
    pub(crate) fn new(n: u64, s: f64) -> Option<FastZipf> {
        if !(s > 0.0 && s.is_finite()) || n == 0 {
            return None;
        }
        let n = n as f64;
        Some(if s == 1.0 {
            FastZipf { s, t: 1.0 + n.ln(), q: 0.0 }
        } else {
            let q = 1.0 / (1.0 - s);
            FastZipf { s, t: (n.powf(1.0 - s) - s) * q, q }
        })
    }

    #[inline(always)]
    pub(crate) fn sample(&self, rng: &mut Xoshiro256PlusPlus) -> f64 {
        loop {
            let pt = unit_f64(rng) * self.t;
            let inv_b = if pt <= 1.0 {
                pt
            } else if self.s != 1.0 {
                (pt * (1.0 - self.s) + self.s).powf(self.q)
            } else {
                (pt - 1.0).exp()
            };
            let x = (inv_b + 1.0).floor();
            let ratio = if x > 1.0 { (inv_b / x).powf(self.s) } else { 1.0 };
            if unit_f64(rng) < ratio {
                return x;
            }
        }
    }
}

enum Sizes {
    Fixed(u64),
    /// `min * (1 + uniform[0, count))` sectors.
    Range {
        min: u64,
        count: u64,
    },
    /// `(cumulative percent, sectors)`, drawn with one `bounded(100)`.
    Split(Box<[(u32, u64)]>),
}

enum Place {
    Uniform,
    Zipf {
        zipf: FastZipf,
        perm: Affine,
    },
    /// Slots `0..hot` are hot, drawn with probability `p_hot`; `scatter`
    /// moves them (and, to keep a bijection, the cold slots) elsewhere.
    HotCold {
        p_hot: f64,
        hot: u64,
        scatter: Option<Scatter>,
    },
}

/// The hot set of `hotcold:A/S:scatter=SIZE`: slots are grouped in pieces of
/// `piece` consecutive slots and whole pieces are permuted over the range by
/// an affine map, offsets within a piece kept. It is a bijection on the
/// slots, so the contiguous draw's hot prefix `0..hot` becomes as many
/// distinct slots, in pieces spread evenly over the range (the permutation's
/// golden-ratio step), and the cold draw still covers exactly the rest. Slots
/// past the last whole piece (fewer than `piece`) stay in place.
#[derive(Clone, Copy, Debug)]
struct Scatter {
    perm: Affine,
    /// Slots per piece.
    piece: u64,
    /// Slots in whole pieces: `piece * perm.n`.
    whole: u64,
}

impl Scatter {
    fn new(
        piece_bytes: u64,
        align_sectors: u64,
        slots: u64,
        hot: u64,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Result<Scatter> {
        let align_bytes = align_sectors * SECTOR_BYTES;
        if piece_bytes % align_bytes != 0 {
            return Err(err(
                "dist",
                format!(
                    "scatter piece of {piece_bytes} bytes is not a multiple of the {align_bytes}-byte alignment \
                     (command starts are drawn in aligned slots)"
                ),
            ));
        }
        let piece = piece_bytes / align_bytes;
        let pieces = slots / piece;
        if pieces * piece < hot {
            return Err(err(
                "dist",
                format!(
                    "the hot set ({hot} slots of {align_bytes} bytes) does not fit in whole scatter pieces of \
                     {piece_bytes} bytes ({pieces} in the range); use smaller pieces"
                ),
            ));
        }
        Ok(Scatter { perm: Affine::new(pieces, rng), piece, whole: pieces * piece })
    }

    #[inline(always)]
    fn map(&self, slot: u64) -> u64 {
        if slot >= self.whole {
            return slot;
        }
        self.perm.map(slot / self.piece) * self.piece + slot % self.piece
    }
}

enum Timing {
    Closed,
    Constant { period_ns: f64 },
    Poisson { period_ns: f64, next: f64 },
}

/// A synthetic command stream; see the module docs for the model.
pub struct Workload {
    name: String,
    rng: Xoshiro256PlusPlus,
    /// Basis points (of 10 000) below which a draw is a trim, and the width
    /// of the read share above that; `None` when every command has one op.
    mix: Option<(u64, u64)>,
    fixed_op: Op,
    sequential: bool,
    sizes: Sizes,
    place: Place,
    /// First sector of the range.
    base: u64,
    /// Range length in sectors.
    len: u64,
    align: u64,
    /// Number of slots random starts are drawn from.
    slots: u64,
    /// Sequential cursor per op (read, write, trim), relative to `base`.
    cursor: [u64; 3],
    timing: Timing,
    amount: Amount,
    issued: u64,
    bytes: u64,
}

/// Resolves `spec` against a device of `capacity_sectors` and returns its
/// command stream. Fails with [`Error::Workload`] if the range does not fit
/// the device or is too small for the block size.
///
/// The spec's fields are public, so a hand-built one may hold values the
/// parser would refuse (a zero block size, `rwmixread=300`); it is therefore
/// re-validated through its canonical string, which gives it exactly the
/// parser's checks and error messages and normalises mode-implied fields.
pub fn generator(spec: &WorkloadSpec, capacity_sectors: u64) -> Result<Workload> {
    let spec = &WorkloadSpec::parse(&spec.to_string())?;
    let align = spec.align_bytes() / SECTOR_BYTES;
    let resolve = |key: &str, e: Extent| -> Result<u64> {
        Ok(match e {
            Extent::Percent(p) => {
                let s = ((capacity_sectors as f64) * p / 100.0).floor() as u64;
                // Rounded down to the alignment so `offset=50%` starts aligned.
                s.min(capacity_sectors) / align * align
            }
            Extent::Bytes(b) => {
                let s = b / SECTOR_BYTES;
                if s > capacity_sectors {
                    return Err(err(
                        key,
                        format!("{b} bytes is beyond the device's {} bytes", u128::from(capacity_sectors) * 512),
                    ));
                }
                s
            }
        })
    };
    let base = match spec.offset {
        Some(e) => resolve("offset", e)?,
        None => 0,
    };
    if base >= capacity_sectors {
        return Err(err("offset", format!("starts at or beyond the device's {capacity_sectors} sectors")));
    }
    let len = match spec.range {
        Some(e) => resolve("range", e)?,
        None => capacity_sectors - base,
    };
    if len > capacity_sectors - base {
        return Err(err(
            "range",
            format!("{len} sectors from offset sector {base} run past the device's {capacity_sectors} sectors"),
        ));
    }
    let max_s = spec.bs.max_bytes() / SECTOR_BYTES;
    if len < max_s {
        return Err(err("range", format!("{len} sectors is smaller than the largest block size ({max_s} sectors)")));
    }
    let slots = (len - max_s) / align + 1;

    let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.seed);

    let sizes = match &spec.bs {
        BlockSize::Fixed(b) => Sizes::Fixed(b / SECTOR_BYTES),
        BlockSize::Range { min, max } => Sizes::Range { min: min / SECTOR_BYTES, count: max / min },
        BlockSize::Split(v) => {
            let mut cum = 0;
            let table = v
                .iter()
                .map(|&(b, p)| {
                    cum += p;
                    (cum, b / SECTOR_BYTES)
                })
                .collect();
            Sizes::Split(table)
        }
    };

    let place = match spec.dist {
        AccessDist::Uniform => Place::Uniform,
        AccessDist::Zipf { theta } => {
            let zipf = FastZipf::new(slots, theta)
                .ok_or_else(|| err("dist", format!("zipf:{theta}: the exponent must be positive and finite")))?;
            Place::Zipf { zipf, perm: Affine::new(slots, &mut rng) }
        }
        AccessDist::HotCold { hot_access, hot_space, scatter_bytes } => {
            let hot = ((slots as f64 * hot_space / 100.0).round() as u64).clamp(1, slots);
            let scatter = scatter_bytes.map(|b| Scatter::new(b, align, slots, hot, &mut rng)).transpose()?;
            Place::HotCold { p_hot: hot_access / 100.0, hot, scatter }
        }
    };

    let (mix, fixed_op) = {
        let t = u64::from(spec.trimmix);
        // Reads in basis points of the non-trim share (rwmixread has 0.01% steps).
        let m = spec.rwmixread;
        let fixed = if spec.rw.is_trim() || t == 100 {
            Some(Op::Trim)
        } else if t == 0 && m == 100.0 {
            Some(Op::Read)
        } else if t == 0 && m == 0.0 {
            Some(Op::Write)
        } else {
            None
        };
        match fixed {
            Some(op) => (None, op),
            None => (Some((t * 100, ((100 - t) as f64 * m).round() as u64)), Op::Write),
        }
    };

    let timing = match spec.arrival {
        Arrival::Closed { .. } => Timing::Closed,
        Arrival::Open { iops, process: ArrivalProcess::Constant } => Timing::Constant { period_ns: 1e9 / iops },
        Arrival::Open { iops, process: ArrivalProcess::Poisson } => {
            Timing::Poisson { period_ns: 1e9 / iops, next: 0.0 }
        }
    };

    Ok(Workload {
        name: spec.to_string(),
        rng,
        mix,
        fixed_op,
        sequential: !spec.rw.is_random(),
        sizes,
        place,
        base,
        len,
        align,
        slots,
        cursor: [0; 3],
        timing,
        amount: spec.amount,
        issued: 0,
        bytes: 0,
    })
}

impl Workload {
    #[inline(always)]
    fn pick_op(&mut self) -> Op {
        match self.mix {
            None => self.fixed_op,
            Some((trim_bp, read_bp)) => {
                let r = bounded(&mut self.rng, 10_000);
                if r < trim_bp {
                    Op::Trim
                } else if r - trim_bp < read_bp {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        }
    }

    #[inline(always)]
    fn pick_size(&mut self) -> u64 {
        match &self.sizes {
            Sizes::Fixed(s) => *s,
            Sizes::Range { min, count } => min * (1 + bounded(&mut self.rng, *count)),
            Sizes::Split(table) => {
                let r = bounded(&mut self.rng, 100) as u32;
                let last = table.last().map_or(1, |e| e.1);
                table.iter().find(|e| r < e.0).map_or(last, |e| e.1)
            }
        }
    }

    #[inline(always)]
    fn pick_slot(&mut self) -> u64 {
        let n = self.slots;
        match &self.place {
            Place::Uniform => bounded(&mut self.rng, n),
            Place::Zipf { zipf, perm } => {
                // Samples are 1..=n as floats; the clamp only guards rounding.
                let rank = (zipf.sample(&mut self.rng) as u64).clamp(1, n) - 1;
                perm.map(rank)
            }
            Place::HotCold { p_hot, hot, scatter } => {
                let (p_hot, hot, scatter) = (*p_hot, *hot, *scatter);
                let slot = if unit_f64(&mut self.rng) < p_hot || hot == n {
                    bounded(&mut self.rng, hot)
                } else {
                    hot + bounded(&mut self.rng, n - hot)
                };
                scatter.map_or(slot, |s| s.map(slot))
            }
        }
    }

    #[inline(always)]
    fn next_offset(&mut self, op: Op, size: u64) -> u64 {
        if !self.sequential {
            return self.pick_slot() * self.align;
        }
        let i = match op {
            Op::Read => 0,
            Op::Write => 1,
            _ => 2,
        };
        let mut at = self.cursor[i];
        // Written as a subtraction so a range near 2^64 sectors cannot overflow.
        if size > self.len - at {
            at = 0;
        }
        self.cursor[i] = (at + size).div_ceil(self.align).saturating_mul(self.align).min(self.len);
        at
    }

    #[inline(always)]
    fn next_time(&mut self) -> SimTime {
        match &mut self.timing {
            Timing::Closed => SimTime::ZERO,
            // From the index, not by accumulation, so there is no drift.
            Timing::Constant { period_ns } => SimTime((self.issued as f64 * *period_ns).round() as u64),
            Timing::Poisson { period_ns, next } => {
                let t = next.round() as u64;
                let gap: f64 = Exp1.sample(&mut self.rng);
                *next += gap * *period_ns;
                SimTime(t)
            }
        }
    }

    /// Number of commands generated so far.
    pub fn issued(&self) -> u64 {
        self.issued
    }

    /// The sectors random or sequential commands address: `[start, end)`.
    pub fn range(&self) -> (Sector, Sector) {
        (Sector(self.base), Sector(self.base + self.len))
    }
}

impl CmdSource for Workload {
    #[inline]
    fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
        let remaining = match self.amount {
            Amount::Ios(n) if self.issued >= n => return Ok(None),
            Amount::Ios(_) => u64::MAX,
            Amount::Bytes(total) if self.bytes >= total => return Ok(None),
            Amount::Bytes(total) => (total - self.bytes) / SECTOR_BYTES,
        };
        let op = self.pick_op();
        let size = self.pick_size();
        let rel = self.next_offset(op, size);
        let time = self.next_time();
        let sectors = size.min(remaining);
        self.issued += 1;
        self.bytes = self.bytes.saturating_add(sectors * SECTOR_BYTES);
        Ok(Some(HostCmd { time, op, start: Sector(self.base + rel), sectors, continued: false }))
    }

    fn name(&self) -> &str {
        &self.name
    }

    /// Commands of `ios`, or bytes of `size`, done so far.
    fn progress(&self) -> Progress {
        match self.amount {
            Amount::Ios(n) => Progress { done: self.issued, total: Some(n) },
            Amount::Bytes(b) => Progress { done: self.bytes, total: Some(b) },
        }
    }
}
