//! ftlsim: a trace-driven SSD simulator for flash translation layer research.

pub mod error;
pub mod trace;
pub mod units;
pub mod workload;

pub use error::{Error, Result};
