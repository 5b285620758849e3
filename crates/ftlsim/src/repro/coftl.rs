//! `ftlsim repro coftl`: the evaluation of Chang et al., "An Efficient FTL
//! Design for Multi-chipped Solid-State Drives", Figs. 7–9, and the crash
//! recovery its Section III claims, on the `coftl-mt29f64g08` drive
//! (16 channels × 1 chip × 2 planes, 4 KiB pages, 256 pages per block;
//! plane-parallel), shrunk from 4,096 to 128 blocks per plane (4 GiB
//! physical, 3.7 GiB logical; `quick`: 32, 1 GiB) so the whole run takes
//! minutes. Every run fills the drive sequentially to 97% of its logical
//! space (as the paper does), flushes, then replays the workload closed-loop
//! at queue depth [`QUEUE_DEPTH`]; the figure of merit is requests per
//! second of simulated time.
//!
//! The paper's NTFS desktop trace is not public. [`desktop`] stands in: four
//! streams of the synthetic workload generator, interleaved by a seeded
//! draw per request ([`STREAMS`] gives each one's share and spec):
//!
//! - metadata writes (35%): 4–16 KiB random writes, Zipf 0.9, to a 32 MiB
//!   region at 1% of the drive (MFT, log file, directories);
//! - small reads (30%): 4–64 KiB random reads anywhere in the filled space;
//! - file writes (15%): 64–256 KiB sequential writes (multiples of 64 KiB)
//!   through a file area from 10% to 70% of the drive, wrapping;
//! - file reads (20%): 64–256 KiB sequential reads from 30% to 90%.
//!
//! Sub-figures (rows carry `figure`, `ftl`, `x`):
//!
//! - (a) `fig7`: COFTL against blocks per virtual block (1, 2, 4, 8;
//!   `ftl.coftl_set_blocks`) at 16 channels and a 16 MiB data cache, and BL
//!   (`block`, no cache; `x` = 0: it has no virtual blocks);
//! - (b) `fig8`: COFTL against its data cache, 1–64 MiB, at 4 blocks per
//!   virtual block;
//! - (c) `fig9`: COFTL (16 MiB cache, 2 blocks per virtual block) and BL
//!   against channels 1–16, at the same capacity (blocks per plane × 16 /
//!   channels);
//! - (d) `recovery`: COFTL's recovery after a power cut (4 blocks per
//!   virtual block, 16 MiB cache, cut after [`RECOVERY_AFTER`] desktop
//!   requests on the filled drive) against drive size, beside a full-OOB-scan
//!   estimate for the page FTL ([`oob_scan_s`]).

use crate::config::{Config, HostMode};
use crate::error::Result;
use crate::report::Report;
use crate::rng::SimRng;
use crate::sim::{Precondition, RunOptions, Simulation};
use crate::trace::list::CmdList;
use crate::trace::{CmdSource, HostCmd};
use crate::units::SimTime;
use crate::workload::{WorkloadSpec, generator};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

pub const PRESET: &str = "coftl-mt29f64g08";
/// Closed-loop queue depth of every measured run (a desktop's NCQ depth).
pub const QUEUE_DEPTH: u32 = 8;
pub const FILL: Precondition = Precondition::new(0.97, 0.0);
/// The desktop streams: (share of requests %, name, workload spec).
pub const STREAMS: [(u64, &str, &str); 4] = [
    (35, "metadata writes", "rw=randwrite,bssplit=4k/60:8k/25:16k/15,offset=1%,range=32m,dist=zipf:0.9"),
    (30, "small reads", "rw=randread,bssplit=4k/40:16k/30:64k/30,range=97%"),
    (15, "file writes", "rw=write,bs=64k-256k,offset=10%,range=60%"),
    (20, "file reads", "rw=read,bs=64k-256k,offset=30%,range=60%"),
];
pub const FIG7_BLOCKS: [u32; 4] = [1, 2, 4, 8];
pub const FIG8_CACHE_MIB: [u64; 7] = [1, 2, 4, 8, 16, 32, 64];
pub const FIG9_CHANNELS: [u32; 5] = [1, 2, 4, 8, 16];
/// Desktop requests before the power cut of the recovery runs.
pub const RECOVERY_AFTER: u64 = 2000;
/// OOB bytes a full scan transfers per page (the MT29F64G08's 224-byte
/// spare area of a 4 KiB page).
pub const OOB_BYTES: f64 = 224.0;

/// One run's figures.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Row {
    /// "fig7", "fig8", "fig9" or "recovery".
    pub figure: String,
    /// "coftl", "bl", or "page (OOB scan estimate)".
    pub ftl: String,
    /// Blocks per virtual block, cache MiB, channels, or drive GiB (physical).
    pub x: f64,
    /// Requests per second of simulated time (measured runs).
    pub requests_per_s: Option<f64>,
    pub write_amplification: Option<f64>,
    /// COFTL's merges (cleaner, full chains, wear levelling) or BL's full merges.
    pub merges: u64,
    /// COFTL's data-cache hits / (hits + misses).
    pub cache_hit_ratio: Option<f64>,
    /// Busy share of the channel buses, and of the array units (the planes:
    /// the preset is plane-parallel), over the measured run.
    pub channel_utilization: f64,
    #[serde(default)]
    pub unit_utilization: f64,
    /// Recovery: flash time, s, and pages read.
    pub recovery_s: Option<f64>,
    pub recovery_pages_read: Option<u64>,
}

/// Sizes of the whole experiment.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    pub blocks_per_plane: u32,
    pub requests: u64,
    /// Blocks per plane of the recovery runs' drives.
    pub recovery_blocks: &'static [u32],
}

pub fn scale(quick: bool) -> Scale {
    if quick {
        Scale { blocks_per_plane: 32, requests: 1500, recovery_blocks: &[16, 32] }
    } else {
        Scale { blocks_per_plane: 128, requests: 20_000, recovery_blocks: &[64, 256, 1024, 4096] }
    }
}

/// The preset with the repro's settings: `ftl` ("coftl" or "bl"), blocks
/// per virtual block, COFTL cache MiB, channels (capacity kept: blocks per
/// plane × 16 / channels), then `more`.
pub fn config(
    ftl: &str,
    k: u32,
    cache_mib: u64,
    channels: u32,
    blocks: u32,
    seed: u64,
    more: &[String],
) -> Result<Config> {
    let mut o = vec![
        format!("ftl.name=\"{ftl}\""),
        format!("seed={seed}"),
        format!("geometry.channels={channels}"),
        format!("geometry.blocks_per_plane={}", blocks * 16 / channels),
        format!("ftl.coftl_set_blocks={k}"),
        format!("ftl.coftl_cache_bytes={}", cache_mib << 20),
    ];
    o.extend(more.iter().cloned());
    Config::load(PRESET, &o)
}

/// Runs the four sub-figures; `progress` hears of each run.
pub fn run(quick: bool, seed: u64, progress: &mut dyn FnMut(&str)) -> Result<Vec<Row>> {
    let sc = scale(quick);
    let b = sc.blocks_per_plane;
    let mut rows = Vec::new();
    let mut measure = |figure, x, cfg: Config, what: String| -> Result<()> {
        progress(&what);
        rows.push(throughput(figure, x, cfg, sc.requests)?);
        Ok(())
    };
    for k in FIG7_BLOCKS {
        measure("fig7", k as f64, config("coftl", k, 16, 16, b, seed, &[])?, format!("fig7 coftl k={k}"))?;
    }
    measure("fig7", 0.0, config("bl", 1, 0, 16, b, seed, &[])?, "fig7 bl".into())?;
    for mib in FIG8_CACHE_MIB {
        measure("fig8", mib as f64, config("coftl", 4, mib, 16, b, seed, &[])?, format!("fig8 cache {mib} MiB"))?;
    }
    for ch in FIG9_CHANNELS {
        let x = ch as f64;
        measure("fig9", x, config("coftl", 2, 16, ch, b, seed, &[])?, format!("fig9 coftl {ch} channels"))?;
        measure("fig9", x, config("bl", 1, 0, ch, b, seed, &[])?, format!("fig9 bl {ch} channels"))?;
    }
    for &blocks in sc.recovery_blocks {
        let cfg = config("coftl", 4, 16, 16, blocks, seed, &[])?;
        progress(&format!("recovery {:.0} GiB", (cfg.physical_pages() * cfg.geometry.page_size as u64) as f64 / GIB));
        rows.extend(recovery(cfg, RECOVERY_AFTER.min(sc.requests))?);
    }
    Ok(rows)
}

const GIB: f64 = (1u64 << 30) as f64;

/// Fills the drive, replays `requests` desktop requests, and measures.
fn throughput(figure: &'static str, x: f64, cfg: Config, requests: u64) -> Result<Row> {
    let (sim, r) = fill_and_replay(cfg, requests)?;
    sim.check_invariants()?;
    let mut row = row_of(figure, x, &r);
    row.requests_per_s = Some(r.iops);
    Ok(row)
}

fn fill_and_replay(mut cfg: Config, requests: u64) -> Result<(Simulation, Report)> {
    cfg.host.mode = HostMode::Closed;
    cfg.host.queue_depth = QUEUE_DEPTH;
    let (capacity, seed) = (cfg.logical_sectors(), cfg.seed);
    let mut sim = Simulation::new(cfg)?;
    sim.precondition(FILL)?;
    let opts = RunOptions::from_config(sim.config());
    let mut cmds = CmdList::new("desktop", desktop(capacity, requests, seed)?);
    let r = sim.run(&mut cmds, &opts, &mut |_, _| true)?;
    Ok((sim, r))
}

fn row_of(figure: &'static str, x: f64, r: &Report) -> Row {
    let co = r.coftl.as_ref();
    let hit_ratio = co.map(|c| &c.cache).and_then(|c| {
        let n = c.hits + c.misses;
        (n > 0).then(|| c.hits as f64 / n as f64)
    });
    Row {
        figure: figure.into(),
        ftl: if r.ftl == "block" { "bl".into() } else { r.ftl.clone() },
        x,
        requests_per_s: None,
        write_amplification: r.write_amplification,
        merges: co.map_or(r.merges.full, |c| c.merges),
        cache_hit_ratio: hit_ratio,
        channel_utilization: r.utilization.channels,
        unit_utilization: r.utilization.units,
        recovery_s: None,
        recovery_pages_read: None,
    }
}

/// COFTL's measured recovery on `cfg`'s drive, and the page FTL's full
/// OOB scan of the same drive, estimated.
fn recovery(mut cfg: Config, after: u64) -> Result<Vec<Row>> {
    cfg.host.power_cuts = vec![format!("after={after}")];
    cfg.nand.record_sequence = Some(true);
    let gib = (cfg.physical_pages() * cfg.geometry.page_size as u64) as f64 / GIB;
    let scan_s = oob_scan_s(&cfg);
    let pages = cfg.physical_pages();
    let (_, r) = fill_and_replay(cfg, after + 1)?;
    let cut = r.power_cuts.first().expect("one power cut configured");
    let mut row = row_of("recovery", gib, &r);
    row.recovery_s = Some(cut.recovery_us / 1e6);
    row.recovery_pages_read = Some(cut.pages_read);
    let page = Row {
        figure: "recovery".into(),
        ftl: "page (OOB scan estimate)".into(),
        x: gib,
        requests_per_s: None,
        write_amplification: None,
        merges: 0,
        cache_hit_ratio: None,
        channel_utilization: 0.0,
        unit_utilization: 0.0,
        recovery_s: Some(scan_s),
        recovery_pages_read: Some(pages),
    };
    Ok(vec![row, page])
}

/// A page FTL's recovery by reading every physical page's OOB: each read
/// holds its plane (or die) for tR and its channel for [`OOB_BYTES`] of
/// transfer; all units and channels work in parallel, so the time is the
/// larger of the two bounds.
pub fn oob_scan_s(cfg: &Config) -> f64 {
    let g = &cfg.geometry;
    let units = g.channels
        * g.chips_per_channel
        * g.dies_per_chip
        * if cfg.timing.plane_parallel { g.planes_per_die } else { 1 };
    let pages = cfg.physical_pages() as f64;
    let array_s = pages * cfg.timing.read_us * 1e-6 / units as f64;
    let bus_s = pages * OOB_BYTES * cfg.timing.bus_ns_per_byte * 1e-9 / g.channels as f64;
    array_s.max(bus_s)
}

/// The desktop workload of `requests` commands on a drive of `capacity`
/// sectors (see the module doc): each request comes from the stream a
/// seeded draw picks by [`STREAMS`]' shares.
pub fn desktop(capacity: u64, requests: u64, seed: u64) -> Result<Vec<HostCmd>> {
    let mut streams = Vec::new();
    for (i, (_, _, spec)) in STREAMS.iter().enumerate() {
        let spec = WorkloadSpec::parse(&format!("{spec},ios={requests},seed={}", seed + i as u64))?;
        streams.push(generator(&spec, capacity)?);
    }
    let mut rng = SimRng::derived(seed, 0x6465736b);
    let mut out = Vec::with_capacity(requests as usize);
    while (out.len() as u64) < requests {
        let mut draw = rng.below(100);
        let i = STREAMS
            .iter()
            .position(|&(share, _, _)| {
                draw < share || {
                    draw -= share;
                    false
                }
            })
            .expect("shares sum to 100");
        let mut cmd = streams[i].next_cmd()?.expect("each stream has as many commands as the mix");
        cmd.time = SimTime::ZERO;
        out.push(cmd);
    }
    Ok(out)
}

pub fn to_csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "figure,ftl,x,requests_per_s,write_amplification,merges,cache_hit_ratio,channel_utilization,unit_utilization,recovery_s,recovery_pages_read\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.4}"));
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{:.4},{:.4},{},{}",
            r.figure,
            r.ftl,
            r.x,
            opt(r.requests_per_s),
            opt(r.write_amplification),
            r.merges,
            opt(r.cache_hit_ratio),
            r.channel_utilization,
            r.unit_utilization,
            opt(r.recovery_s),
            r.recovery_pages_read.map_or(String::new(), |v| v.to_string())
        );
    }
    s
}

/// The sub-figures as Markdown tables, one row per run.
pub fn to_markdown(rows: &[Row]) -> String {
    let opt = |v: Option<f64>, p: usize| v.map_or("-".into(), |v| format!("{v:.p$}"));
    let mut s = String::new();
    for (fig, title, x) in [
        ("fig7", "Fig. 7: throughput against the blocks per virtual block", "blocks per virtual block"),
        ("fig8", "Fig. 8: throughput against the data cache size", "data cache MiB"),
        ("fig9", "Fig. 9: throughput against the channels", "channels"),
    ] {
        let _ = writeln!(
            s,
            "\n**{title}** (`{fig}`)\n\n| FTL | {x} | requests/s | WA | merges | cache hits | channels busy | planes busy |\n|---|---:|---:|---:|---:|---:|---:|---:|"
        );
        for r in rows.iter().filter(|r| r.figure == fig) {
            let _ = writeln!(
                s,
                "| {} | {} | {:.0} | {} | {} | {} | {:.1}% | {:.1}% |",
                r.ftl,
                r.x,
                r.requests_per_s.unwrap_or(0.0),
                opt(r.write_amplification, 2),
                r.merges,
                opt(r.cache_hit_ratio, 3),
                r.channel_utilization * 100.0,
                r.unit_utilization * 100.0
            );
        }
    }
    let _ = writeln!(
        s,
        "\n**Crash recovery: time and pages read against the drive size** (`recovery`)\n\n| FTL | drive GiB | recovery s | pages read |\n|---|---:|---:|---:|"
    );
    for r in rows.iter().filter(|r| r.figure == "recovery") {
        let _ =
            writeln!(s, "| {} | {} | {} | {} |", r.ftl, r.x, opt(r.recovery_s, 4), r.recovery_pages_read.unwrap_or(0));
    }
    s
}

/// One line chart's data: a title, axis labels, categorical x ticks, and
/// named series of (tick index, value); `log_y` draws y on a log10 scale.
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub ticks: Vec<String>,
    pub series: Vec<(String, Vec<(usize, f64)>)>,
    pub log_y: bool,
}

/// The four sub-figures as panels (for [`to_svg`], or a plotting layer).
pub fn panels(rows: &[Row]) -> Vec<Panel> {
    let pick = |fig: &str, ftl: &str, xs: &[f64], y: fn(&Row) -> Option<f64>| -> Vec<(usize, f64)> {
        rows.iter()
            .filter(|r| r.figure == fig && r.ftl == ftl)
            .filter_map(|r| Some((xs.iter().position(|&x| x == r.x)?, y(r)?)))
            .collect()
    };
    let rps = |r: &Row| r.requests_per_s;
    let ticks = |xs: &[f64]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let k: Vec<f64> = FIG7_BLOCKS.iter().map(|&k| k as f64).collect();
    let bl = rows.iter().find(|r| r.figure == "fig7" && r.ftl == "bl").and_then(|r| r.requests_per_s);
    let cache: Vec<f64> = FIG8_CACHE_MIB.iter().map(|&m| m as f64).collect();
    let ch: Vec<f64> = FIG9_CHANNELS.iter().map(|&c| c as f64).collect();
    let mut gib: Vec<f64> = rows.iter().filter(|r| r.figure == "recovery").map(|r| r.x).collect();
    gib.dedup();
    let rec = |r: &Row| r.recovery_s;
    vec![
        Panel {
            title: "(a) Fig. 7: 16 channels, 16 MiB cache".into(),
            x_label: "blocks per virtual block".into(),
            y_label: "requests/s".into(),
            ticks: ticks(&k),
            series: vec![
                ("COFTL".into(), pick("fig7", "coftl", &k, rps)),
                ("BL".into(), bl.map(|v| (0..k.len()).map(|i| (i, v)).collect()).unwrap_or_default()),
            ],
            log_y: false,
        },
        Panel {
            title: "(b) Fig. 8: COFTL, 4 blocks per virtual block".into(),
            x_label: "data cache (MiB)".into(),
            y_label: "requests/s".into(),
            ticks: ticks(&cache),
            series: vec![("COFTL".into(), pick("fig8", "coftl", &cache, rps))],
            log_y: false,
        },
        Panel {
            title: "(c) Fig. 9: 16 MiB cache, 2 blocks per virtual block".into(),
            x_label: "channels".into(),
            y_label: "requests/s".into(),
            ticks: ticks(&ch),
            series: vec![
                ("COFTL".into(), pick("fig9", "coftl", &ch, rps)),
                ("BL".into(), pick("fig9", "bl", &ch, rps)),
            ],
            log_y: false,
        },
        Panel {
            title: "(d) recovery after a power cut".into(),
            x_label: "drive size (GiB, physical)".into(),
            y_label: "recovery flash time (s)".into(),
            ticks: gib.iter().map(|g| format!("{g:.0}")).collect(),
            series: vec![
                ("COFTL".into(), pick("recovery", "coftl", &gib, rec)),
                ("page FTL, full OOB scan (est.)".into(), pick("recovery", "page (OOB scan estimate)", &gib, rec)),
            ],
            log_y: true,
        },
    ]
}

/// The four panels in a 2 × 2 figure (bars over each panel's ticks).
pub fn to_svg(rows: &[Row]) -> String {
    use super::figure::{Bars, Figure, Scale};
    let fig = panels(rows).into_iter().fold(
        Figure::new("repro coftl on coftl-mt29f64g08 (scaled down), desktop-like mix at 97% full"),
        |fig, p| {
            let n = p.ticks.len();
            let bars = p.series.iter().fold(Bars::new(&p.x_label, &p.y_label, &p.ticks), |b, (name, points)| {
                let mut values = vec![None; n];
                for &(i, v) in points {
                    values[i] = Some(v);
                }
                b.series(name, values)
            });
            let scale = if p.log_y { Scale::Log } else { Scale::Linear };
            fig.panel(bars.y_scale(scale).caption(&p.title))
        },
    );
    fig.to_svg()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desktop_mix_stays_inside_the_filled_drive() {
        let cap = 8 << 21; // 8 GiB
        let cmds = desktop(cap, 10_000, 1).unwrap();
        assert_eq!(cmds.len(), 10_000);
        assert!(cmds.iter().all(|c| c.sectors > 0 && c.start.0 + c.sectors <= cap * 97 / 100 + 1));
        let writes = cmds.iter().filter(|c| c.op == crate::trace::Op::Write).count();
        assert!((4_500..5_500).contains(&writes), "{writes} writes of 10,000 (50% expected)");
        assert_eq!(cmds, desktop(cap, 10_000, 1).unwrap(), "deterministic for a seed");
    }

    #[test]
    fn oob_scan_is_bound_by_the_array() {
        let cfg = Config::load(PRESET, &[]).unwrap();
        // 32 Mi pages x 50 us over 32 planes: 52.4 s; the bus would take 7.5 s.
        assert!((oob_scan_s(&cfg) - 52.4288).abs() < 1e-3, "{}", oob_scan_s(&cfg));
    }
}
