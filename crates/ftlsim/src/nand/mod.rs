//! The NAND flash array: geometry, timing constants, and the page/block state
//! machine that enforces flash physics.
//!
//! The array refuses what real flash cannot do — programming a page that is
//! not erased, programming a block's pages out of order, reading a page never
//! programmed, erasing a block past its endurance — with
//! [`Error::Physics`](crate::Error::Physics). An FTL bug therefore surfaces as
//! an error, never as a plausible number.

mod array;
mod geometry;
mod payload;
mod timing;
pub mod trim_log;

pub use array::{NO_LPN, NandArray, PageOob, Payload};
pub(crate) use geometry::FastDiv;
pub use geometry::{Address, Geometry};
pub use timing::Timing;
