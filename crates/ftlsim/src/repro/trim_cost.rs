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
//! [`headlines`] judges each of the paper's claims per FTL (reproduced,
//! direction only, differs), with the reason from the points' own map work
//! ([`MapWork`]: translation pages read and written, PCM writes, map RAM
//! accesses) where it is not reproduced.
//!
//! The drive is the TRIM paper's K9LAG08U0M board (`k9lag08u0m-4ch`) cut to
//! 512 blocks per plane (1.9 GiB logical; `quick`: 128, ranges to 64 MiB),
//! and (b) also on `hat-table4` cut the same way, for a second device.

use crate::config::Config;
use crate::error::Result;
use crate::ftl::Span;
use crate::nand::{Geometry, Timing};
use crate::report::Report;
use crate::report::bound::unit_name;
use crate::repro::figure::distinct;
use crate::repro::headline::{self, Headline, Verdict::*, verdict};
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
    /// The point's own mapping work (part a): flash reads and programs of
    /// translation pages, and PCM writes of map entries.
    #[serde(default)]
    pub work: MapWork,
}

/// Mapping work a point caused, the reason its cost per byte moves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MapWork {
    pub flash_reads: u64,
    pub flash_programs: u64,
    pub pcm_writes: u64,
    /// Map RAM accesses of TRIMs (`energy.dram_access_ns` each).
    #[serde(default)]
    pub ram_accesses: u64,
}

impl MapWork {
    fn of(report: &Report) -> MapWork {
        MapWork {
            flash_reads: report.flash_reads_by_cause.mapping,
            flash_programs: report.flash_programs_by_cause.mapping,
            pcm_writes: report.pcm_writes,
            ram_accesses: report.trim.mapping_ram_accesses,
        }
    }

    /// What `sim` has counted since its measurement restarted.
    fn since_restart(sim: &Simulation) -> MapWork {
        MapWork::of(&sim.report_from(&Default::default(), 0.0))
    }

    /// The flash and PCM work alone.
    fn io(self) -> MapWork {
        MapWork { ram_accesses: 0, ..self }
    }

    /// The non-zero counts, e.g. `993 translation-page programs and 2018
    /// translation-page reads`.
    fn describe(&self) -> String {
        let parts: Vec<String> = [
            (self.flash_programs, "translation-page programs"),
            (self.flash_reads, "translation-page reads"),
            (self.pcm_writes, "PCM writes"),
            (self.ram_accesses, "map RAM accesses"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        match parts.split_last() {
            None => "no map work".into(),
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        }
    }
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
    let row = |series: &str, x: String, latency: Nanos, bytes: u64, (commands, ranges): (u64, u64), work| Row {
        series: series.into(),
        preset: preset.into(),
        ftl: ftl.into(),
        x,
        latency_us: latency.as_us_f64(),
        mb_s: if latency.0 > 0 { bytes as f64 / latency.as_secs_f64() / 1e6 } else { 0.0 },
        commands,
        ranges,
        work,
    };
    let mut bytes = 4096u64;
    while bytes <= max_bytes {
        let sectors = bytes / SECTOR_BYTES;
        for (series, offset) in [("size", 0), ("size-misaligned", 1)] {
            let mut sim = prepared(preset, ftl, quick, &[(0, sectors + 16)])?;
            let done = sim.submit_trim(&[Span { start: Sector(8 + offset), sectors }], SimTime::ZERO)?;
            rows.push(row(
                series,
                bytes.to_string(),
                done - SimTime::ZERO,
                bytes,
                (1, 1),
                MapWork::since_restart(&sim),
            ));
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
        let bytes = 64 * piece * SECTOR_BYTES;
        rows.push(row("contiguity", name.into(), now - SimTime::ZERO, bytes, (64, 64), MapWork::since_restart(&sim)));
    }
    // N scattered ranges of 64 KiB in one command.
    let mut n = 1u64;
    while n <= 64 {
        let ranges: Vec<Span> = (0..n).map(|i| Span { start: Sector(i * stride), sectors: piece }).collect();
        let regions: Vec<(u64, u64)> = ranges.iter().map(|r| (r.start.0, r.sectors)).collect();
        let mut sim = prepared(preset, ftl, quick, &regions)?;
        let done = sim.submit_trim(&ranges, SimTime::ZERO)?;
        let bytes = n * piece * SECTOR_BYTES;
        rows.push(row("ranges", n.to_string(), done - SimTime::ZERO, bytes, (1, n), MapWork::since_restart(&sim)));
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

/// A deletion's time, TRIM commands and ranges, and its map work.
#[derive(Clone, Copy, Debug)]
pub struct Deletion {
    pub seconds: f64,
    pub commands: u64,
    pub ranges: u64,
    pub work: MapWork,
}

/// Part (b): deleting the files of `spec` on `cfg`, TRIMs batched up to
/// `batch` ranges (1: ext4's one range per command).
pub fn deletion_time(cfg: Config, spec: &DeleteSpec, batch: u32) -> Result<Deletion> {
    let report = deletion_report(cfg, spec, batch)?;
    Ok(Deletion {
        seconds: report.sim_time_s,
        commands: report.trims,
        ranges: report.trim_ranges,
        work: MapWork::of(&report),
    })
}

/// [`deletion_time`]'s run, its whole report: the deletion phase alone.
pub fn deletion_report(cfg: Config, spec: &DeleteSpec, batch: u32) -> Result<Report> {
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
    Ok(report)
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
                    let d = deletion_time(config(preset, ftl, quick, &[&q])?, &spec, batch)?;
                    rows.push(Row {
                        series: "delete".into(),
                        preset: preset.into(),
                        ftl: ftl.into(),
                        x: format!("batch={batch} {}", if queued { "queued" } else { "non-queued" }),
                        latency_us: d.seconds * 1e6,
                        mb_s: 0.0,
                        commands: d.commands,
                        ranges: d.ranges,
                        work: d.work,
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
    let t = |batch: u32| deletion_point(rows, preset, ftl, batch, queued).map(|r| r.latency_us);
    Some(1.0 - t(64)? / t(1)?)
}

/// Part (b)'s point of `preset`, `ftl`, batches of up to `batch` ranges
/// and queued TRIM or not.
fn deletion_point<'a>(rows: &'a [Row], preset: &str, ftl: &str, batch: u32, queued: bool) -> Option<&'a Row> {
    let x = format!("batch={batch} {}", if queued { "queued" } else { "non-queued" });
    rows.iter().find(|r| r.series == "delete" && r.preset == preset && r.ftl == ftl && r.x == x)
}

pub fn to_csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "series,preset,ftl,x,latency_us,mb_s,commands,ranges,map_flash_reads,map_flash_programs,pcm_writes,map_ram_accesses\n",
    );
    for r in rows {
        let w = &r.work;
        let _ = writeln!(
            s,
            "{},{},{},{},{:.3},{:.3},{},{},{},{},{},{}",
            r.series,
            r.preset,
            r.ftl,
            r.x,
            r.latency_us,
            r.mb_s,
            r.commands,
            r.ranges,
            w.flash_reads,
            w.flash_programs,
            w.pcm_writes,
            w.ram_accesses
        );
    }
    s
}

/// The points of `series`, in the run's order.
fn xs(rows: &[Row], series: &str) -> Vec<String> {
    distinct(rows.iter().filter(|r| r.series == series).map(|r| r.x.clone()))
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
        point(rows, series, x, ftl).map_or("-".into(), f)
    };
    let xs = |series: &str| xs(rows, series);
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
            let find = |batch: u32| deletion_point(rows, &r.preset, &r.ftl, batch, queued);
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
    let _ = write!(s, "\nAgainst the paper, claim by claim\n\n{}", headlines(rows));
    s
}

/// The paper's claims beside this run's figures, one row per FTL (and
/// drive, for deletion), each with a verdict and, where it is not
/// reproduced, the reason from the run's own map work. Part of
/// [`to_markdown`].
pub fn headlines(rows: &[Row]) -> String {
    headline::table(&headline_rows(rows))
}

/// The paper gives shapes, not figures, except for deletion: up to 35%
/// faster with batches of up to 64 ranges.
const PAPER_DELETION_GAIN: f64 = 35.0;

fn headline_rows(rows: &[Row]) -> Vec<Headline> {
    let mut out = Vec::new();
    for ftl in FTLS {
        let Some(cfg) = rows.iter().find(|r| r.ftl == ftl).and_then(|r| config(&r.preset, ftl, false, &[]).ok()) else {
            continue;
        };
        out.extend(by_size(rows, ftl, &cfg));
        out.extend(by_alignment(rows, ftl));
        out.extend(by_contiguity(rows, ftl));
        out.extend(by_ranges_per_command(rows, ftl));
    }
    let deleted = distinct(rows.iter().filter(|r| r.series == "delete").map(|r| (r.preset.as_str(), r.ftl.as_str())));
    out.extend(deleted.into_iter().filter_map(|(preset, ftl)| by_batching(rows, preset, ftl)));
    out
}

fn point<'a>(rows: &'a [Row], series: &str, x: &str, ftl: &str) -> Option<&'a Row> {
    rows.iter().find(|r| r.series == series && r.x == x && r.ftl == ftl)
}

/// Cost per byte falls as the range grows: never more than 1% less
/// throughput from one size to the next.
fn by_size(rows: &[Row], ftl: &str, cfg: &Config) -> Option<Headline> {
    let aligned: Vec<&Row> = xs(rows, "size").iter().filter_map(|x| point(rows, "size", x, ftl)).collect();
    let (&first, &last) = (aligned.first()?, aligned.last()?);
    let peak = *aligned.iter().max_by(|a, b| a.mb_s.total_cmp(&b.mb_s))?;
    let falls = aligned.windows(2).any(|w| w[1].mb_s < w[0].mb_s * 0.99);
    let v = verdict(!falls, last.mb_s > first.mb_s);
    let (from, to) = (size_label(&first.x), size_label(&last.x));
    let figure = if falls {
        format!("{:.0} → {:.0} MB/s ({}) → {:.0} ({to})", first.mb_s, peak.mb_s, size_label(&peak.x), last.mb_s)
    } else {
        format!("{:.0} → {:.0} MB/s ({from} → {to})", first.mb_s, last.mb_s)
    };
    let why = if falls { past_the_cache(cfg, last) } else { String::new() };
    let claim = format!("cost per byte falls as the range grows, {ftl}");
    Some(Headline::new(&claim, &format!("one range, {from} to {to}"), "falls", figure, v, why))
}

/// A range one sector off costs more, at every size.
fn by_alignment(rows: &[Row], ftl: &str) -> Option<Headline> {
    let pairs: Vec<(f64, &Row, &Row)> = xs(rows, "size")
        .iter()
        .filter_map(|x| {
            let (a, m) = (point(rows, "size", x, ftl)?, point(rows, "size-misaligned", x, ftl)?);
            Some((m.latency_us - a.latency_us, a, m))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let dearer: Vec<f64> = pairs.iter().map(|p| p.0).filter(|&d| d > 0.0).collect();
    let v = verdict(dearer.len() == pairs.len(), dearer.len() * 2 > pairs.len());
    let mut figure = format!("{} at {} of {} sizes", spread(&dearer), dearer.len(), pairs.len());
    let mut why = String::new();
    if let Some(&(_, a, m)) = pairs.iter().rev().find(|p| p.0 <= 0.0) {
        let cheaper: Vec<f64> = pairs.iter().map(|p| p.0).filter(|&d| d <= 0.0).collect();
        figure += &format!(", {} at the rest", spread(&cheaper));
        why = format!(
            "misaligned, the range's partial end pages stay mapped (`trim.partial = \"ignore\"`): at {} {} against {} aligned",
            size_label(&a.x),
            m.work.io().describe(),
            a.work.io().describe()
        );
    }
    let claim = format!("a misaligned range costs more, {ftl}");
    Some(Headline::new(&claim, "one range, start + 1 sector", "costs more", figure, v, why))
}

/// Contiguous ranges cost less than scattered ones.
fn by_contiguity(rows: &[Row], ftl: &str) -> Option<Headline> {
    let (c, sc) = (point(rows, "contiguity", "contiguous", ftl)?, point(rows, "contiguity", "scattered", ftl)?);
    let ratio = c.latency_us / sc.latency_us;
    let v = verdict(ratio < 0.99, ratio < 1.0);
    let figure = format!("{:.1} against {:.1} µs", c.latency_us, sc.latency_us);
    let why = match v {
        Reproduced => String::new(),
        _ if c.work == sc.work => {
            format!("the same map work either way ({}): each entry is updated on its own", c.work.describe())
        }
        _ => format!("contiguous: {}; scattered: {}", c.work.describe(), sc.work.describe()),
    };
    let claim = format!("contiguous ranges cost less than scattered, {ftl}");
    Some(Headline::new(&claim, "64 TRIMs of 64 KiB", "cost less", figure, v, why))
}

/// The cost per range falls as more ranges share a command.
fn by_ranges_per_command(rows: &[Row], ftl: &str) -> Option<Headline> {
    let per_range: Vec<(u64, f64)> = xs(rows, "ranges")
        .iter()
        .filter_map(|x| point(rows, "ranges", x, ftl))
        .map(|r| (r.ranges, r.latency_us / r.ranges.max(1) as f64))
        .collect();
    let (&(n0, first), &(n1, last)) = (per_range.first()?, per_range.last()?);
    let v = verdict(per_range.windows(2).all(|w| w[1].1 < w[0].1), last < first);
    let figure = format!("{first:.1} → {last:.1} µs a range ({n0} → {n1} ranges)");
    let claim = format!("per-range cost falls as ranges share a command, {ftl}");
    Some(Headline::new(&claim, "one TRIM of N scattered 64 KiB ranges", "falls", figure, v, String::new()))
}

/// Batches of up to 64 ranges a command delete files faster, up to 35%;
/// the reason says what bounds the deletion: the PCM, the flash, or the
/// commands' own time.
fn by_batching(rows: &[Row], preset: &str, ftl: &str) -> Option<Headline> {
    let find = |batch: u32, queued: bool| deletion_point(rows, preset, ftl, batch, queued);
    let (gq, gn) = (batching_gain(rows, preset, ftl, true)? * 100.0, batching_gain(rows, preset, ftl, false)? * 100.0);
    let (one, cfg) = (find(1, false)?, config(preset, ftl, false, &[]).ok()?);
    let best = gq.max(gn);
    let v = verdict((best - PAPER_DELETION_GAIN).abs() <= 10.0, best >= 1.0);
    let figure = format!("{gq:.1}% queued, {gn:.1}% non-queued");
    let secs = one.latency_us / 1e6;
    let pcm_s = one.work.pcm_writes as f64 * cfg.pcm.write_us / 1e6;
    let (units, what, _) = flash_time(&cfg, &one.work);
    // How busy the work of a point kept the array units.
    let busy =
        |p: Option<&Row>| p.map_or(0.0, |p| flash_time(&cfg, &p.work).2 / (units as f64 * p.latency_us / 1e6) * 100.0);
    let why = if v == Reproduced {
        String::new()
    } else if pcm_s >= secs / 2.0 {
        format!(
            "{} PCM writes of {} µs (`pcm.write_us`) take {pcm_s:.1} of its {secs:.1} s, batched or not",
            one.work.pcm_writes, cfg.pcm.write_us
        )
    } else if one.work.flash_reads + one.work.flash_programs > 0 {
        format!(
            "its {} keep the {units} {what} {:.0}% busy non-queued with one range a command (each TRIM waits \
             for the one before), {:.0}% in batches of 64; queued, {:.0}% and {:.0}% batched",
            one.work.io().describe(),
            busy(Some(one)),
            busy(find(64, false)),
            busy(find(1, true)),
            busy(find(64, true)),
        )
    } else {
        format!(
            "deletion here is TRIMs alone (Filebench's also did ext4's metadata and journal I/O): the {} \
             commands' {} µs each (`trim.command_us`) are {:.0}% of its {secs:.3} s non-queued, which batching saves",
            one.commands,
            cfg.trim.command_us,
            one.commands as f64 * cfg.trim.command_us / 1e6 / secs * 100.0
        )
    };
    let claim = format!("batches of up to 64 ranges speed up file deletion, {ftl}");
    Some(Headline::new(&claim, &format!("{preset}, rw=delete, QD 32"), "up to 35%", figure, v, why))
}

/// Why a cached map's TRIM throughput falls past its cache: the largest
/// range's map work, against what the cache holds (or, if it wrote
/// nothing back, that range's map work alone).
fn past_the_cache(cfg: &Config, last: &Row) -> String {
    if last.work.io() == MapWork::default() {
        // No map cache wrote anything back: say what the range did.
        return format!("the {} range made {}", size_label(&last.x), last.work.describe());
    }
    let entries = cfg.ftl.cache_entries();
    let covers = size_label(&(entries * cfg.geometry.page_size as u64).to_string());
    let cache = size_label(&cfg.ftl.cache_bytes.to_string());
    let us = cfg.pcm.write_us;
    let how = match (last.work.pcm_writes, cfg.pcm.entries_per_write) {
        (0, _) => String::new(),
        (_, 1) => format!(", each a PCM write of {us} µs (`pcm.write_us`)"),
        (_, n) => {
            format!(", written back {n} entries (`pcm.entries_per_write`) a PCM write of {us} µs (`pcm.write_us`)")
        }
    };
    format!(
        "past the {covers} its {cache} map cache covers ({entries} entries), trimmed entries are evicted dirty{how}: \
         the {} range made {}",
        size_label(&last.x),
        last.work.io().describe()
    )
}

/// The array units (`dies`, or `planes` with `timing.plane_parallel`) and
/// the seconds `work`'s flash operations hold them.
fn flash_time(cfg: &Config, work: &MapWork) -> (u32, &'static str, f64) {
    let geo = Geometry::new(&cfg.geometry);
    let t = Timing::new(&cfg.timing, geo.page_size, cfg.host.link_ns_per_byte);
    let units = if t.plane_parallel { geo.planes } else { geo.dies() };
    let ns = work.flash_reads * t.read_op().0 + work.flash_programs * t.program_op().0;
    (units, unit_name(t.plane_parallel), ns as f64 * 1e-9)
}

/// `+3.9 µs`, or `+3.9…+4.0 µs` when the differences are not all one.
fn spread(diffs: &[f64]) -> String {
    let (lo, hi) = diffs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &d| (lo.min(d), hi.max(d)));
    match diffs.len() {
        0 => "none".into(),
        _ if format!("{lo:+.1}") == format!("{hi:+.1}") => format!("{lo:+.1} µs"),
        _ => format!("{lo:+.1}…{hi:+.1} µs"),
    }
}

/// Three panels: MB/s against range size (aligned, and misaligned by one
/// sector), µs per range against ranges per command, and deletion time
/// with one range per TRIM against batches of 64.
pub fn to_svg(rows: &[Row]) -> String {
    use super::figure::{Bars, Figure, Lines};
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(series: &str, ftl: &str, x: &str, latency_us: f64, mb_s: f64, work: MapWork) -> Row {
        let preset = "k9lag08u0m-4ch".into();
        Row {
            series: series.into(),
            preset,
            ftl: ftl.into(),
            x: x.into(),
            latency_us,
            mb_s,
            commands: 1,
            ranges: 1,
            work,
        }
    }

    fn find<'a>(rows: &'a [Headline], claim: &str) -> &'a Headline {
        rows.iter().find(|h| h.claim == claim).unwrap_or_else(|| panic!("no headline {claim}"))
    }

    #[test]
    fn throughput_that_falls_past_the_cache_is_direction_only_with_its_write_backs() {
        let written = MapWork { flash_reads: 20, flash_programs: 9, ..MapWork::default() };
        let rows = [
            row("size", "dftl", "4096", 100.0, 40.0, MapWork::default()),
            row("size", "dftl", "16777216", 800.0, 20000.0, MapWork::default()),
            row("size", "dftl", "1073741824", 300000.0, 3000.0, written),
            row("size", "page", "4096", 30.0, 120.0, MapWork::default()),
            row("size", "page", "1073741824", 50000.0, 20000.0, MapWork::default()),
        ];
        let h = headline_rows(&rows);
        let dftl = find(&h, "cost per byte falls as the range grows, dftl");
        assert_eq!(dftl.verdict, DirectionOnly, "{dftl:?}");
        assert_eq!(dftl.ftlsim, "40 → 20000 MB/s (16 MiB) → 3000 (1 GiB)");
        // The preset's 128 KiB cache of 8 B entries covers 32 MiB of 2 KiB pages.
        assert!(dftl.reason.contains("past the 32 MiB its 128 KiB map cache covers (16384 entries)"), "{dftl:?}");
        assert!(dftl.reason.ends_with("9 translation-page programs and 20 translation-page reads"), "{dftl:?}");
        let page = find(&h, "cost per byte falls as the range grows, page");
        assert_eq!((page.verdict, page.reason.as_str()), (Reproduced, ""));
    }

    #[test]
    fn a_fall_without_write_backs_is_not_blamed_on_a_cache() {
        let ram = MapWork { ram_accesses: 512, ..MapWork::default() };
        let rows = [row("size", "page", "4096", 30.0, 120.0, ram), row("size", "page", "1048576", 90.0, 100.0, ram)];
        let h = headline_rows(&rows);
        let page = find(&h, "cost per byte falls as the range grows, page");
        assert_eq!(page.verdict, Differs, "{page:?}");
        assert_eq!(page.reason, "the 1 MiB range made 512 map RAM accesses");
    }

    #[test]
    fn misalignment_cheaper_at_some_sizes_is_direction_only_and_equal_contiguity_differs() {
        let pcm = |n| MapWork { pcm_writes: n, ..MapWork::default() };
        let rows = [
            row("size", "hat", "4096", 30.0, 120.0, pcm(0)),
            row("size-misaligned", "hat", "4096", 34.0, 110.0, pcm(0)),
            row("size", "hat", "16384", 31.0, 500.0, pcm(0)),
            row("size-misaligned", "hat", "16384", 35.0, 450.0, pcm(0)),
            row("size", "hat", "67108864", 1000.0, 60.0, pcm(10)),
            row("size-misaligned", "hat", "67108864", 910.0, 70.0, pcm(9)),
            row("contiguity", "hat", "contiguous", 2000.0, 0.0, pcm(0)),
            row("contiguity", "hat", "scattered", 2000.0, 0.0, pcm(0)),
        ];
        let h = headline_rows(&rows);
        let mis = find(&h, "a misaligned range costs more, hat");
        assert_eq!(mis.verdict, DirectionOnly, "{mis:?}");
        assert_eq!(mis.ftlsim, "+4.0 µs at 2 of 3 sizes, -90.0 µs at the rest");
        assert!(mis.reason.ends_with("at 64 MiB 9 PCM writes against 10 PCM writes aligned"), "{mis:?}");
        let contiguity = find(&h, "contiguous ranges cost less than scattered, hat");
        assert_eq!(contiguity.verdict, Differs, "{contiguity:?}");
        assert!(contiguity.reason.starts_with("the same map work either way (no map work)"), "{contiguity:?}");
    }

    #[test]
    fn deletion_gains_are_judged_against_35_percent_and_explained_by_what_bounds_them() {
        // Seconds with one range and with batches of 64, queued then non-queued.
        let points = |ftl: &'static str, seconds: [f64; 4], work: MapWork| {
            let xs = ["batch=1 queued", "batch=64 queued", "batch=1 non-queued", "batch=64 non-queued"];
            xs.into_iter().zip(seconds).map(move |(x, s)| Row {
                commands: if x.starts_with("batch=1 ") { 1000 } else { 16 },
                ..row("delete", ftl, x, s * 1e6, 0.0, work)
            })
        };
        let none = MapWork::default();
        let pcm = MapWork { pcm_writes: 10_000, ..none };
        let rows: Vec<Row> = points("page", [0.10, 0.066, 0.10, 0.064], none)
            .chain(points("fast", [0.05, 0.01, 0.05, 0.01], none))
            .chain(points("hat", [1.0, 1.0, 1.0, 1.0], pcm))
            .collect();
        let h = headline_rows(&rows);
        let claim = |ftl: &str| format!("batches of up to 64 ranges speed up file deletion, {ftl}");
        let page = find(&h, &claim("page"));
        assert_eq!((page.verdict, page.ftlsim.as_str()), (Reproduced, "34.0% queued, 36.0% non-queued"));
        let fast = find(&h, &claim("fast"));
        assert_eq!(fast.verdict, DirectionOnly, "{fast:?}");
        // 1000 commands of 30 µs (the default `trim.command_us`) in 0.05 s.
        assert!(fast.reason.contains("are 60% of its 0.050 s non-queued"), "{fast:?}");
        let hat = find(&h, &claim("hat"));
        assert_eq!(hat.verdict, Differs, "{hat:?}");
        assert!(hat.reason.starts_with("10000 PCM writes of 90 µs (`pcm.write_us`) take 0.9 of its 1.0 s"), "{hat:?}");
    }
}
