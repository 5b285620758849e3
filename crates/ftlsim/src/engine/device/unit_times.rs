//! When each array unit is free, with the soonest time of each group of
//! [`GROUP`] units: dynamic allocation wants the units free soonest before
//! every host page, and on a 128-plane drive comparing every unit's time
//! was a third of a fill's run time. A query compares the groups' minima,
//! then the units of the groups holding the answer; a booking updates its
//! group's minimum (rescanning the group when it moved its soonest unit
//! later, as booking the unit just chosen usually does). Both are short
//! contiguous scans, which a tree's chain of dependent loads was not.

use crate::units::SimTime;
use serde::{Deserialize, Serialize};

/// Units a group.
const GROUP: usize = 16;

/// Fewer units are scanned as fast as their groups are kept.
const GROUPS_FROM: usize = 64;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct UnitTimes {
    times: Vec<SimTime>,
    /// Each group's soonest time (empty where not kept).
    group_min: Vec<SimTime>,
}

impl UnitTimes {
    /// `units` units, all free at time zero.
    pub(super) fn new(units: usize) -> UnitTimes {
        let groups = if units >= GROUPS_FROM { units.div_ceil(GROUP) } else { 0 };
        UnitTimes { times: vec![SimTime::ZERO; units], group_min: vec![SimTime::ZERO; groups] }
    }

    #[inline]
    pub(super) fn get(&self, unit: usize) -> SimTime {
        self.times[unit]
    }

    /// Every unit's time, by unit.
    #[inline]
    pub(super) fn as_slice(&self) -> &[SimTime] {
        &self.times
    }

    /// Whether the groups' minima are kept ([`free_by`](Self::free_by) works).
    #[inline]
    pub(super) fn tracked(&self) -> bool {
        !self.group_min.is_empty()
    }

    #[inline(always)]
    pub(super) fn set(&mut self, unit: usize, t: SimTime) {
        let old = std::mem::replace(&mut self.times[unit], t);
        if self.tracked() {
            self.regroup(unit, old, t);
        }
    }

    /// `unit`'s group minimum after its time went from `old` to `t`.
    #[inline]
    fn regroup(&mut self, unit: usize, old: SimTime, t: SimTime) {
        let g = unit / GROUP;
        let min = self.group_min[g];
        if t <= min {
            self.group_min[g] = t;
        } else if old == min {
            self.group_min[g] = self.group(g).iter().copied().min().expect("a group has a unit");
        }
    }

    fn group(&self, g: usize) -> &[SimTime] {
        &self.times[g * GROUP..((g + 1) * GROUP).min(self.times.len())]
    }

    pub(super) fn fill(&mut self, t: SimTime) {
        self.times.fill(t);
        self.group_min.fill(t);
    }

    /// The latest unit's time.
    pub(super) fn max(&self) -> SimTime {
        self.times.iter().copied().max().unwrap_or(SimTime::ZERO)
    }

    /// Calls `each` with every unit free by `at` or by the soonest unit's
    /// time, whichever is later, in unit order; returns that time. (Units
    /// free by `at` are all as soon as each other: a dynamic allocation's
    /// units idle at the horizon.)
    #[inline]
    pub(super) fn free_by(&self, at: SimTime, mut each: impl FnMut(usize)) -> SimTime {
        debug_assert!(self.tracked(), "no group minima kept for {} units", self.times.len());
        let soonest = self.group_min.iter().copied().min().expect("groups kept");
        let by = soonest.max(at);
        for (g, &min) in self.group_min.iter().enumerate() {
            if min > by {
                continue;
            }
            for (i, &t) in self.group(g).iter().enumerate() {
                if t <= by {
                    each(g * GROUP + i);
                }
            }
        }
        by
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a plain scan of the units' times, after any bookings.
        #[test]
        fn the_units_free_soonest_are_those_a_scan_finds(
            units in prop_oneof![1usize..GROUPS_FROM, GROUPS_FROM..GROUPS_FROM + 70],
            sets in prop::collection::vec((0usize..200, 0u64..8), 0..300),
        ) {
            let mut t = UnitTimes::new(units);
            let mut plain = vec![SimTime::ZERO; units];
            for (u, time) in sets {
                let u = u % units;
                t.set(u, SimTime(time));
                plain[u] = SimTime(time);
                let min = *plain.iter().min().unwrap();
                prop_assert_eq!(t.as_slice(), &plain[..]);
                prop_assert_eq!(t.max(), *plain.iter().max().unwrap());
                if t.tracked() {
                    for at in [SimTime::ZERO, SimTime(3), SimTime(9)] {
                        let by = min.max(at);
                        let free: Vec<usize> = (0..units).filter(|&u| plain[u] <= by).collect();
                        let mut found = Vec::new();
                        prop_assert_eq!(t.free_by(at, |u| found.push(u)), by);
                        prop_assert_eq!(found, free);
                    }
                }
            }
        }
    }
}
