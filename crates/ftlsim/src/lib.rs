//! ftlsim: a trace-driven SSD simulator for flash translation layer research.
//!
//! The layers, from the bottom: [`nand`] (geometry, timing constants, the
//! physical page/block state that refuses impossible operations), [`engine`]
//! (resource timelines, the device API FTLs call, the host interface),
//! [`ftl`] (the FTL trait, the shared block pool and victim selection, one
//! module per scheme), [`controller`] (the write buffer and the scheduler
//! of background work, above the FTL), [`trace`] and [`workload`] (where commands come from),
//! [`report`] (what a run measures), and [`sim`], the facade every front end
//! uses. Dependencies point one way, downwards.
//!
//! Units are types ([`units`]); configuration is typed and validated
//! ([`config`]); every random choice comes from one seeded, named PRNG
//! ([`rng`]), so the same config, input and seed give identical results.

pub mod config;
pub mod controller;
pub mod engine;
pub mod error;
pub mod ftl;
pub mod job;
pub mod limits;
pub mod mem;
pub mod nand;
pub mod report;
pub mod repro;
pub mod rng;
pub mod sim;
pub mod snapshot;
#[doc(hidden)]
pub mod testdata;
pub mod trace;
pub mod trim;
pub mod units;
pub mod workload;

pub use config::Config;
pub use error::{Error, Result};
pub use report::Report;
pub use sim::{Precondition, PreconditionMode, RunOptions, Simulation};
