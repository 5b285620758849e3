//! Integration tests of the CLI, run as a user runs it.
//!
//! One test binary of modules, one per file beside this one (`cargo test
//! -p ftlsim-cli --test cli_tests MODULE::`), so the simulator is linked once.

mod cli;
mod repro_coftl;
mod repro_hat;
mod repro_mu_ftl;
mod repro_trim_cost;
mod repro_trim_ftl;
mod serve_state;
