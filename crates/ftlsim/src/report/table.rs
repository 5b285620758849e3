//! The report as a table for people: one `name  value` line per figure,
//! grouped, and a side-by-side form for comparing several runs.

use super::Report;
use std::fmt::Write;

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.digits$}"))
}

/// Rows of (label, value) describing one report; `brief` keeps only each
/// warning's kind (the text before its colon), for side-by-side columns.
fn rows(r: &Report, brief: bool) -> Vec<(&'static str, String)> {
    let l = &r.latency_us;
    let lat = |s: &super::LatencyStats| {
        if s.count == 0 {
            "-".to_string()
        } else {
            format!("{:.1} / {:.1} / {:.1} / {:.1} / {:.1}", s.mean, s.p50, s.p99, s.p999, s.max)
        }
    };
    let split = |q: &super::LatencyStats, s: &super::LatencyStats| {
        if q.count == 0 { "-".to_string() } else { format!("{:.1}/{:.1} / {:.1}/{:.1}", q.mean, q.p99, s.mean, s.p99) }
    };
    let causes = |c: &super::ByCause| {
        format!(
            "{} (host {}, gc {}, mapping {}, merge {}, cache {})",
            c.host + c.gc + c.mapping + c.merge + c.cache,
            c.host,
            c.gc,
            c.mapping,
            c.merge,
            c.cache
        )
    };
    let i = &r.input;
    let format = match &i.format {
        Some(f) if i.format_detected => format!("{f} (detected)"),
        Some(f) => f.clone(),
        None => "synthetic workload".into(),
    };
    let mode = match i.queue_depth {
        Some(qd) => format!("{} (queue depth {qd})", i.host_mode),
        None => i.host_mode.clone(),
    };
    // What the snapshot did, in a word; the JSON report has the reason.
    let precondition = match (&i.precondition, i.snapshot.as_deref()) {
        (None, _) => "none".to_string(),
        (Some(p), None | Some("none")) => p.clone(),
        (Some(p), Some(s)) => format!("{p} (snapshot {})", s.split(':').next().unwrap_or(s)),
    };
    let or_none = |v: String| if v.is_empty() { "none".to_string() } else { v };
    vec![
        ("ftl", r.ftl.clone()),
        ("config", r.config.clone()),
        ("overrides", or_none(r.overrides.join(" "))),
        ("input", r.input.source.clone()),
        ("format", format),
        ("host mode", mode),
        ("precondition", precondition),
        (
            "warnings",
            or_none(
                r.warnings
                    .iter()
                    .map(|w| if brief { w.split(':').next().unwrap_or(w) } else { w.as_str() })
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        ),
        ("requests (R/W/T/F)", format!("{} ({}/{}/{}/{})", r.requests, r.reads, r.writes, r.trims, r.flushes)),
        ("IOPS", format!("{:.0}", r.iops)),
        (
            "bound IOPS from the run's work (binding class, share)",
            r.bound.as_ref().map_or_else(
                || "-".to_string(),
                |b| format!("{:.0} ({}, {:.1}%)", b.iops, b.resource, b.share * 100.0),
            ),
        ),
        ("read / write MB/s", format!("{:.1} / {:.1}", r.read_mb_s, r.write_mb_s)),
        ("read latency us (mean/p50/p99/p99.9/max)", lat(&l.read)),
        ("write latency us (mean/p50/p99/p99.9/max)", lat(&l.write)),
        ("read queueing / service us (mean/p99)", split(&r.queueing_us.read, &r.service_us.read)),
        ("write queueing / service us (mean/p99)", split(&r.queueing_us.write, &r.service_us.write)),
        ("TRIM latency us (mean/p50/p99/p99.9/max)", lat(&l.trim)),
        ("TRIM commands / ranges / MB", format!("{} / {} / {:.1}", r.trims, r.trim_ranges, r.trim_bytes as f64 / 1e6)),
        (
            "TRIM time ms: controller / map RAM / drain / held",
            format!(
                "{:.3} / {:.3} / {:.3} ({}) / {:.3} ({})",
                r.trim.controller_ms,
                r.trim.mapping_ram_ms,
                r.trim.drain_wait_ms,
                r.trim.drain_waits,
                r.trim.held_ms,
                r.trim.held_commands
            ),
        ),
        (
            "host pages read / written / trimmed",
            format!("{} / {} / {}", r.host_pages_read, r.host_pages_written, r.host_pages_trimmed),
        ),
        ("flash pages read", causes(&r.flash_reads_by_cause)),
        ("flash pages programmed", suspended(causes(&r.flash_programs_by_cause), r.program_suspends)),
        ("blocks erased", suspended(causes(&r.erases_by_cause), r.erase_suspends)),
        (
            "write amplification pages / bytes",
            format!("{} / {}", opt(r.write_amplification, 3), opt(r.write_amplification_bytes, 3)),
        ),
        (
            "utilization channels / units (GC share) / host link / controller",
            format!(
                "{:.1}% / {:.1}% ({:.1}%) / {:.1}% / {:.1}%",
                r.utilization.channels * 100.0,
                r.utilization.units * 100.0,
                r.utilization.units_gc_share * 100.0,
                r.utilization.host_link * 100.0,
                r.utilization.controller * 100.0
            ),
        ),
        (
            "busiest / idlest array unit",
            format!("{:.1}% / {:.1}%", r.utilization.units_busiest * 100.0, r.utilization.units_idlest * 100.0),
        ),
        (
            "busiest / idlest channel",
            format!("{:.1}% / {:.1}%", r.utilization.channels_busiest * 100.0, r.utilization.channels_idlest * 100.0),
        ),
        (
            "write buffer hits W/R, destaged, stalls",
            r.write_buffer.as_ref().map_or_else(
                || "off".to_string(),
                |b| {
                    let mut line = format!(
                        "{} / {}, {}, {} ({:.1} ms)",
                        b.write_hits, b.read_hits, b.destaged_pages, b.stalls, b.stall_ms
                    );
                    if b.policy == "heap" {
                        line +=
                            &format!("; heap evictions clean / dirty {} / {}", b.clean_evictions, b.dirty_evictions);
                    }
                    line
                },
            ),
        ),
        ("GC invocations / pages copied", format!("{} / {}", r.gc_invocations, r.gc_pages_copied)),
        ("GC jobs the host waited out", r.gc_jobs_waited_out.to_string()),
        ("placed reads of unwritten pages", r.placed_reads.to_string()),
        ("merges switch / partial / full", format!("{} / {} / {}", r.merges.switch, r.merges.partial, r.merges.full)),
        (
            "merge pages copied / padded / skipped",
            format!("{} / {} / {}", r.merge_pages_copied, r.pages_padded, r.pages_skipped),
        ),
        ("log associativity mean / max", format!("{} / {}", opt(r.log_associativity.mean, 2), r.log_associativity.max)),
        (
            "TRIM list peak entries / bytes / copies saved",
            format!("{} / {} / {}", r.trim_list.peak_entries, r.trim_list.peak_bytes, r.trim_list.copies_saved),
        ),
        (
            "erase count mean / max / stddev",
            format!("{:.2} / {} / {:.2}", r.erase_count.mean, r.erase_count.max, r.erase_count.stddev),
        ),
        ("N_pb / N_vb / N_eb", format!("{} / {} / {:.4}", r.n_pb, r.n_vb, r.n_eb)),
        ("E_ftl", opt(r.e_ftl, 4)),
        ("mapping RAM", format!("{:.2} MiB", r.mapping_ram_bytes as f64 / 1048576.0)),
        ("mapping cache hit ratio", opt(r.mapping_hit_ratio, 4)),
        ("PCM reads / writes", format!("{} / {}", r.pcm_reads, r.pcm_writes)),
        (
            "energy J (flash / DRAM / PCM / total)",
            format!(
                "{:.4} / {:.4} / {:.4} / {:.4}",
                r.energy_j.flash, r.energy_j.dram, r.energy_j.pcm, r.energy_j.total
            ),
        ),
        (
            "power cuts / recovery µs max / pages read",
            if r.power_cuts.is_empty() {
                "none".to_string()
            } else {
                let max = r.power_cuts.iter().map(|c| c.recovery_us).fold(0.0, f64::max);
                let read: u64 = r.power_cuts.iter().map(|c| c.pages_read).sum();
                format!("{} / {max:.1} / {read}", r.power_cuts.len())
            },
        ),
        ("simulated time", format!("{:.3} s", r.sim_time_s)),
        (
            "wall time",
            if r.power_cuts.is_empty() {
                format!("{:.3} s", r.wall_time_s)
            } else {
                // Recovery's own share: the bound is on it alone.
                let max = r.power_cuts.iter().map(|c| c.wall_ms).fold(0.0, f64::max);
                format!("{:.3} s (recovery {max:.1} ms max)", r.wall_time_s)
            },
        ),
    ]
}

/// A row of operations, with the reads that suspended them where suspend
/// is on (`timing.erase_suspend_us`, `timing.program_suspend_us`).
fn suspended(row: String, reads: Option<u64>) -> String {
    match reads {
        Some(n) => format!("{row}; suspended for {n} reads"),
        None => row,
    }
}

/// Where the table's figures are defined.
const DEFINITIONS: &str = "(every figure is defined in docs/report.md)";

/// One report as an aligned two-column table.
pub fn render_table(r: &Report) -> String {
    let rows = rows(r, false);
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (k, v) in rows {
        let _ = writeln!(out, "{k:<width$}  {v}");
    }
    out.push_str(DEFINITIONS);
    out.push('\n');
    out
}

/// Several reports side by side, one column each (for `ftlsim compare`),
/// labelled by what differs. Rows equal in every report (the input, the
/// mode, figures the variants do not change) are printed once, above.
pub fn render_comparison(reports: &[Report], labels: &[String]) -> String {
    let all: Vec<_> = reports.iter().map(|r| rows(r, true)).collect();
    let Some(first) = all.first() else { return String::new() };
    let key_w = first.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let common = |row: usize| reports.len() > 1 && all.iter().all(|r| r[row].1 == first[row].1);
    let differing: Vec<usize> = (0..first.len()).filter(|&row| !common(row)).collect();
    let col_w: Vec<usize> = (0..reports.len())
        .map(|i| differing.iter().map(|&row| all[i][row].1.len()).max().unwrap_or(0).max(labels[i].len()))
        .collect();
    let mut out = String::new();
    for (row, (key, value)) in first.iter().enumerate() {
        if common(row) {
            let _ = writeln!(out, "{key:<key_w$}  {value}");
        }
    }
    if differing.len() < first.len() {
        out.push('\n');
    }
    let _ = write!(out, "{:<key_w$}", "");
    for (i, label) in labels.iter().enumerate() {
        let _ = write!(out, "  {:<w$}", label, w = col_w[i]);
    }
    out.truncate(out.trim_end_matches(' ').len());
    out.push('\n');
    for &row in &differing {
        let _ = write!(out, "{:<key_w$}", first[row].0);
        for (i, r) in all.iter().enumerate() {
            let _ = write!(out, "  {:<w$}", r[row].1, w = col_w[i]);
        }
        out.truncate(out.trim_end_matches(' ').len());
        out.push('\n');
    }
    out.push_str(DEFINITIONS);
    out.push('\n');
    out
}
