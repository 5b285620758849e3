//! Paper experiments, one module each: `ftlsim repro <name>` runs them and
//! writes their tables and figures. Each returns structured rows; the data
//! files it writes are the interface for plotting layers.

pub mod trim_ftl;
