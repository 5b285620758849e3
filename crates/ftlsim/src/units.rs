//! Units as types: simulated time, sectors, logical and physical page numbers.
//!
//! No bare integer crosses a module boundary where one of these fits. They are
//! plain `Copy` newtypes with no runtime cost; arithmetic is spelled out where
//! it is meant (`SimTime + Nanos`), so mixing a sector count with a page
//! number does not compile.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// Bytes in one sector, the host's addressing unit.
pub const SECTOR_BYTES: u64 = 512;

/// A point in simulated time, in integer nanoseconds since the run began.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SimTime(pub u64);

/// A duration in integer nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }

    /// Time elapsed since `earlier`; zero if `earlier` is later.
    pub fn since(self, earlier: SimTime) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);

    pub fn from_us_f64(us: f64) -> Nanos {
        Nanos((us * 1000.0).round() as u64)
    }

    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
}

impl Add<Nanos> for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, d: Nanos) -> SimTime {
        SimTime(self.0 + d.0)
    }
}

impl AddAssign<Nanos> for SimTime {
    #[inline]
    fn add_assign(&mut self, d: Nanos) {
        self.0 += d.0;
    }
}

impl Add for Nanos {
    type Output = Nanos;
    #[inline]
    fn add(self, d: Nanos) -> Nanos {
        Nanos(self.0 + d.0)
    }
}

impl Sub for SimTime {
    type Output = Nanos;
    #[inline]
    fn sub(self, other: SimTime) -> Nanos {
        self.since(other)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6} s", self.as_secs_f64())
    }
}

/// A 512-byte sector address on the host's logical address space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Sector(pub u64);

impl Sector {
    pub fn bytes(self) -> u64 {
        self.0 * SECTOR_BYTES
    }
}

impl fmt::Display for Sector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sector {}", self.0)
    }
}

/// Logical page number: a page-sized slice of the host's address space.
///
/// 32 bits address 16 TiB of 4 KiB pages; configuration validation refuses
/// devices that would not fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Lpn(pub u32);

/// Physical page number: one NAND page, numbered plane-major (see
/// [`crate::nand::Geometry`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ppn(pub u32);

/// Physical block number, global across the device (`ppn / pages_per_block`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BlockId(pub u32);

/// Index of a plane across the whole device (the unit that owns blocks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PlaneId(pub u32);

impl Lpn {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl Ppn {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl BlockId {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl PlaneId {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Lpn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LPN {}", self.0)
    }
}

impl fmt::Display for Ppn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PPN {}", self.0)
    }
}

impl fmt::Display for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "block {}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_arithmetic() {
        let t = SimTime(1_000) + Nanos(500);
        assert_eq!(t, SimTime(1_500));
        assert_eq!(t - SimTime(2_000), Nanos(0));
        assert_eq!(t - SimTime(500), Nanos(1_000));
        assert_eq!(Nanos::from_us_f64(165.6), Nanos(165_600));
    }
}
