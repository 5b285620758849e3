//! `ftlsim repro hat`: the evaluation of Hu et al., "Achieving Page-Mapping
//! FTL Performance at Block-Mapping FTL Cost by Hiding Address Translation".
//!
//! On the `hat-table4` drive, the paper's five FTLs — page mapping (the
//! ideal), block mapping, FAST, DFTL and HAT; those of them this build has
//! (see [`ftls`]) — replay:
//!
//! - four synthetic workloads shaped like the paper's Table 3 traces (mean
//!   request size, read share, mean inter-arrival time, Poisson arrivals),
//!   with a hot/cold locality tuned so a 128 KiB mapping cache hits about as
//!   often as the paper's Table 1 reports: the hot share of accesses is the
//!   target hit ratio, and the hot set is small enough to stay cached while
//!   cold misses churn through the cache (a quarter of what it could keep)
//!   and to be reused often within the run (≥ 20 accesses per hot page), so
//!   compulsory misses stay rare; each after a sequential fill of the drive;
//! - any real trace given (`--trace`), after the same fill;
//! - the micro-benchmark of Figure 11: random reads, then random writes, of
//!   4–128 sectors at queue depth 32, one after another on one filled drive
//!   per FTL, IOPS normalized to page mapping.
//!
//! Rows carry mean response time and its deviation from page mapping, erase
//! counts, mapping-cache hit ratios and energy by component.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::ftl::FTL_NAMES;
use crate::job::{Input, Job};
use crate::report::{EnergyReport, Report};
use crate::repro::figure::{Bars, Figure, Lines, distinct};
use crate::sim::{Precondition, Simulation};
use serde::Serialize;
use std::fmt::Write;
use std::path::PathBuf;

/// The FTLs of the paper's evaluation, in its order.
pub const PAPER_FTLS: [&str; 5] = ["page", "block", "fast", "dftl", "hat"];

/// The paper's FTLs this build provides (the table completes itself as they land).
pub fn ftls() -> Vec<&'static str> {
    PAPER_FTLS.into_iter().filter(|f| FTL_NAMES.contains(f)).collect()
}

/// A workload shaped like one of the paper's Table 3 traces.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Shape {
    pub name: &'static str,
    pub mean_sectors: u32,
    pub read_pct: f64,
    pub interarrival_ms: f64,
    /// Mapping-cache hit ratio the paper's Table 1 reports for the trace.
    pub paper_hit_ratio: f64,
}

pub const SHAPES: [Shape; 4] = [
    Shape { name: "Fin1", mean_sectors: 6, read_pct: 23.2, interarrival_ms: 8.19, paper_hit_ratio: 0.66 },
    Shape { name: "Fin2", mean_sectors: 4, read_pct: 82.3, interarrival_ms: 11.08, paper_hit_ratio: 0.77 },
    // "< 1 ms for 96% of requests": exponential with P(X < 1 ms) = 0.96.
    Shape { name: "Openmail", mean_sectors: 11, read_pct: 45.4, interarrival_ms: 0.3107, paper_hit_ratio: 0.47 },
    Shape { name: "Web", mean_sectors: 30, read_pct: 99.9, interarrival_ms: 2.99, paper_hit_ratio: 0.025 },
];

/// The state every FTL starts from: the drive filled sequentially, then
/// flushed ([`measure`]).
pub const PRECONDITION: Precondition = Precondition { fill: 1.0, overwrite: 0.0 };

/// Request sizes of the micro-benchmark (Figure 11), sectors.
pub const MICRO_SECTORS: [u64; 6] = [4, 8, 16, 32, 64, 128];

#[derive(Clone, Debug, Default)]
pub struct Options {
    pub trace: Option<PathBuf>,
    /// A small drive and short runs (seconds), for tests.
    pub quick: bool,
    /// Extra `--set` overrides on top of `hat-table4`.
    pub overrides: Vec<String>,
}

/// One FTL on one workload.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadRow {
    pub workload: String,
    pub input: String,
    pub ftl: String,
    pub requests: u64,
    pub mean_us: f64,
    /// (mean / page mapping's mean − 1) × 100.
    pub vs_page_pct: Option<f64>,
    pub erases: u64,
    pub mapping_hit_ratio: Option<f64>,
    pub paper_hit_ratio: Option<f64>,
    pub energy_j: EnergyReport,
    /// Total energy / page mapping's.
    pub energy_vs_page: Option<f64>,
}

/// One point of the micro-benchmark.
#[derive(Clone, Debug, Serialize)]
pub struct MicroRow {
    pub op: String,
    pub sectors: u64,
    pub ftl: String,
    pub iops: f64,
    /// IOPS / page mapping's IOPS.
    pub vs_page: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HatResults {
    pub config: String,
    pub quick: bool,
    pub ftls: Vec<String>,
    /// Paper FTLs not in this build.
    pub missing_ftls: Vec<String>,
    pub workloads: Vec<WorkloadRow>,
    pub micro: Vec<MicroRow>,
}

struct Sizes {
    requests: u64,
    micro_requests: u64,
}

fn sizes(quick: bool) -> Sizes {
    if quick {
        Sizes { requests: 3000, micro_requests: 400 }
    } else {
        Sizes { requests: 100_000, micro_requests: 10_000 }
    }
}

/// `hat-table4` in the reproduction's regime with the options' overrides
/// (quick: 64 blocks per plane).
pub fn config(opts: &Options, ftl: &str) -> Result<Config> {
    // The regime this reproduction was first run in (the paper's drive:
    // static striping, GC ahead of the write that needs it); `--set` may
    // change either.
    let mut o = vec!["gc.mode=\"blocking\"".to_string(), "ftl.allocation=\"static\"".to_string()];
    if opts.quick {
        o.push("geometry.blocks_per_plane=64".to_string());
    }
    o.extend(opts.overrides.iter().cloned());
    o.push(format!("ftl.name=\"{ftl}\""));
    Config::load("hat-table4", &o)
}

/// The synthetic workload spec of `shape` on drive `cfg`.
pub fn spec(shape: &Shape, cfg: &Config, requests: u64) -> String {
    let cache = cfg.ftl.cache_entries() as f64;
    let hot_access = shape.paper_hit_ratio * 100.0;
    let spp = cfg.geometry.page_size as f64 / 512.0;
    let pages_per_request = shape.mean_sectors as f64 / spp + 1.0;
    let hot_accesses = shape.paper_hit_ratio * requests as f64 * pages_per_request;
    let hot_pages = (shape.paper_hit_ratio * cache / 4.0).min(hot_accesses / 20.0).max(1.0);
    let hot_space = (hot_pages / cfg.logical_pages() as f64 * 100.0).min(50.0);
    format!(
        "rw=randrw,rwmixread={},bs=512-{},ios={requests},rate={:.3},arrival=poisson,dist=hotcold:{hot_access}/{hot_space:.6},seed={}",
        shape.read_pct.round(),
        (2 * shape.mean_sectors - 1) * 512,
        1000.0 / shape.interarrival_ms,
        cfg.seed
    )
}

/// Where one workload's commands come from.
enum Source {
    Shape(Shape),
    Trace(PathBuf),
}

impl Source {
    fn name(&self) -> String {
        match self {
            Source::Shape(s) => format!("{}-like", s.name),
            Source::Trace(p) => {
                p.file_name().map_or_else(|| p.display().to_string(), |f| f.to_string_lossy().into_owned())
            }
        }
    }
}

/// Runs the whole experiment; `on_run` hears of each run as it starts.
pub fn run(opts: &Options, on_run: &mut dyn FnMut(&str)) -> Result<HatResults> {
    let ftls = ftls();
    if !ftls.contains(&"page") {
        return Err(Error::config("ftl", "the HAT experiment normalizes to the page FTL, which this build lacks"));
    }
    let n = sizes(opts.quick);
    let mut inputs: Vec<Source> = SHAPES.into_iter().map(Source::Shape).collect();
    inputs.extend(opts.trace.clone().map(Source::Trace));
    let mut workloads = Vec::new();
    for source in &inputs {
        let name = source.name();
        let mut reports = Vec::new();
        for ftl in &ftls {
            on_run(&format!("{name} / {ftl}"));
            let mut config = config(opts, ftl)?;
            let input = match source {
                Source::Shape(shape) => Input::Workload(spec(shape, &config, n.requests)),
                Source::Trace(path) => {
                    // Real traces may address beyond the (quick) drive.
                    config.host.out_of_range = crate::config::OutOfRange::Wrap;
                    Input::Trace { path: path.clone(), format: None, skip_bad_lines: false }
                }
            };
            reports.push(measure(config, input, PRECONDITION)?);
        }
        let paper_hit = match source {
            Source::Shape(shape) => Some(shape.paper_hit_ratio),
            Source::Trace(_) => None,
        };
        workloads.extend(workload_rows(&name, paper_hit, &reports));
    }
    let mut micro = Vec::new();
    for ftl in &ftls {
        on_run(&format!("micro-benchmark / {ftl}"));
        let config = config(opts, ftl)?;
        let mut sim = Simulation::new(config.clone())?;
        sim.precondition(PRECONDITION)?;
        sim.flush_unmeasured()?;
        for (i, op) in ["randread", "randwrite"].into_iter().enumerate() {
            for (j, sectors) in MICRO_SECTORS.into_iter().enumerate() {
                // Each point its own addresses: reusing another point's would hit its cached entries.
                let seed = config.seed.wrapping_mul(100) + (i * MICRO_SECTORS.len() + j) as u64;
                let spec = format!("rw={op},bs={},ios={},iodepth=32,seed={seed}", sectors * 512, n.micro_requests);
                let job = Job { config: config.clone(), input: Input::Workload(spec), precondition: None };
                let mut prepared = job.prepare(sim.logical_sectors())?;
                sim.restart_measurement()?;
                let r = sim.run(prepared.source.as_mut(), &prepared.options, &mut |_, _| true)?;
                micro.push(MicroRow { op: op.into(), sectors, ftl: ftl.to_string(), iops: r.iops, vs_page: None });
            }
        }
    }
    for i in 0..micro.len() {
        let page = micro.iter().find(|m| m.ftl == "page" && m.op == micro[i].op && m.sectors == micro[i].sectors);
        micro[i].vs_page = page.map(|p| micro[i].iops / p.iops);
    }
    Ok(HatResults {
        config: config(opts, "page")?.name,
        quick: opts.quick,
        ftls: ftls.iter().map(|f| f.to_string()).collect(),
        missing_ftls: PAPER_FTLS.iter().filter(|f| !ftls.contains(f)).map(|f| f.to_string()).collect(),
        workloads,
        micro,
    })
}

/// One measured run in the experiment's starting state: `pre`, then a
/// FLUSH (cached map updates written back), so every FTL starts alike.
pub fn measure(config: Config, input: Input, pre: Precondition) -> Result<Report> {
    let job = Job { config, input, precondition: None };
    let mut sim = Simulation::new(job.config.clone())?;
    let mut prepared = job.prepare(sim.logical_sectors())?;
    sim.precondition(pre)?;
    sim.flush_unmeasured()?;
    sim.run(prepared.source.as_mut(), &prepared.options, &mut |_, _| true)
}

/// Share of the run the PCM spent writing (1: its write bandwidth is the bound).
pub fn pcm_write_busy(r: &Report, cfg: &Config) -> f64 {
    if r.sim_time_s <= 0.0 {
        return 0.0;
    }
    r.pcm_writes as f64 * cfg.pcm.write_us * 1e-6 / r.sim_time_s
}

fn workload_rows(name: &str, paper_hit: Option<f64>, reports: &[Report]) -> Vec<WorkloadRow> {
    let page = reports.iter().find(|r| r.ftl == "page");
    reports
        .iter()
        .map(|r| WorkloadRow {
            workload: name.to_string(),
            input: r.input.source.clone(),
            ftl: r.ftl.clone(),
            requests: r.requests,
            mean_us: r.latency_us.all.mean,
            vs_page_pct: page.map(|p| (r.latency_us.all.mean / p.latency_us.all.mean - 1.0) * 100.0),
            erases: r.blocks_erased,
            mapping_hit_ratio: r.mapping_hit_ratio,
            paper_hit_ratio: paper_hit.filter(|_| r.mapping_hit_ratio.is_some()),
            energy_j: r.energy_j.clone(),
            energy_vs_page: page.map(|p| r.energy_j.total / p.energy_j.total),
        })
        .collect()
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(String::new, |x| format!("{x:.digits$}"))
}

/// One CSV of all rows: `table` is `workload` or `micro`.
pub fn to_csv(r: &HatResults) -> String {
    let mut s = String::from(
        "table,workload,ftl,op,sectors,requests,mean_us,vs_page_pct,erases,mapping_hit_ratio,energy_flash_j,energy_dram_j,energy_pcm_j,energy_total_j,energy_vs_page,iops,iops_vs_page\n",
    );
    for w in &r.workloads {
        let e = &w.energy_j;
        let _ = writeln!(
            s,
            "workload,{},{},,,{},{:.3},{},{},{},{:.6e},{:.6e},{:.6e},{:.6e},{},,",
            w.workload,
            w.ftl,
            w.requests,
            w.mean_us,
            opt(w.vs_page_pct, 3),
            w.erases,
            opt(w.mapping_hit_ratio, 4),
            e.flash,
            e.dram,
            e.pcm,
            e.total,
            opt(w.energy_vs_page, 4)
        );
    }
    for m in &r.micro {
        let _ = writeln!(s, "micro,,{},{},{},,,,,,,,,,,{:.1},{}", m.ftl, m.op, m.sectors, m.iops, opt(m.vs_page, 4));
    }
    s
}

/// The tables for people, Markdown.
pub fn to_markdown(r: &HatResults) -> String {
    let mut s = format!("# HAT experiment on `{}`{}\n\n", r.config, if r.quick { " (quick)" } else { "" });
    if !r.missing_ftls.is_empty() {
        let _ = writeln!(s, "Not in this build (columns appear when they land): {}.\n", r.missing_ftls.join(", "));
    }
    let names: Vec<&str> = {
        let mut v: Vec<&str> = r.workloads.iter().map(|w| w.workload.as_str()).collect();
        v.dedup();
        v
    };
    let cell = |wl: &str, ftl: &str, f: &dyn Fn(&WorkloadRow) -> String| {
        r.workloads.iter().find(|w| w.workload == wl && w.ftl == ftl).map_or_else(String::new, f)
    };
    let table = |s: &mut String, title: &str, f: &dyn Fn(&WorkloadRow) -> String| {
        let _ =
            writeln!(s, "## {title}\n\n| workload | {} |\n|---|{}", r.ftls.join(" | "), "---|".repeat(r.ftls.len()));
        for wl in &names {
            let row: Vec<String> = r.ftls.iter().map(|ftl| cell(wl, ftl, f)).collect();
            let _ = writeln!(s, "| {wl} | {} |", row.join(" | "));
        }
        s.push('\n');
    };
    table(&mut s, "Mean response time, µs (deviation from page mapping)", &|w| {
        format!("{:.1} ({:+.2}%)", w.mean_us, w.vs_page_pct.unwrap_or(0.0))
    });
    table(&mut s, "Blocks erased", &|w| w.erases.to_string());
    table(&mut s, "Mapping-cache hit ratio (paper's Table 1)", &|w| match (w.mapping_hit_ratio, w.paper_hit_ratio) {
        (Some(h), Some(p)) => format!("{:.1}% ({:.1}%)", h * 100.0, p * 100.0),
        (Some(h), None) => format!("{:.1}%", h * 100.0),
        _ => "-".into(),
    });
    table(&mut s, "Energy, J: total (flash / DRAM / PCM), share of page mapping's", &|w| {
        let e = &w.energy_j;
        format!(
            "{:.3} ({:.3} / {:.3} / {:.3}), {:.1}%",
            e.total,
            e.flash,
            e.dram,
            e.pcm,
            w.energy_vs_page.unwrap_or(0.0) * 100.0
        )
    });
    let _ = writeln!(s, "## Micro-benchmark (Figure 11): IOPS, normalized to page mapping\n");
    let _ = writeln!(s, "| op | sectors | {} |\n|---|---|{}", r.ftls.join(" | "), "---|".repeat(r.ftls.len()));
    for op in ["randread", "randwrite"] {
        for sectors in MICRO_SECTORS {
            let row: Vec<String> = r
                .ftls
                .iter()
                .map(|ftl| {
                    r.micro
                        .iter()
                        .find(|m| m.op == op && m.sectors == sectors && &m.ftl == ftl)
                        .map_or_else(String::new, |m| format!("{:.0} ({:.3})", m.iops, m.vs_page.unwrap_or(0.0)))
                })
                .collect();
            if row.iter().any(|c| !c.is_empty()) {
                let _ = writeln!(s, "| {op} | {sectors} | {} |", row.join(" | "));
            }
        }
    }
    s
}

/// The figure: mean response time over page mapping's, one group of bars
/// per workload (log scale when an FTL is more than 10× off), and Figure
/// 11's micro-benchmark, IOPS over page mapping's against request size.
pub fn to_svg(r: &HatResults) -> String {
    let names = distinct(r.workloads.iter().map(|w| w.workload.as_str()));
    let ratio = |wl: &str, ftl: &str| {
        let w = r.workloads.iter().find(|w| w.workload == wl && w.ftl == ftl)?;
        Some(1.0 + w.vs_page_pct? / 100.0)
    };
    let response =
        r.ftls.iter().fold(Bars::new("workload", "mean response time / page mapping's (×)", &names), |b, ftl| {
            b.series(ftl, names.iter().map(|wl| ratio(wl, ftl)))
        });
    let mut fig = Figure::new(&format!(
        "repro hat on {}{}: {} workloads after a sequential fill; micro-benchmark at QD 32",
        r.config,
        if r.quick { " (quick)" } else { "" },
        names.join(", ")
    ))
    .columns(3)
    .panel(response.caption("Mean response time, normalized to page mapping"));
    for (op, what) in [("randread", "random reads"), ("randwrite", "random writes")] {
        let micro = r.ftls.iter().fold(Lines::new("request size (KiB)", "IOPS / page mapping's (×)"), |l, ftl| {
            let points = r.micro.iter().filter(|m| m.op == op && &m.ftl == ftl);
            l.series(ftl, points.filter_map(|m| Some((m.sectors as f64 / 2.0, m.vs_page?))))
        });
        fig = fig.panel(micro.caption(&format!("Figure 11: {what}, normalized to page mapping")));
    }
    fig.to_svg()
}
