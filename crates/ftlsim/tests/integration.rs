//! Integration tests of the simulator library.
//!
//! One test binary of modules, one per file beside this one (`cargo test
//! -p ftlsim --test integration MODULE::`), so the simulator is linked once.

mod conformance;
mod determinism;
mod fidelity;
mod figures;
mod fuzz;
mod gc_trigger;
mod hat;
mod hybrids;
mod map_units;
mod power_cuts;
mod precondition;
mod readme_headlines;
mod saved_state;
mod snapshot;
mod timing;
mod trim_cost;
