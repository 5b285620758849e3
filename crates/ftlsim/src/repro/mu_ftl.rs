//! `ftlsim repro mu-ftl`: the experiments of Lee et al., "μ-FTL: A
//! Memory-Efficient Flash Translation Layer Supporting Multiple Mapping
//! Granularities" (EMSOFT 2008), Figs. 8–10, on the `mu-ftl-mlc` drive
//! (MLC, 4 KiB pages, 128 pages per block), shrunk to 2,048 blocks (1 GiB;
//! `quick`: 1,024 blocks).
//!
//! The paper's DiskMon laptop traces are not public; two generators stand in:
//!
//! - **multimedia** (its PIC/MP3/MOV FAT32 partitions): files of 4 MiB on
//!   average (0.5–1.5×) copied sequentially in 64 KiB writes, each with a
//!   4 KiB FAT write and a 4 KiB directory write in the first 1% of the
//!   space, until 80% of the data area is used; then files deleted at
//!   random (a FAT write: Windows XP sends no TRIM) and new ones copied
//!   first-fit into the holes, for as many bytes again as the drive holds;
//! - **pc** (its GENERAL/SYSMARK NTFS use): after a full sequential fill,
//!   70% of requests small random writes (4–8 KiB) into a hot 5% metadata
//!   region (MFT, log), 30% large sequential file writes (64–256 KiB)
//!   appended in a cold area, 1.5× the drive in all.
//!
//! Public traces given (`--trace`; by default the SQLite-on-ext4 trace of
//! the real traces folder when it is present, the nearest to desktop use
//! there: no laptop or desktop capture is among them) are replayed in
//! Fig. 8 too, after a full sequential fill, addresses wrapped into the
//! drive, named by their file.
//!
//! μ-FTL gets 32 KiB of RAM (the block table of the paper's 4 GiB drive:
//! counters, 8 KiB of bitmap cache, five tree-cache pages). Every run
//! replays at queue depth 1. The figure of merit is the
//! management overhead (report `management_overhead_ms`): the flash time
//! of GC, mapping and bitmap traffic and merges beyond the host's.
//!
//! - (a) Fig. 8: FAST, superblock, DAC and μ-FTL against extra blocks 1–5%
//!   (`overprovisioning`). Superblocks are 128 blocks (64 MiB; `quick`:
//!   256) with 4 extra, so few enough that their update blocks fit 1% spare.
//! - (b) Fig. 9: μ-FTL's bitmap cache 0–64 KiB at a fixed RAM total
//!   (counters + 96 KiB), the rest for the μ-Tree caches, at 3% extra blocks.
//! - (c) Fig. 10: μ-FTL's partition size 32 MiB to the whole space, at 3%.

use crate::config::{Config, HostMode, OutOfRange};
use crate::error::Result;
use crate::job::{Input, Job};
use crate::report::Report;
use crate::repro::figure::{Bars, Figure, Lines, distinct};
use crate::rng::SimRng;
use crate::sim::{Precondition, RunOptions, Simulation};
use crate::trace::list::CmdList;
use crate::trace::{HostCmd, Op};
use crate::units::{Sector, SimTime};
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::{Path, PathBuf};

pub const PRESET: &str = "mu-ftl-mlc";
pub const WORKLOADS: [&str; 2] = ["multimedia", "pc"];
pub const FIG8_FTLS: [&str; 4] = ["fast", "superblock", "dac", "mu"];
/// The real trace replayed by default, under the real traces folder.
pub const REAL_TRACE: &str = "wiscsee_events/wiscsee-sqlitewal-update-ext4.txt";
const KIB: u64 = 2; // sectors
const MIB: u64 = 1024 * KIB;

/// One run's figures.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Row {
    /// "fig8", "fig9" or "fig10".
    pub figure: String,
    /// A generator's name, or a replayed trace's file name.
    pub workload: String,
    pub ftl: String,
    /// The swept value: extra blocks %, bitmap cache KiB, or partition MiB (0: whole space).
    pub x: f64,
    pub overhead_s: f64,
    pub gc_s: f64,
    pub mapping_s: f64,
    pub bitmap_s: f64,
    pub merge_s: f64,
    pub write_amplification: Option<f64>,
    pub mapping_ram_bytes: u64,
    pub tree_cache_hit_ratio: Option<f64>,
}

pub fn config(ftl: &str, extra_pct: f64, quick: bool, seed: u64, more: &[String]) -> Result<Config> {
    let mut o = vec![
        format!("ftl.name=\"{ftl}\""),
        format!("overprovisioning={}", extra_pct / 100.0),
        format!("seed={seed}"),
        format!("geometry.blocks_per_plane={}", blocks(quick)),
        // Few enough superblocks that each one's update block fits 1% spare.
        format!("ftl.superblock_blocks={}", if quick { 256 } else { 128 }),
        "ftl.superblock_extra_blocks=4".into(),
        // μ-FTL's RAM: the block table of the paper's 4 GiB drive (8,192 × 4 B).
        "ftl.mu_ram_bytes=32768".into(),
    ];
    o.extend(more.iter().cloned());
    Config::load(PRESET, &o)
}

fn blocks(quick: bool) -> u32 {
    if quick { 1024 } else { 2048 }
}

/// What a run replays.
enum Load<'a> {
    Generator(&'static str),
    Trace(&'a Path),
}

impl Load<'_> {
    fn name(&self) -> String {
        match self {
            Load::Generator(w) => w.to_string(),
            Load::Trace(p) => p.file_name().map_or_else(|| p.display().to_string(), |f| f.to_string_lossy().into()),
        }
    }
}

/// Runs the three experiments on the generators, and Fig. 8 on each of
/// `traces`; `progress` hears of each run.
pub fn run(quick: bool, seed: u64, traces: &[PathBuf], progress: &mut dyn FnMut(&str)) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let loads = WORKLOADS.into_iter().map(Load::Generator).chain(traces.iter().map(|p| Load::Trace(p)));
    for load in loads {
        let w = load.name();
        for ftl in FIG8_FTLS {
            for extra in [1.0, 2.0, 3.0, 4.0, 5.0] {
                progress(&format!("fig8 {w} {ftl} {extra}%"));
                rows.push(run_one("fig8", &load, extra, config(ftl, extra, quick, seed, &[])?)?);
            }
        }
        let Load::Generator(_) = load else { continue };
        let blocks = blocks(quick);
        for kib in [0u64, 8, 16, 32, 64] {
            progress(&format!("fig9 {w} bitmap cache {kib} KiB"));
            let more = [
                format!("ftl.mu_ram_bytes={}", blocks + 96 * 1024),
                format!("ftl.mu_bitmap_cache_bytes={}", kib * 1024),
            ];
            rows.push(run_one("fig9", &load, kib as f64, config("mu", 3.0, quick, seed, &more)?)?);
        }
        for mib in [32u64, 64, 128, 256, 0] {
            progress(&format!("fig10 {w} partition {mib} MiB"));
            let more = [format!("ftl.partition_bytes={}", mib << 20)];
            rows.push(run_one("fig10", &load, mib as f64, config("mu", 3.0, quick, seed, &more)?)?);
        }
    }
    Ok(rows)
}

fn run_one(figure: &'static str, load: &Load, x: f64, mut cfg: Config) -> Result<Row> {
    let ftl = cfg.ftl.name.clone();
    let capacity = cfg.logical_sectors();
    let seed = cfg.seed;
    let full = Precondition::new(1.0, 0.0);
    let (mut source, mut opts, mut sim);
    match load {
        Load::Generator(w) => {
            sim = Simulation::new(cfg)?;
            let cmds = if *w == "multimedia" {
                multimedia(capacity, seed)
            } else {
                sim.precondition(full)?;
                pc(capacity, seed)
            };
            source = Box::new(CmdList::new(*w, cmds)) as Box<dyn crate::trace::CmdSource>;
            opts = RunOptions::from_config(sim.config());
        }
        Load::Trace(path) => {
            // Public traces address drives of other sizes.
            cfg.host.out_of_range = OutOfRange::Wrap;
            let job = Job {
                config: cfg.clone(),
                input: Input::Trace { path: path.to_path_buf(), format: None, skip_bad_lines: false },
                precondition: None,
                snapshot_dir: None,
            };
            sim = Simulation::new(cfg)?;
            sim.precondition(full)?;
            let prepared = job.prepare(capacity)?;
            (source, opts) = (prepared.source, prepared.options);
        }
    }
    opts.mode = HostMode::Closed;
    opts.queue_depth = 1;
    let r: Report = sim.run(source.as_mut(), &opts, &mut |_, _| true)?;
    sim.check_invariants()?;
    let o = &r.management_overhead_ms;
    Ok(Row {
        figure: figure.into(),
        workload: load.name(),
        ftl,
        x,
        overhead_s: o.total / 1e3,
        gc_s: o.gc / 1e3,
        mapping_s: o.mapping / 1e3,
        bitmap_s: o.bitmap / 1e3,
        merge_s: o.merge / 1e3,
        write_amplification: r.write_amplification,
        mapping_ram_bytes: r.mapping_ram_bytes,
        tree_cache_hit_ratio: r.mu.as_ref().and(r.mapping_hit_ratio),
    })
}

fn cmd(op: Op, start: u64, sectors: u64) -> HostCmd {
    HostCmd { time: SimTime::ZERO, op, start: Sector(start), sectors, continued: false }
}

/// Writes `start..start+sectors` in requests of at most `record` sectors.
fn sequential(out: &mut Vec<HostCmd>, start: u64, sectors: u64, record: u64) {
    let mut s = start;
    while s < start + sectors {
        let n = record.min(start + sectors - s);
        out.push(cmd(Op::Write, s, n));
        s += n;
    }
}

/// FAT32 multimedia partition: copy, then delete and re-copy (see the module doc).
fn multimedia(capacity: u64, seed: u64) -> Vec<HostCmd> {
    let mut rng = SimRng::derived(seed, 0x6d75);
    let meta = (capacity / 100).max(16 * KIB) & !7;
    let data = capacity - meta;
    let (fat, dir) = (0, meta / 2);
    let mut out = Vec::new();
    let file_size = |rng: &mut SimRng| ((2 * MIB + rng.below(4 * MIB)) & !7).max(8);
    // Files as lists of extents (start, sectors); free holes first-fit.
    let mut files: Vec<Vec<(u64, u64)>> = Vec::new();
    let mut holes: Vec<(u64, u64)> = vec![(meta, data)];
    let meta_write = |out: &mut Vec<HostCmd>, at: u64, rng: &mut SimRng| {
        out.push(cmd(Op::Write, fat + (at - meta) * (meta / 2 - 8) / data / 8 * 8, 8));
        out.push(cmd(Op::Write, dir + rng.below(meta / 2 / 8 - 1) * 8, 8));
    };
    let copy = |out: &mut Vec<HostCmd>, holes: &mut Vec<(u64, u64)>, size: u64, rng: &mut SimRng| {
        let mut left = size;
        let mut extents = Vec::new();
        while left > 0 && !holes.is_empty() {
            let (s, n) = holes[0];
            let take = n.min(left);
            sequential(out, s, take, 64 * KIB);
            extents.push((s, take));
            if take == n {
                holes.remove(0);
            } else {
                holes[0] = (s + take, n - take);
            }
            left -= take;
        }
        if let Some(&(s, _)) = extents.first() {
            meta_write(out, s, rng);
        }
        extents
    };
    let mut used = 0;
    while used < data * 8 / 10 {
        let size = file_size(&mut rng);
        used += size;
        let f = copy(&mut out, &mut holes, size, &mut rng);
        files.push(f);
    }
    let mut churned = 0;
    while churned < capacity && !files.is_empty() {
        let victim = files.swap_remove(rng.below(files.len() as u64) as usize);
        meta_write(&mut out, victim[0].0, &mut rng);
        for e in victim {
            let at = holes.partition_point(|h| h.0 < e.0);
            holes.insert(at, e);
        }
        let size = file_size(&mut rng);
        churned += size;
        let f = copy(&mut out, &mut holes, size, &mut rng);
        if !f.is_empty() {
            files.push(f);
        }
    }
    out
}

/// NTFS PC use on a full drive (see the module doc).
fn pc(capacity: u64, seed: u64) -> Vec<HostCmd> {
    let mut rng = SimRng::derived(seed, 0x7063);
    let hot = (capacity / 20) & !7;
    let hot_start = (capacity / 10) & !7;
    let cold_start = hot_start + hot;
    let cold = (capacity - cold_start) & !7;
    let mut cursor = 0;
    let mut written = 0;
    let mut out = Vec::new();
    while written < capacity * 3 / 2 {
        if rng.below(10) < 7 {
            let n = 8 * (1 + rng.below(2));
            out.push(cmd(Op::Write, hot_start + rng.below(hot / 8 - 2) * 8, n));
            written += n;
        } else {
            let n = 128 * (1 + rng.below(4));
            if cursor + n > cold {
                cursor = 0;
            }
            out.push(cmd(Op::Write, cold_start + cursor, n));
            cursor += n;
            written += n;
        }
    }
    out
}

pub fn to_csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "figure,workload,ftl,x,overhead_s,gc_s,mapping_s,bitmap_s,merge_s,write_amplification,mapping_ram_bytes,tree_cache_hit_ratio\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.4}"));
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{},{},{}",
            r.figure,
            r.workload,
            r.ftl,
            r.x,
            r.overhead_s,
            r.gc_s,
            r.mapping_s,
            r.bitmap_s,
            r.merge_s,
            opt(r.write_amplification),
            r.mapping_ram_bytes,
            opt(r.tree_cache_hit_ratio)
        );
    }
    s
}

pub fn to_markdown(rows: &[Row]) -> String {
    let mut s = String::new();
    for (fig, title, x) in [
        ("fig8", "Fig. 8: management overhead against the extra blocks", "extra blocks %"),
        ("fig9", "Fig. 9: μ-FTL's overhead against the bitmap cache size", "bitmap cache KiB"),
        ("fig10", "Fig. 10: μ-FTL's overhead against the partition size", "partition MiB (0: whole)"),
    ] {
        let _ = writeln!(
            s,
            "\n**{title}** (`{fig}`)\n\n| workload | FTL | {x} | overhead s | GC s | mapping s | bitmap s | merge s | WA | RAM B | tree cache hits |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for r in rows.iter().filter(|r| r.figure == fig) {
            let opt = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} |",
                r.workload,
                r.ftl,
                r.x,
                r.overhead_s,
                r.gc_s,
                r.mapping_s,
                r.bitmap_s,
                r.merge_s,
                opt(r.write_amplification),
                r.mapping_ram_bytes,
                opt(r.tree_cache_hit_ratio)
            );
        }
    }
    s
}

/// The figure: Fig. 8 as line charts, one panel per workload (management
/// overhead against extra blocks, one line per FTL); Fig. 9 (μ-FTL's
/// overhead against its bitmap cache) as lines, one per workload; Fig. 10
/// (against partition size) as bars, one per workload.
pub fn to_svg(rows: &[Row], quick: bool) -> String {
    const Y: &str = "management overhead (s)";
    let points = |fig: &str, wl: &str, ftl: &str| -> Vec<(f64, f64)> {
        let of = rows.iter().filter(|r| r.figure == fig && r.workload == wl && r.ftl == ftl);
        of.map(|r| (r.x, r.overhead_s)).collect()
    };
    // The generators, then any replayed traces (Fig. 8 only).
    let mut fig8: Vec<&str> = Vec::new();
    for r in rows.iter().filter(|r| r.figure == "fig8") {
        if !fig8.contains(&r.workload.as_str()) {
            fig8.push(&r.workload);
        }
    }
    let mut fig = Figure::new(&format!(
        "repro mu-ftl on {PRESET}{}: {} workloads at QD 1",
        if quick { " (quick)" } else { "" },
        fig8.join(", ")
    ));
    for wl in fig8 {
        let lines = FIG8_FTLS
            .iter()
            .fold(Lines::new("extra blocks (% of the drive)", Y), |l, ftl| l.series(ftl, points("fig8", wl, ftl)));
        fig = fig.panel(lines.caption(&format!("Fig. 8, {wl}: overhead against extra blocks")));
    }
    let fig9 =
        WORKLOADS.iter().fold(Lines::new("bitmap cache (KiB)", Y), |l, wl| l.series(wl, points("fig9", wl, "mu")));
    let sizes = distinct(rows.iter().filter(|r| r.figure == "fig10").map(|r| r.x));
    let labels: Vec<String> =
        sizes.iter().map(|&m| if m == 0.0 { "whole space".into() } else { format!("{m} MiB") }).collect();
    let fig10 = WORKLOADS.iter().fold(Bars::new("partition size", Y, &labels), |b, wl| {
        let at = |x: f64| rows.iter().find(|r| r.figure == "fig10" && r.workload == *wl && r.x == x);
        b.series(wl, sizes.iter().map(|&x| at(x).map(|r| r.overhead_s)))
    });
    fig.panel(fig9.caption("Fig. 9: μ-FTL against its bitmap cache (3% extra)"))
        .panel(fig10.caption("Fig. 10: μ-FTL against partition size (3% extra)"))
        .to_svg()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_stay_inside_the_drive() {
        let cap = 1 << 20;
        for cmds in [multimedia(cap, 1), pc(cap, 1)] {
            assert!(cmds.len() > 100);
            assert!(cmds.iter().all(|c| c.sectors > 0 && c.start.0 + c.sectors <= cap));
            let written: u64 = cmds.iter().map(|c| c.sectors).sum();
            assert!(written > cap, "{written} sectors");
        }
    }
}
