//! Son, Lee, Kim and Kim, "An Analysis on the Performance of TRIM Commands
//! on SSDs and its Application to the Ext4 File System" (KIISE TCP 2015):
//! what a TRIM costs, and file deletion with ext4's one range per command
//! against batches of up to 64 ranges.
//!
//! (a) On a written drive, one TRIM at a time (the drive idle and settled
//! before each), for `page`, `dftl`, `hat` and `fast`: latency and trimmed
//! MB/s against range size (4 KiB to 1 GiB, ×4 steps), aligned and
//! misaligned by one sector; 64 TRIMs of 64 KiB on contiguous against
//! scattered addresses; and N ranges of 64 KiB in one command (N = 1..64).
//!
//! (b) A file-deletion workload (`rw=delete`, see `workload::delete`) at
//! queue depth 32: the files are written (unmeasured), then every file is
//! deleted, one TRIM per extent; the deletion time with one range per
//! command against host-side batches of up to 64 (`trace::batch`), with
//! queued and non-queued TRIM.
//!
//! The drive is the TRIM paper's K9LAG08U0M board (`k9lag08u0m-4ch`) cut to
//! 512 blocks per plane (1.9 GiB logical; `quick`: 128, ranges to 64 MiB),
//! and (b) also on `hat-table4` cut the same way, for a second device.

use crate::config::Config;
use crate::error::Result;
use crate::ftl::Span;
use crate::sim::{RunOptions, Simulation};
use crate::trace::batch::TrimBatcher;
use crate::trace::{CmdSource, HostCmd, Op};
use crate::units::{Nanos, SECTOR_BYTES, Sector, SimTime};
use crate::workload::{DeleteSpec, DeleteWorkload};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The FTLs of part (a) and (b).
pub const FTLS: [&str; 4] = ["page", "dftl", "hat", "fast"];

/// One measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `size`, `size-misaligned`, `contiguity`, `ranges` (part a) or `delete` (part b).
    pub series: String,
    pub preset: String,
    pub ftl: String,
    /// Range bytes (`size`), `contiguous`/`scattered`, ranges per command,
    /// or for `delete` the batch and queueing, e.g. `batch=64 non-queued`.
    pub x: String,
    /// Latency of the TRIM (or of all commands of the point), µs.
    pub latency_us: f64,
    /// Bytes trimmed per second of latency, MB/s.
    pub mb_s: f64,
    /// TRIM commands and ranges the point issued.
    pub commands: u64,
    pub ranges: u64,
}

/// The drive of the experiment: `preset` with fewer blocks per plane.
pub fn config(preset: &str, ftl: &str, quick: bool, extra: &[&str]) -> Result<Config> {
    let mut o =
        vec![format!("ftl.name=\"{ftl}\""), format!("geometry.blocks_per_plane={}", if quick { 128 } else { 512 })];
    o.extend(extra.iter().map(|s| s.to_string()));
    Config::load(preset, &o)
}

fn cmd(op: Op, start: u64, sectors: u64) -> HostCmd {
    HostCmd { time: SimTime::ZERO, op, start: Sector(start), sectors, continued: false }
}

/// Bytes written after the data to be trimmed and before the TRIM, at the
/// end of the space: they push its map entries out of DFTL's and HAT's
/// caches (128 KiB of 8 B entries map 32 MiB of 2 KiB pages), as for files
/// written long before they are deleted.
const COLD_BYTES: u64 = 64 << 20;

/// Writes `[start, start + sectors)` in 256 KiB commands (unmeasured).
fn write_region(sim: &mut Simulation, start: u64, sectors: u64) -> Result<()> {
    let chunk = (256 << 10) / SECTOR_BYTES;
    let mut now = SimTime::ZERO;
    let mut s = start;
    while s < start + sectors {
        let n = chunk.min(start + sectors - s);
        now = sim.submit(&cmd(Op::Write, s, n), now, None, None)?;
        s += n;
    }
    Ok(())
}

/// A fresh drive with `regions` written, then the cold data, then settled,
/// its cached map flushed and time restarted: every point of (a) starts
/// from the same state.
fn prepared(preset: &str, ftl: &str, quick: bool, regions: &[(u64, u64)]) -> Result<Simulation> {
    let mut sim = Simulation::new(config(preset, ftl, quick, &[])?)?;
    for &(start, sectors) in regions {
        write_region(&mut sim, start, sectors)?;
    }
    let cold = COLD_BYTES / SECTOR_BYTES;
    let end = sim.logical_sectors();
    write_region(&mut sim, end - cold, cold)?;
    sim.flush_unmeasured()?;
    Ok(sim)
}

/// Part (a) for one FTL.
fn micro(preset: &str, ftl: &str, quick: bool, rows: &mut Vec<Row>) -> Result<()> {
    let cap = config(preset, ftl, quick, &[])?.logical_sectors();
    let max_bytes: u64 = if quick { 64 << 20 } else { 1 << 30 };
    let row = |series: &str, x: String, latency: Nanos, bytes: u64, commands: u64, ranges: u64| Row {
        series: series.into(),
        preset: preset.into(),
        ftl: ftl.into(),
        x,
        latency_us: latency.as_us_f64(),
        mb_s: if latency.0 > 0 { bytes as f64 / latency.as_secs_f64() / 1e6 } else { 0.0 },
        commands,
        ranges,
    };
    let mut bytes = 4096u64;
    while bytes <= max_bytes {
        let sectors = bytes / SECTOR_BYTES;
        for (series, offset) in [("size", 0), ("size-misaligned", 1)] {
            let mut sim = prepared(preset, ftl, quick, &[(0, sectors + 16)])?;
            let done = sim.submit_trim(&[Span { start: Sector(8 + offset), sectors }], SimTime::ZERO)?;
            rows.push(row(series, bytes.to_string(), done - SimTime::ZERO, bytes, 1, 1));
        }
        bytes *= 4;
    }
    // 64 TRIMs of 64 KiB, one after another, contiguous or scattered.
    let piece = (64 << 10) / SECTOR_BYTES;
    // Scattered over the space below the cold data.
    let stride = ((cap - COLD_BYTES / SECTOR_BYTES) / 64) / piece * piece;
    for (name, step) in [("contiguous", piece), ("scattered", stride)] {
        let starts: Vec<u64> = (0..64).map(|i| i * step).collect();
        let regions: Vec<(u64, u64)> = starts.iter().map(|&s| (s, piece)).collect();
        let mut sim = prepared(preset, ftl, quick, &regions)?;
        let mut now = SimTime::ZERO;
        for &s in &starts {
            now = sim.submit_trim(&[Span { start: Sector(s), sectors: piece }], now)?;
        }
        rows.push(row("contiguity", name.into(), now - SimTime::ZERO, 64 * piece * SECTOR_BYTES, 64, 64));
    }
    // N scattered ranges of 64 KiB in one command.
    let mut n = 1u64;
    while n <= 64 {
        let ranges: Vec<Span> = (0..n).map(|i| Span { start: Sector(i * stride), sectors: piece }).collect();
        let regions: Vec<(u64, u64)> = ranges.iter().map(|r| (r.start.0, r.sectors)).collect();
        let mut sim = prepared(preset, ftl, quick, &regions)?;
        let done = sim.submit_trim(&ranges, SimTime::ZERO)?;
        rows.push(row("ranges", n.to_string(), done - SimTime::ZERO, n * piece * SECTOR_BYTES, 1, n));
        n *= 2;
    }
    Ok(())
}

/// The file-deletion workload of part (b) on a drive of `cap` sectors.
pub fn delete_spec(quick: bool) -> DeleteSpec {
    let files = if quick { 400 } else { 2000 };
    DeleteSpec::parse(&format!("rw=delete,files={files},filesize=16k-1m,frag=25,iodepth=32,seed=1"))
        .expect("a valid spec")
}

/// Yields a source's commands up to (not including) its first TRIM; then,
/// once `deleting` is set, that TRIM and the rest.
struct Phases<S> {
    inner: S,
    held: Option<HostCmd>,
    deleting: bool,
}

impl<S: CmdSource> CmdSource for Phases<S> {
    fn next_cmd(&mut self) -> Result<Option<HostCmd>> {
        if !self.deleting {
            if self.held.is_some() {
                return Ok(None);
            }
            let next = self.inner.next_cmd()?;
            if let Some(c) = next.filter(|c| c.op == Op::Trim) {
                self.held = Some(c);
                return Ok(None);
            }
            return Ok(next);
        }
        match self.held.take() {
            Some(c) => Ok(Some(c)),
            None => self.inner.next_cmd(),
        }
    }

    crate::trace::forward_source!(|s| s.inner);
}

/// Part (b): the deletion time (s) of `spec` on `cfg`, TRIMs batched up to
/// `batch` ranges (1: ext4's one range per command).
pub fn deletion_time(cfg: Config, spec: &DeleteSpec, batch: u32) -> Result<(f64, u64, u64)> {
    let mut sim = Simulation::new(cfg)?;
    let mut opts = RunOptions::from_config(sim.config());
    opts.mode = crate::config::HostMode::Closed;
    opts.queue_depth = match spec.arrival {
        crate::workload::Arrival::Closed { queue_depth } => queue_depth,
        crate::workload::Arrival::Open { .. } => 32,
    };
    let mut phases = Phases { inner: DeleteWorkload::new(spec, sim.logical_sectors())?, held: None, deleting: false };
    sim.run(&mut phases, &opts, &mut |_, _| true)?;
    sim.flush_unmeasured()?;
    phases.deleting = true;
    let report = if batch > 1 {
        let spp = sim.config().geometry.page_size as u64 / SECTOR_BYTES;
        // Closed loop: every command has time zero, so batches close on
        // size, on an overlapping write, or at the end.
        let mut batched = TrimBatcher::new(phases, batch, Nanos::ZERO, spp);
        sim.run(&mut batched, &opts, &mut |_, _| true)?
    } else {
        sim.run(&mut phases, &opts, &mut |_, _| true)?
    };
    Ok((report.sim_time_s, report.trims, report.trim_ranges))
}

/// Presets of part (b).
pub const DELETE_PRESETS: [&str; 2] = ["k9lag08u0m-4ch", "hat-table4"];

fn deletion(quick: bool, rows: &mut Vec<Row>, progress: &mut dyn FnMut(&str)) -> Result<()> {
    let spec = delete_spec(quick);
    for preset in DELETE_PRESETS {
        let ftls: &[&str] = if preset == "k9lag08u0m-4ch" { &FTLS } else { &["page", "fast"] };
        for &ftl in ftls {
            progress(&format!("deletion on {preset}, {ftl}"));
            for queued in [true, false] {
                for batch in [1u32, 64] {
                    let q = format!("host.trim_queued={queued}");
                    let (s, commands, ranges) = deletion_time(config(preset, ftl, quick, &[&q])?, &spec, batch)?;
                    let x = format!("batch={batch} {}", if queued { "queued" } else { "non-queued" });
                    let (latency_us, mb_s) = (s * 1e6, 0.0);
                    rows.push(Row {
                        series: "delete".into(),
                        preset: preset.into(),
                        ftl: ftl.into(),
                        x,
                        latency_us,
                        mb_s,
                        commands,
                        ranges,
                    });
                }
            }
        }
    }
    Ok(())
}

/// Runs both parts; `progress` hears which step is running.
pub fn run(quick: bool, progress: &mut dyn FnMut(&str)) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for ftl in FTLS {
        progress(&format!("TRIM cost on k9lag08u0m-4ch, {ftl}"));
        micro("k9lag08u0m-4ch", ftl, quick, &mut rows)?;
    }
    deletion(quick, &mut rows, progress)?;
    Ok(rows)
}

/// Deletion time with batches of 64 against one range per command, as a
/// reduction (0.25 = 25% less time), for one preset, FTL and queueing.
pub fn batching_gain(rows: &[Row], preset: &str, ftl: &str, queued: bool) -> Option<f64> {
    let q = if queued { "queued" } else { "non-queued" };
    let t = |b: u32| {
        rows.iter()
            .find(|r| r.series == "delete" && r.preset == preset && r.ftl == ftl && r.x == format!("batch={b} {q}"))
            .map(|r| r.latency_us)
    };
    Some(1.0 - t(64)? / t(1)?)
}

pub fn to_csv(rows: &[Row]) -> String {
    let mut s = String::from("series,preset,ftl,x,latency_us,mb_s,commands,ranges\n");
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{:.3},{:.3},{},{}",
            r.series, r.preset, r.ftl, r.x, r.latency_us, r.mb_s, r.commands, r.ranges
        );
    }
    s
}

fn size_label(bytes: &str) -> String {
    let b: u64 = bytes.parse().unwrap_or(0);
    match b {
        b if b >= 1 << 30 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b => format!("{} KiB", b >> 10),
    }
}

/// The tables: (a) latency and MB/s by range size, contiguity and ranges
/// per command, one column per FTL; (b) deletion time and batching's gain.
pub fn to_markdown(rows: &[Row]) -> String {
    let mut s = String::new();
    let head = |s: &mut String, first: &str| {
        let _ = writeln!(s, "| {first} | {} |", FTLS.join(" | "));
        let _ = writeln!(s, "|---|{}", "---:|".repeat(FTLS.len()));
    };
    let cell = |series: &str, x: &str, ftl: &str, f: &dyn Fn(&Row) -> String| {
        rows.iter().find(|r| r.series == series && r.x == x && r.ftl == ftl).map_or("-".into(), f)
    };
    let xs = |series: &str| {
        let mut v: Vec<String> = Vec::new();
        for r in rows.iter().filter(|r| r.series == series) {
            if !v.contains(&r.x) {
                v.push(r.x.clone());
            }
        }
        v
    };
    s.push_str(
        "(a) One TRIM of one range on k9lag08u0m-4ch: latency µs (trimmed MB/s); misaligned: start + 1 sector\n\n",
    );
    head(&mut s, "range");
    for x in xs("size") {
        for (series, tag) in [("size", ""), ("size-misaligned", " +1")] {
            let cells: Vec<String> =
                FTLS.iter().map(|f| cell(series, &x, f, &|r| format!("{:.1} ({:.0})", r.latency_us, r.mb_s))).collect();
            let _ = writeln!(s, "| {}{tag} | {} |", size_label(&x), cells.join(" | "));
        }
    }
    s.push_str("\n64 TRIMs of 64 KiB one after another: total µs\n\n");
    head(&mut s, "addresses");
    for x in xs("contiguity") {
        let cells: Vec<String> =
            FTLS.iter().map(|f| cell("contiguity", &x, f, &|r| format!("{:.1}", r.latency_us))).collect();
        let _ = writeln!(s, "| {x} | {} |", cells.join(" | "));
    }
    s.push_str("\nOne command of N scattered 64 KiB ranges: latency µs (µs per range)\n\n");
    head(&mut s, "N");
    for x in xs("ranges") {
        let cells: Vec<String> = FTLS
            .iter()
            .map(|f| {
                cell("ranges", &x, f, &|r| {
                    format!("{:.1} ({:.1})", r.latency_us, r.latency_us / r.ranges.max(1) as f64)
                })
            })
            .collect();
        let _ = writeln!(s, "| {x} | {} |", cells.join(" | "));
    }
    s.push_str("\n(b) Deleting every file (rw=delete, queue depth 32): seconds; TRIM commands / ranges; gain of batches of 64\n\n");
    s.push_str("| preset | FTL | TRIM | batch=1 s (cmds) | batch=64 s (cmds) | ranges | time saved |\n|---|---|---|---:|---:|---:|---:|\n");
    let mut seen: Vec<(String, String)> = Vec::new();
    for r in rows.iter().filter(|r| r.series == "delete") {
        let key = (r.preset.clone(), r.ftl.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        for queued in [true, false] {
            let q = if queued { "queued" } else { "non-queued" };
            let find = |b: u32| {
                rows.iter().find(|o| {
                    o.series == "delete" && o.preset == r.preset && o.ftl == r.ftl && o.x == format!("batch={b} {q}")
                })
            };
            let (Some(one), Some(many)) = (find(1), find(64)) else { continue };
            let gain = batching_gain(rows, &r.preset, &r.ftl, queued).unwrap_or(0.0);
            let _ = writeln!(
                s,
                "| {} | {} | {q} | {:.4} ({}) | {:.4} ({}) | {} | {:.1}% |",
                r.preset,
                r.ftl,
                one.latency_us / 1e6,
                one.commands,
                many.latency_us / 1e6,
                many.commands,
                one.ranges,
                gain * 100.0
            );
        }
    }
    s
}

/// Three panels: MB/s against range size (aligned, and misaligned by one
/// sector), µs per range against ranges per command, and deletion time
/// with one range per TRIM against batches of 64.
pub fn to_svg(rows: &[Row]) -> String {
    use super::figure::{Bars, Figure, Lines, distinct};
    let pts = |series: &str, ftl: &str, y: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.series == series && r.ftl == ftl)
            .filter_map(|r| r.x.parse::<f64>().ok().map(|x| (x, y(r))))
            .collect()
    };
    let size = FTLS.iter().fold(Lines::new("range size (bytes)", "TRIM throughput (MB/s)"), |l, f| {
        l.series(f, pts("size", f, &|r| r.mb_s))
            .series(&format!("{f} misaligned"), pts("size-misaligned", f, &|r| r.mb_s))
    });
    let ranges = FTLS.iter().fold(Lines::new("ranges per command", "time per range (µs)"), |l, f| {
        l.series(f, pts("ranges", f, &|r| r.latency_us / r.ranges.max(1) as f64))
    });
    let del: Vec<&Row> = rows.iter().filter(|r| r.series == "delete").collect();
    let mode = |r: &Row| if r.x.ends_with(" non-queued") { "non-queued" } else { "queued" };
    let groups: Vec<String> = distinct(del.iter().map(|r| format!("{} {} {}", r.preset, r.ftl, mode(r))));
    let time = |batch: &str| -> Vec<Option<f64>> {
        groups
            .iter()
            .map(|g| {
                del.iter()
                    .find(|r| format!("{} {} {}", r.preset, r.ftl, mode(r)) == *g && r.x.starts_with(batch))
                    .map(|r| r.latency_us / 1e6)
            })
            .collect()
    };
    let deletion = Bars::new("drive, FTL, TRIM queueing", "deletion time (s)", &groups)
        .series("one range per TRIM", time("batch=1 "))
        .series("batches of 64 ranges", time("batch=64 "));
    Figure::new("repro trim-cost: TRIM cost against range size and ranges per command; file deletion with batching")
        .panel(size.caption("TRIM throughput against range size"))
        .panel(ranges.caption("time per range against ranges per command"))
        .panel(deletion.caption("file deletion: one range per TRIM against batches of 64"))
        .to_svg()
}
