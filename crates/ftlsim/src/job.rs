//! A complete run described as data: config, input, preconditioning. This is
//! what `ftlsim run`, `ftlsim compare` and the Python `ftlsim.run` execute,
//! so every front end resolves inputs and arrival modes the same way.

use crate::config::{Config, HostMode, OutOfRange};
use crate::engine::host::RangePolicy;
use crate::error::Result;
use crate::report::{EraseMap, InputReport, Report, RequestLatencies};
use crate::sim::{Precondition, RunOptions, Simulation};
use crate::trace::{self, CmdSource, Format, OpenOptions, Progress};
use crate::workload::{self, Arrival};
use std::path::PathBuf;

/// Where a run's commands come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Trace {
        path: PathBuf,
        format: Option<Format>,
        skip_bad_lines: bool,
    },
    /// A synthetic workload spec (`rw=randwrite,bs=4k,...`).
    Workload(String),
}

#[derive(Clone, Debug)]
pub struct Job {
    pub config: Config,
    pub input: Input,
    pub precondition: Option<Precondition>,
    /// Where preconditioned snapshots are kept (see [`crate::snapshot`]);
    /// `None` preconditions every time.
    pub snapshot_dir: Option<PathBuf>,
}

/// A finished run: the report, and what it only summarises.
pub struct Outcome {
    pub report: Report,
    /// Per-request latencies, when the run was asked to keep them.
    pub latencies: Option<RequestLatencies>,
    pub erase_map: EraseMap,
}

/// An opened input with the run options it implies.
pub struct Prepared {
    pub source: Box<dyn CmdSource>,
    pub options: RunOptions,
    /// Doubts about a detected trace format, for the report's warnings.
    pub warnings: Vec<String>,
}

impl Job {
    /// Opens the input and derives the run options: a workload's `iodepth`
    /// or `rate` picks the host mode; a trace uses the config's `[host]`.
    pub fn prepare(&self, logical_sectors: u64) -> Result<Prepared> {
        let mut options = RunOptions::from_config(&self.config);
        let mut warnings = Vec::new();
        options.input = InputReport {
            out_of_range_policy: policy_name(self.config.host.out_of_range).into(),
            ..InputReport::default()
        };
        let source: Box<dyn CmdSource> = match &self.input {
            Input::Workload(text) => {
                // A spec without its own seed follows the run's seed.
                let (w, arrival) = workload::open(text, self.config.seed, logical_sectors)?;
                match arrival {
                    Arrival::Closed { queue_depth } => {
                        options.mode = HostMode::Closed;
                        options.queue_depth = queue_depth;
                    }
                    Arrival::Open { .. } => options.mode = HostMode::Open,
                }
                options.input.source = w.name().to_string();
                w
            }
            Input::Trace { path, format, skip_bad_lines } => {
                let open = |format: Option<Format>| {
                    trace::open(path, &OpenOptions { format, skip_bad_lines: *skip_bad_lines })
                };
                let opened = open(format.clone())?;
                if self.config.host.out_of_range == OutOfRange::Scale {
                    // One extra streaming pass finds the trace's address span.
                    let mut scan = open(Some(opened.format.clone()))?;
                    let stats = trace::stats(scan.source.as_mut())?;
                    options.range = RangePolicy::Scale { source_sectors: stats.max_end_sector.unwrap_or(0) };
                }
                options.input.source = path.display().to_string();
                options.input.format = Some(opened.format.to_string());
                options.input.format_detected = opened.detected;
                warnings = opened.warnings;
                Box::new(trace::ahead::ReadAhead::new(opened.source))
            }
        };
        let source = trace::with_trim_batching(source, &self.config);
        Ok(Prepared { source, options, warnings })
    }

    /// Builds the drive, preconditions it, and runs the input to its end.
    /// `on_progress` sees preconditioning first (pages written of the total,
    /// with 0 requests), then the run.
    pub fn run(&self, on_progress: &mut dyn FnMut(Progress, u64) -> bool) -> Result<Report> {
        let (mut sim, mut prepared) = self.start(on_progress)?;
        let mut report = sim.run(prepared.source.as_mut(), &prepared.options, on_progress)?;
        report.warnings.splice(0..0, prepared.warnings);
        Ok(report)
    }

    /// As [`Job::run`], also returning the erase map and, with
    /// `keep_latencies`, every measured request's latency.
    pub fn run_detailed(
        &self,
        keep_latencies: bool,
        on_progress: &mut dyn FnMut(Progress, u64) -> bool,
    ) -> Result<Outcome> {
        let (mut sim, mut prepared) = self.start(on_progress)?;
        if keep_latencies {
            sim.keep_latencies();
        }
        let mut report = sim.run(prepared.source.as_mut(), &prepared.options, on_progress)?;
        report.warnings.splice(0..0, prepared.warnings);
        Ok(Outcome { report, latencies: sim.take_latencies(), erase_map: sim.erase_map() })
    }

    /// The drive built and preconditioned, and the input opened.
    fn start(&self, on_progress: &mut dyn FnMut(Progress, u64) -> bool) -> Result<(Simulation, Prepared)> {
        let mut sim = Simulation::new(self.config.clone())?;
        let mut prepared = self.prepare(sim.logical_sectors())?;
        let mut observe = |progress| on_progress(progress, 0);
        prepared.options.input.snapshot = match (self.precondition, &self.snapshot_dir) {
            (Some(p), Some(dir)) => Some(sim.precondition_cached(p, dir, &mut observe)?.to_string()),
            (Some(p), None) => {
                sim.precondition_observed(p, &mut observe)?;
                Some("none".into())
            }
            (None, _) => None,
        };
        Ok((sim, prepared))
    }
}

fn policy_name(p: OutOfRange) -> &'static str {
    match p {
        OutOfRange::Error => "error",
        OutOfRange::Wrap => "wrap",
        OutOfRange::Scale => "scale",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        let config = Config::load("hat-table4", &["geometry.blocks_per_plane=64".into()]).unwrap();
        Job {
            config,
            input: Input::Workload("rw=randrw,bs=4k,ios=3000,trimmix=10".into()),
            precondition: None,
            snapshot_dir: None,
        }
    }

    #[test]
    fn kept_latencies_match_the_report() {
        let out = job().run_detailed(true, &mut |_, _| true).unwrap();
        let lat = out.latencies.expect("asked for");
        let r = &out.report;
        assert_eq!(
            (lat.read.len() as u64, lat.write.len() as u64, lat.trim.len() as u64),
            (r.reads, r.writes, r.trims)
        );
        let max_us = |v: &[u64]| v.iter().copied().max().unwrap_or(0) as f64 / 1000.0;
        assert_eq!(max_us(&lat.write), r.latency_us.write.max);
        let mean_us = lat.read.iter().sum::<u64>() as f64 / lat.read.len() as f64 / 1000.0;
        assert!((mean_us - r.latency_us.read.mean).abs() < 1e-9);
        assert_eq!(out.erase_map.erase_count.len(), 64 * 64);
    }

    #[test]
    fn latencies_are_off_by_default_and_do_not_change_the_report() {
        let plain = job().run(&mut |_, _| true).unwrap();
        let detailed = job().run_detailed(false, &mut |_, _| true).unwrap();
        assert!(detailed.latencies.is_none());
        let strip = |mut r: Report| {
            (r.wall_time_s, r.peak_rss_bytes) = (0.0, None);
            r
        };
        assert_eq!(strip(plain), strip(detailed.report));
    }
}
