//! Flash timing constants in integer nanoseconds, derived from the config.

use crate::config::TimingConfig;
use crate::units::Nanos;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    pub read: Nanos,
    pub program: Nanos,
    pub erase: Nanos,
    /// Moving one page over the channel bus.
    pub page_transfer: Nanos,
    pub command: Nanos,
    /// Host link time per byte, in picoseconds (keeps sub-ns precision in integers).
    pub host_ps_per_byte: u64,
    pub plane_parallel: bool,
    pub multi_plane: bool,
    /// Erase suspend latency (zero: erases are not suspended).
    pub erase_suspend: Nanos,
    /// Program suspend latency (zero: programs are not suspended).
    pub program_suspend: Nanos,
}

impl Timing {
    pub fn new(t: &TimingConfig, page_size: u32, host_ns_per_byte: f64) -> Timing {
        Timing {
            read: Nanos::from_us_f64(t.read_us),
            program: Nanos::from_us_f64(t.program_us),
            erase: Nanos::from_us_f64(t.erase_us),
            page_transfer: Nanos((t.bus_ns_per_byte * page_size as f64).round() as u64),
            command: Nanos(t.command_ns.round() as u64),
            host_ps_per_byte: (host_ns_per_byte * 1000.0).round() as u64,
            plane_parallel: t.plane_parallel,
            multi_plane: t.multi_plane,
            erase_suspend: Nanos::from_us_f64(t.erase_suspend_us),
            program_suspend: Nanos::from_us_f64(t.program_suspend_us),
        }
    }

    /// A page read's whole time on its array unit: command, sensing and
    /// the transfer out.
    pub fn read_op(&self) -> Nanos {
        self.command + self.read + self.page_transfer
    }

    /// A page program's whole time on its array unit: command, the
    /// transfer in and programming.
    pub fn program_op(&self) -> Nanos {
        self.command + self.page_transfer + self.program
    }

    /// A block erase's whole time on its array unit.
    pub fn erase_op(&self) -> Nanos {
        self.command + self.erase
    }

    /// Host link time for `bytes`.
    pub fn host_transfer(&self, bytes: u64) -> Nanos {
        Nanos((bytes * self.host_ps_per_byte).div_ceil(1000))
    }
}
