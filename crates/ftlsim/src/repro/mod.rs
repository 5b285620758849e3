//! Paper experiments, one module each: `ftlsim repro <name>` runs them and
//! writes their tables and figures. Each returns structured rows; rendering
//! to CSV, JSON, Markdown and SVG is the module's too, so every front end
//! (CLI, Python) writes the same files, which are the interface for plotting
//! layers.

pub mod coftl;
pub mod figure;
pub mod hat;
pub mod mu_ftl;
pub mod trim_cost;
pub mod trim_ftl;

/// A figure legend: a colour swatch and a label per entry, `step` apart
/// from `x`, at height `y`.
pub(crate) fn svg_legend(s: &mut String, labels: &[&str], colors: &[&str], x: f64, y: f64, step: f64) {
    use std::fmt::Write as _;
    for (j, (label, color)) in labels.iter().zip(colors).enumerate() {
        let x = x + step * j as f64;
        let _ = writeln!(
            s,
            "<rect x=\"{x}\" y=\"{y}\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{}\" y=\"{}\">{label}</text>",
            x + 16.0,
            y + 10.0
        );
    }
}
