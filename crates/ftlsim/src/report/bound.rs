//! The throughput a run's own work allows: the back-of-envelope bound a
//! reader checks an IOPS figure against, computed for every run.
//!
//! Each resource class must have spent at least its share of the work the
//! run counted: the array units (dies, or planes with
//! `timing.plane_parallel`) a read's command, sensing and transfer, a
//! program's command, transfer and `tPROG`, an erase's command and `tBERS`
//! (a multi-plane group's members after the first add only their
//! transfers); the channel buses every page's transfer and each program's
//! command; the host link, the PCM and the firmware cores the time they
//! were booked. The class needing the longest per resource binds the run:
//! no schedule serves the run's requests faster than that. Waits (a unit
//! held while its bus is busy, a plane idle with nothing queued) are what
//! keep a run below it.

use crate::engine::{FlashCounters, MultiPlaneCounters};
use crate::nand::Timing;
use serde::{Deserialize, Serialize};

/// The bound and how close the run came.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// The binding class: `planes` or `dies` (the array units), `channels`,
    /// `host link`, `pcm` or `controller`.
    pub resource: String,
    /// The least time the run's work holds each resource of that class, s.
    pub busy_s: f64,
    /// Requests per second at the bound: requests / `busy_s`.
    pub iops: f64,
    /// The run's IOPS over the bound (`busy_s` / simulated time): at most 1
    /// unless work outlasted the last completion (writes a write buffer
    /// completed before their flash work ended, map write-backs HAT's PCM
    /// write queue took).
    pub share: f64,
}

/// What the array units are: `planes` with `timing.plane_parallel`, else
/// `dies`.
pub fn unit_name(plane_parallel: bool) -> &'static str {
    if plane_parallel { "planes" } else { "dies" }
}

/// What the run did, and on how many resources of each class.
pub struct Work<'a> {
    pub counters: &'a FlashCounters,
    pub multi_plane: &'a MultiPlaneCounters,
    pub timing: &'a Timing,
    pub units: usize,
    pub channels: usize,
    pub host_link_ns: u64,
    pub pcm_ns: u64,
    pub controller_ns: u64,
    pub cores: usize,
}

impl Work<'_> {
    /// The least busy time per resource of each class, ns, named.
    pub fn per_resource_ns(&self) -> [(&'static str, f64); 5] {
        let t = self.timing;
        let c = self.counters;
        let (reads, programs, erases) =
            (FlashCounters::timed(&c.reads), FlashCounters::timed(&c.programs), FlashCounters::timed(&c.erases));
        let m = self.multi_plane;
        // A group's members after the first share its command and its
        // sensing, program or erase time: only their transfers add.
        let joined = |ops: u64, groups: u64| ops.saturating_sub(groups);
        let unit_ns = reads * t.read_op().0 + programs * t.program_op().0 + erases * t.erase_op().0
            - joined(m.reads, m.read_groups) * (t.command + t.read).0
            - joined(m.programs, m.program_groups) * (t.command + t.program).0
            - joined(m.erases, m.erase_groups) * t.erase_op().0;
        let bus_ns = (reads + programs) * t.page_transfer.0 + programs * t.command.0;
        let per = |ns: u64, n: usize| ns as f64 / n.max(1) as f64;
        [
            (unit_name(t.plane_parallel), per(unit_ns, self.units)),
            ("channels", per(bus_ns, self.channels)),
            ("host link", self.host_link_ns as f64),
            ("pcm", self.pcm_ns as f64),
            ("controller", per(self.controller_ns, self.cores)),
        ]
    }

    /// The bound of `requests` served in `sim_time_s`; `None` without
    /// requests or work.
    pub fn bound(&self, requests: u64, sim_time_s: f64) -> Option<Bound> {
        let (resource, ns) = self.per_resource_ns().into_iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
        if requests == 0 || ns <= 0.0 {
            return None;
        }
        let busy_s = ns * 1e-9;
        let share = if sim_time_s > 0.0 { busy_s / sim_time_s } else { 0.0 };
        Some(Bound { resource: resource.into(), busy_s, iops: requests as f64 / busy_s, share })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Cause;
    use crate::units::Nanos;

    fn timing(plane_parallel: bool) -> Timing {
        Timing {
            read: Nanos(50_000),
            program: Nanos(500_000),
            erase: Nanos(2_000_000),
            page_transfer: Nanos(40_000),
            command: Nanos(1_000),
            host_ps_per_byte: 0,
            plane_parallel,
            multi_plane: !plane_parallel,
            erase_suspend: Nanos::ZERO,
            program_suspend: Nanos::ZERO,
        }
    }

    fn counters(reads: u64, programs: u64, erases: u64) -> FlashCounters {
        let mut c = FlashCounters::default();
        c.reads[Cause::Gc as usize] = reads;
        c.programs[Cause::Host as usize] = programs;
        c.erases[Cause::Gc as usize] = erases;
        // Placement costs no time.
        c.programs[Cause::Placement as usize] = 1_000_000;
        c
    }

    fn work<'a>(c: &'a FlashCounters, m: &'a MultiPlaneCounters, t: &'a Timing) -> Work<'a> {
        Work {
            counters: c,
            multi_plane: m,
            timing: t,
            units: 4,
            channels: 2,
            host_link_ns: 1_000_000,
            pcm_ns: 0,
            controller_ns: 0,
            cores: 1,
        }
    }

    #[test]
    fn the_planes_bind_programs_and_the_bound_counts_each_operation_once() {
        let (c, m, t) = (counters(100, 400, 2), MultiPlaneCounters::default(), timing(true));
        let b = work(&c, &m, &t).bound(400, 0.1).unwrap();
        // Units: 100 × 91 µs + 400 × 541 µs + 2 × 2,001 µs over 4 planes.
        let unit_us = (100.0 * 91.0 + 400.0 * 541.0 + 2.0 * 2001.0) / 4.0;
        assert_eq!(b.resource, "planes");
        assert!((b.busy_s - unit_us * 1e-6).abs() < 1e-12, "{b:?}");
        assert!((b.iops - 400.0 / (unit_us * 1e-6)).abs() < 1e-6, "{b:?}");
        assert!((b.share - unit_us * 1e-6 / 0.1).abs() < 1e-12, "{b:?}");
    }

    #[test]
    fn multi_plane_groups_hold_a_die_once_and_the_bus_can_bind() {
        let c = counters(0, 400, 0);
        let t = timing(false);
        // 400 programs in 100 groups of four: one tPROG a group on the die.
        let m = MultiPlaneCounters { program_groups: 100, programs: 400, ..Default::default() };
        let [(units, unit_ns), (_, bus_ns), ..] = work(&c, &m, &t).per_resource_ns();
        assert_eq!(units, "dies");
        assert_eq!(unit_ns, (100.0 * 501_000.0 + 400.0 * 40_000.0) / 4.0);
        assert_eq!(bus_ns, 400.0 * 41_000.0 / 2.0);
        let b = work(&c, &m, &t).bound(400, 1.0).unwrap();
        assert_eq!((b.resource.as_str(), b.busy_s), ("dies", unit_ns * 1e-9));
        // A slow host link binds instead.
        let slow = Work { host_link_ns: 20_000_000, ..work(&c, &m, &t) };
        assert_eq!(slow.bound(400, 1.0).unwrap().resource, "host link");
    }

    #[test]
    fn no_requests_or_no_work_has_no_bound() {
        let (c, m, t) = (counters(0, 0, 0), MultiPlaneCounters::default(), timing(true));
        let idle = Work { host_link_ns: 0, ..work(&c, &m, &t) };
        assert_eq!(idle.bound(10, 1.0), None);
        let busy = counters(1, 1, 0);
        assert_eq!(work(&busy, &m, &t).bound(0, 1.0), None);
    }
}
