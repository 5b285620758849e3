//! The timing engine: resources with their own timelines, and the device API
//! through which FTLs ask for flash operations.
//!
//! The FTL decides *what*; the engine decides *when*. Every operation names
//! the earliest time it may start (`not_before`); the engine starts it when
//! that time has come and every resource it needs is free, occupies those
//! resources, and returns the completion time. Independent channels and dies
//! therefore overlap while work on a shared one queues in request order
//! (first come, first served). Background work (GC, merges, map write-back)
//! occupies the same resources and so delays later requests, as on a real
//! drive. All times are integer nanoseconds: runs are bit-for-bit repeatable.

mod calendar;
mod device;
pub mod host;
pub mod power;

pub use calendar::Calendar;
pub use device::{
    AllCopies, BusyTime, CAUSES, Cause, CauseOf, Device, FlashCounters, MultiPlaneCounters, PacedPage, PcmCounters,
};
