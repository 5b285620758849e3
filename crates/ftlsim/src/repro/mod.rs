//! Paper experiments, one module each: `ftlsim repro <name>` runs them and
//! writes their tables and figures. Each returns structured rows; rendering
//! to CSV, JSON, Markdown and SVG is the module's too, so every front end
//! (CLI, Python) writes the same files, which are the interface for plotting
//! layers.

pub mod coftl;
pub mod figure;
pub mod hat;
pub mod headline;
pub mod mu_ftl;
pub mod trim_cost;
pub mod trim_ftl;
