//! Summary statistics of a command stream (`ftlsim trace stats`): the
//! read/write/trim/flush mix in counts and bytes, a request-size histogram,
//! the working set, sequentiality and inter-arrival times.
//!
//! Memory stays bounded however long the trace:
//!
//! - the size histogram has one power-of-two bucket per size class (at most 55);
//! - inter-arrival percentiles come from an HDR histogram at 3 significant
//!   digits: p50 and p99 are the middle of their bucket, within 0.05% of
//!   the true value (exact below 2,048 ns); mean and max are exact;
//! - the working set is a bitmap over the logical space, one bit per 4 KiB
//!   page, allocated in chunks of 128 MiB of address space (8 KiB of memory
//!   each, for the touched and the written bits) as the trace reaches them.
//!   At most [`WORKING_SET_MAX_CHUNKS`] chunks (64 MiB, covering 1 TiB of
//!   address space in touched regions) are kept; pages in regions beyond
//!   that are not counted, and the counts are then lower bounds
//!   (`working_set_exact: false`, shown as "≥").

use super::{CmdSource, Op};
use crate::engine::host::REORDER_WINDOW;
use crate::error::Result;
use crate::sim::one_gap_is_the_span;
use crate::units::SECTOR_BYTES;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write;

/// Working-set page: 4 KiB, in sectors.
pub const PAGE_SECTORS: u64 = 8;
/// Pages per bitmap chunk (128 MiB of address space).
const CHUNK_PAGES: u64 = 1 << 15;
const CHUNK_WORDS: usize = (CHUNK_PAGES / 64) as usize;
/// Bitmap chunks kept at most: 8,192 × 8 KiB = 64 MiB.
pub const WORKING_SET_MAX_CHUNKS: usize = 8192;
/// Size buckets: bucket k holds requests of (2^(k−1), 2^k] sectors; the
/// last also holds anything larger (k = 54 is 8 EiB).
const SIZE_BUCKETS: usize = 55;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TraceStats {
    pub name: String,
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    /// TRIM commands, and the LBA ranges they carry (more than the
    /// commands only in a trace with multi-range TRIM lines).
    pub trims: u64,
    pub trim_ranges: u64,
    pub flushes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub trim_bytes: u64,
    /// Lowest start sector of any data command (not flushes).
    pub min_sector: Option<u64>,
    /// Highest end sector (exclusive) of any data command.
    pub max_end_sector: Option<u64>,
    /// Latest arrival time (times start at zero, so this is the span).
    pub span_ns: u64,
    /// Commands arriving earlier than their predecessor.
    pub backwards_timestamps: u64,
    /// The most commands before one that arrived later than it (looked for
    /// among the last `REORDER_WINDOW` + 1): an open-loop replay puts up to
    /// `REORDER_WINDOW` in time order, and issues the rest late.
    pub backwards_reach: u64,
    /// Mean size of reads, writes and trims, in bytes (0 if none).
    pub mean_request_bytes: f64,
    /// Request sizes of reads, writes and trims in power-of-two buckets,
    /// from the smallest non-empty bucket to the largest (empty ones
    /// between included).
    pub size_histogram: Vec<SizeBucket>,
    /// Distinct 4 KiB pages read or written (TRIMs do not count: a discard
    /// of the whole drive would touch every page).
    pub working_set_pages: u64,
    /// Distinct 4 KiB pages written.
    pub written_pages: u64,
    /// False when the bitmap's memory cap was reached: the page counts are
    /// then lower bounds.
    pub working_set_exact: bool,
    /// Requests starting at the sector where the previous request of the
    /// same op ended.
    pub sequential_reads: u64,
    pub sequential_writes: u64,
    pub sequential_trims: u64,
    /// (sequential reads + writes + trims) / (reads + writes + trims); 0 if none.
    pub sequential_share: f64,
    /// Time between consecutive arrivals (every command; a backwards
    /// timestamp counts as 0); absent with fewer than two commands.
    pub interarrival_ns: Option<Interarrival>,
    pub skipped_lines: u64,
    pub zero_length: u64,
}

/// Requests of more than `gt_bytes` and at most `le_bytes`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SizeBucket {
    pub gt_bytes: u64,
    pub le_bytes: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Interarrival {
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

/// Reads `src` to the end and summarises it.
pub fn stats(src: &mut dyn CmdSource) -> Result<TraceStats> {
    stats_capped(src, WORKING_SET_MAX_CHUNKS)
}

/// [`stats`] with the working-set bitmap capped at `max_chunks` chunks.
pub fn stats_capped(src: &mut dyn CmdSource, max_chunks: usize) -> Result<TraceStats> {
    let mut s = TraceStats { name: src.name().to_string(), ..TraceStats::default() };
    let mut sizes = [[0u64; 3]; SIZE_BUCKETS];
    let mut pages = WorkingSet::new(max_chunks);
    // Where the last read, write and trim ended.
    let mut last_end: [Option<u64>; 3] = [None; 3];
    // Fixed bounds (1 ns to 292 years, about 440 KiB): `saturating_record`
    // never resizes, so an auto-resizing histogram would clamp.
    let mut gaps = Histogram::<u64>::new_with_bounds(1, i64::MAX as u64, 3).expect("valid histogram bounds");
    let (mut gap_sum, mut gap_max) = (0u128, 0u64);
    let mut prev: Option<u64> = None;
    // The last arrivals, for how far back a backwards timestamp reaches.
    let mut recent: VecDeque<u64> = VecDeque::with_capacity(REORDER_WINDOW + 2);
    while let Some(c) = src.next_cmd()? {
        // A multi-range TRIM is one request, counted at its last range.
        let ends_command = !(c.op == Op::Trim && c.continued);
        s.requests += ends_command as u64;
        let bytes = c.sectors.saturating_mul(SECTOR_BYTES);
        match c.op {
            Op::Read => (s.reads, s.read_bytes) = (s.reads + 1, s.read_bytes.saturating_add(bytes)),
            Op::Write => (s.writes, s.write_bytes) = (s.writes + 1, s.write_bytes.saturating_add(bytes)),
            Op::Trim => {
                (s.trims, s.trim_ranges) = (s.trims + ends_command as u64, s.trim_ranges + 1);
                s.trim_bytes = s.trim_bytes.saturating_add(bytes);
            }
            Op::Flush => s.flushes += 1,
        }
        // Saturating: a synthetic source is not bound by the readers' checks.
        let end = c.start.0.saturating_add(c.sectors);
        if let Some(slot) = data_slot(c.op) {
            s.min_sector = Some(s.min_sector.map_or(c.start.0, |m| m.min(c.start.0)));
            s.max_end_sector = Some(s.max_end_sector.map_or(end, |m| m.max(end)));
            sizes[size_bucket(c.sectors)][slot] += 1;
            if last_end[slot] == Some(c.start.0) {
                *[&mut s.sequential_reads, &mut s.sequential_writes, &mut s.sequential_trims][slot] += 1;
            }
            last_end[slot] = Some(end);
            if c.op != Op::Trim {
                pages.add(c.start.0 / PAGE_SECTORS, end.div_ceil(PAGE_SECTORS), c.op == Op::Write);
            }
        }
        if let Some(p) = prev {
            if c.time.0 < p {
                s.backwards_timestamps += 1;
                let reach = recent.iter().filter(|&&t| t > c.time.0).count() as u64;
                s.backwards_reach = s.backwards_reach.max(reach);
            }
            let gap = c.time.0.saturating_sub(p);
            gaps.saturating_record(gap);
            gap_sum += u128::from(gap);
            gap_max = gap_max.max(gap);
        }
        prev = Some(c.time.0);
        if recent.len() > REORDER_WINDOW {
            recent.pop_front();
        }
        recent.push_back(c.time.0);
        s.span_ns = s.span_ns.max(c.time.0);
    }
    let data = s.reads + s.writes + s.trims;
    if data > 0 {
        s.mean_request_bytes = (s.read_bytes as f64 + s.write_bytes as f64 + s.trim_bytes as f64) / data as f64;
        let sequential = s.sequential_reads + s.sequential_writes + s.sequential_trims;
        s.sequential_share = sequential as f64 / data as f64;
    }
    s.size_histogram = histogram(&sizes);
    (s.working_set_pages, s.written_pages, s.working_set_exact) = (pages.touched, pages.written, !pages.capped);
    if !gaps.is_empty() {
        s.interarrival_ns = Some(Interarrival {
            mean: gap_sum as f64 / gaps.len() as f64,
            p50: gaps.median_equivalent(gaps.value_at_quantile(0.5)).min(gap_max),
            p99: gaps.median_equivalent(gaps.value_at_quantile(0.99)).min(gap_max),
            max: gap_max,
        });
    }
    s.skipped_lines = src.skipped_lines();
    s.zero_length = src.zero_length();
    s.backwards_timestamps += src.clamped_timestamps();
    Ok(s)
}

fn data_slot(op: Op) -> Option<usize> {
    match op {
        Op::Read => Some(0),
        Op::Write => Some(1),
        Op::Trim => Some(2),
        Op::Flush => None,
    }
}

/// ⌈log2(sectors)⌉, capped at the last bucket.
fn size_bucket(sectors: u64) -> usize {
    let k = if sectors <= 1 { 0 } else { 64 - (sectors - 1).leading_zeros() as usize };
    k.min(SIZE_BUCKETS - 1)
}

fn histogram(sizes: &[[u64; 3]; SIZE_BUCKETS]) -> Vec<SizeBucket> {
    let used = |k: &usize| sizes[*k] != [0; 3];
    let (Some(first), Some(last)) = ((0..SIZE_BUCKETS).find(used), (0..SIZE_BUCKETS).rev().find(used)) else {
        return Vec::new();
    };
    (first..=last)
        .map(|k| SizeBucket {
            gt_bytes: if k == 0 { 0 } else { SECTOR_BYTES << (k - 1) },
            le_bytes: SECTOR_BYTES << k,
            reads: sizes[k][0],
            writes: sizes[k][1],
            trims: sizes[k][2],
        })
        .collect()
}

/// One chunk of the bitmap: 128 MiB of address space.
struct Chunk {
    touched: Box<[u64; CHUNK_WORDS]>,
    written: Box<[u64; CHUNK_WORDS]>,
}

/// Distinct pages read or written, and written, counted as bits are first set.
struct WorkingSet {
    chunks: BTreeMap<u64, Chunk>,
    max_chunks: usize,
    touched: u64,
    written: u64,
    capped: bool,
}

impl WorkingSet {
    fn new(max_chunks: usize) -> Self {
        WorkingSet { chunks: BTreeMap::new(), max_chunks, touched: 0, written: 0, capped: false }
    }

    /// Pages `first..end`. The loop visits each chunk the range spans once,
    /// and once the cap is reached only the chunks already held: bounded
    /// by the cap even for a request spanning the whole 64-bit space.
    fn add(&mut self, first: u64, end: u64, write: bool) {
        let mut p = first;
        while p < end {
            let key = p / CHUNK_PAGES;
            let from = (p % CHUNK_PAGES) as usize;
            let n = (CHUNK_PAGES - from as u64).min(end - p);
            let full = self.chunks.len() >= self.max_chunks;
            let chunk = match self.chunks.entry(key) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(v) if !full => {
                    v.insert(Chunk { touched: Box::new([0; CHUNK_WORDS]), written: Box::new([0; CHUNK_WORDS]) })
                }
                Entry::Vacant(_) => {
                    self.capped = true;
                    // Jump to the next chunk held, if the range reaches it.
                    let next = self.chunks.range(key + 1..).next().map(|(k, _)| k * CHUNK_PAGES);
                    p = next.map_or(end, |n| n.min(end));
                    continue;
                }
            };
            self.touched += set_bits(&mut chunk.touched[..], from, from + n as usize);
            if write {
                self.written += set_bits(&mut chunk.written[..], from, from + n as usize);
            }
            p += n;
        }
    }
}

/// Sets bits `from..to`, returning how many were clear.
fn set_bits(words: &mut [u64], from: usize, to: usize) -> u64 {
    let mut new = 0;
    let mut i = from;
    while i < to {
        let (w, bit) = (i / 64, i % 64);
        let n = (64 - bit).min(to - i);
        let mask = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << bit };
        new += u64::from((mask & !words[w]).count_ones());
        words[w] |= mask;
        i += n;
    }
    new
}

/// Bytes in binary units: "512 B", "4 KiB", "1.5 MiB".
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 { format!("{v} {}", UNITS[u]) } else { format!("{v:.1} {}", UNITS[u]) }
}

/// Nanoseconds in the largest unit that keeps a whole part: "850 ns", "12.5 µs", "3.20 s".
pub fn human_ns(ns: f64) -> String {
    let (v, unit) = match ns {
        n if n >= 1e9 => (n / 1e9, "s"),
        n if n >= 1e6 => (n / 1e6, "ms"),
        n if n >= 1e3 => (n / 1e3, "µs"),
        n => (n, "ns"),
    };
    if unit == "ns" { format!("{v:.0} ns") } else { format!("{v:.2} {unit}") }
}

fn share(part: u64, whole: u64) -> String {
    if whole == 0 { "-".into() } else { format!("{:.1}%", 100.0 * part as f64 / whole as f64) }
}

/// The summary for people; `format` is the input line (format, and whether detected).
pub fn render_table(s: &TraceStats, format: &str) -> String {
    let mut t = String::new();
    let data = s.reads + s.writes + s.trims;
    let all_bytes = s.read_bytes.saturating_add(s.write_bytes).saturating_add(s.trim_bytes);
    let _ = writeln!(t, "trace          {}", s.name);
    let _ = writeln!(t, "format         {format}");
    let _ = writeln!(t, "requests       {} ({} with data)", s.requests, data);
    let _ = writeln!(t, "mix            {:>10} {:>8} {:>12} {:>8}", "count", "share", "bytes", "share");
    for (op, n, b) in [
        ("read", s.reads, s.read_bytes),
        ("write", s.writes, s.write_bytes),
        ("trim", s.trims, s.trim_bytes),
        ("flush", s.flushes, 0),
    ] {
        let bytes_share = if op == "flush" { "-".into() } else { share(b, all_bytes) };
        let _ = writeln!(t, "  {op:<12} {n:>10} {:>8} {:>12} {bytes_share:>8}", share(n, s.requests), human_bytes(b));
    }
    let _ = writeln!(t, "mean size      {}", human_bytes(s.mean_request_bytes.round() as u64));
    if let (Some(lo), Some(hi)) = (s.min_sector, s.max_end_sector) {
        let _ =
            writeln!(t, "address range  sectors {lo}..{hi} ({})", human_bytes((hi - lo).saturating_mul(SECTOR_BYTES)));
    }
    let bound = if s.working_set_exact { "" } else { "≥ " };
    let _ = writeln!(
        t,
        "working set    {bound}{} pages of 4 KiB read or written ({bound}{}), {bound}{} written ({bound}{}){}",
        s.working_set_pages,
        human_bytes(s.working_set_pages.saturating_mul(4096)),
        s.written_pages,
        human_bytes(s.written_pages.saturating_mul(4096)),
        if s.working_set_exact { "" } else { "; bitmap memory cap reached, lower bounds" }
    );
    let _ = writeln!(
        t,
        "sequential     {} of data requests start where the previous of their op ended (reads {}, writes {}, trims {})",
        share(s.sequential_reads + s.sequential_writes + s.sequential_trims, data),
        share(s.sequential_reads, s.reads),
        share(s.sequential_writes, s.writes),
        share(s.sequential_trims, s.trims)
    );
    match &s.interarrival_ns {
        Some(g) => {
            let _ = writeln!(
                t,
                "inter-arrival  mean {}, p50 {}, p99 {}, max {}",
                human_ns(g.mean),
                human_ns(g.p50 as f64),
                human_ns(g.p99 as f64),
                human_ns(g.max as f64)
            );
        }
        None => t.push_str("inter-arrival  - (fewer than two requests)\n"),
    }
    let reach = match s.backwards_reach {
        0 => String::new(),
        r if r as usize > REORDER_WINDOW => {
            format!(", reaching more than {REORDER_WINDOW} commands back: an open-loop replay issues those late")
        }
        r => format!(", reaching {r} commands back: an open-loop replay puts them in time order"),
    };
    let glitch = match s.interarrival_ns.as_ref() {
        Some(g) if one_gap_is_the_span(g.max, s.span_ns, s.requests) => {
            format!(
                "; one gap, {}, is {:.1}% of it: a clock glitch?",
                human_ns(g.max as f64),
                100.0 * g.max as f64 / s.span_ns as f64
            )
        }
        _ => String::new(),
    };
    let _ = writeln!(
        t,
        "time span      {} ({} backwards timestamps{reach}){glitch}",
        human_ns(s.span_ns as f64),
        s.backwards_timestamps
    );
    let _ = writeln!(t, "skipped lines  {} (zero-length requests: {})", s.skipped_lines, s.zero_length);
    if !s.size_histogram.is_empty() {
        let _ = writeln!(t, "{:<20}{:>10} {:>10} {:>10}", "request sizes", "reads", "writes", "trims");
        for b in &s.size_histogram {
            let range = if b.gt_bytes == 0 {
                format!("≤ {}", human_bytes(b.le_bytes))
            } else {
                format!("{}–{}", human_bytes(b.gt_bytes), human_bytes(b.le_bytes))
            };
            let _ = writeln!(t, "  {range:<18}{:>10} {:>10} {:>10}", b.reads, b.writes, b.trims);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::super::input::testutil::write_file;
    use super::super::{HostCmd, OpenOptions, open};
    use super::*;
    use crate::trace::list::CmdList;
    use crate::units::{Sector, SimTime};

    fn cmd(t: u64, op: Op, start: u64, sectors: u64) -> HostCmd {
        HostCmd { time: SimTime(t), op, start: Sector(start), sectors, continued: false }
    }

    fn of(cmds: Vec<HostCmd>) -> TraceStats {
        stats(&mut CmdList::new("hand-built", cmds)).unwrap()
    }

    #[test]
    fn summarises() {
        let t = write_file(
            "t.csv",
            b"time_ns,op,sector,sectors\n1000,W,2048,8\n2000,T,64,64\n1900,R,0,1\n2500,F,0,0\n3000,W,0,0\n",
        );
        let mut o = open(&t.path, &OpenOptions::default()).unwrap();
        let s = stats(&mut *o.source).unwrap();
        assert_eq!((s.requests, s.reads, s.writes, s.trims, s.flushes), (4, 1, 1, 1, 1));
        assert_eq!((s.read_bytes, s.write_bytes, s.trim_bytes), (512, 4096, 32768));
        assert_eq!((s.min_sector, s.max_end_sector), (Some(0), Some(2056)));
        assert_eq!((s.span_ns, s.backwards_timestamps, s.zero_length), (1500, 1, 1));
        assert!((s.mean_request_bytes - 37376.0 / 3.0).abs() < 1e-9);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"requests\":4"), "{json}");
        // A TRIM line of three ranges is one request of three ranges.
        let t = write_file("m.csv", b"time_ns,op,sector,sectors\n0,T,0,8,64,8,128,16\n5,W,0,8\n");
        let s = stats(&mut *open(&t.path, &OpenOptions::default()).unwrap().source).unwrap();
        assert_eq!((s.requests, s.trims, s.trim_ranges, s.trim_bytes), (2, 1, 3, 32 * 512));
    }

    #[test]
    fn size_histogram_in_power_of_two_buckets() {
        let s = of(vec![
            cmd(0, Op::Read, 0, 1),    // 512 B: ≤ 512 B
            cmd(0, Op::Write, 0, 8),   // 4 KiB: 2–4 KiB
            cmd(0, Op::Write, 0, 7),   // 3.5 KiB: 2–4 KiB
            cmd(0, Op::Trim, 0, 9),    // 4.5 KiB: 4–8 KiB
            cmd(0, Op::Write, 0, 256), // 128 KiB
            cmd(0, Op::Flush, 0, 0),   // not a size
        ]);
        let h: Vec<(u64, u64, [u64; 3])> =
            s.size_histogram.iter().map(|b| (b.gt_bytes, b.le_bytes, [b.reads, b.writes, b.trims])).collect();
        let k = 1024;
        assert_eq!(
            h,
            [
                (0, 512, [1, 0, 0]),
                (512, k, [0, 0, 0]),
                (k, 2 * k, [0, 0, 0]),
                (2 * k, 4 * k, [0, 2, 0]),
                (4 * k, 8 * k, [0, 0, 1]),
                (8 * k, 16 * k, [0, 0, 0]),
                (16 * k, 32 * k, [0, 0, 0]),
                (32 * k, 64 * k, [0, 0, 0]),
                (64 * k, 128 * k, [0, 1, 0]),
            ]
        );
        assert_eq!((size_bucket(1), size_bucket(2), size_bucket(3), size_bucket(u64::MAX)), (0, 1, 2, 54));
    }

    #[test]
    fn working_set_counts_distinct_4k_pages() {
        let s = of(vec![
            cmd(0, Op::Write, 0, 16),   // pages 0, 1
            cmd(0, Op::Write, 4, 8),    // pages 0, 1 again (unaligned)
            cmd(0, Op::Read, 12, 8),    // pages 1, 2: page 2 new, read only
            cmd(0, Op::Trim, 800, 800), // not counted
            // Pages 32767..32769 straddle the first chunk boundary.
            cmd(0, Op::Write, 32767 * 8, 24),
        ]);
        assert_eq!((s.working_set_pages, s.written_pages, s.working_set_exact), (6, 5, true));
    }

    #[test]
    fn working_set_cap_gives_lower_bounds_in_bounded_time() {
        let far = CHUNK_PAGES * PAGE_SECTORS * 10;
        let cmds = vec![
            cmd(0, Op::Write, 0, 8),
            cmd(0, Op::Write, far, 8), // a second chunk: over a cap of one
            cmd(0, Op::Read, 8, 8),    // in the first chunk: still counted
            // Spans the whole space: visits only the chunk held.
            cmd(0, Op::Read, 0, u64::MAX),
        ];
        let s = stats_capped(&mut CmdList::new("capped", cmds.clone()), 1).unwrap();
        assert_eq!((s.working_set_pages, s.written_pages, s.working_set_exact), (CHUNK_PAGES, 1, false));
        let table = render_table(&s, "csv");
        assert!(table.contains(&format!("≥ {CHUNK_PAGES} pages")), "{table}");
        assert!(table.contains("lower bounds"), "{table}");
        let full = stats(&mut CmdList::new("uncapped", cmds[..3].to_vec())).unwrap();
        assert_eq!((full.working_set_pages, full.written_pages, full.working_set_exact), (3, 2, true));
    }

    #[test]
    fn sequential_means_the_previous_request_of_the_same_op_ended_here() {
        let s = of(vec![
            cmd(0, Op::Write, 0, 8),
            cmd(0, Op::Read, 100, 8),
            cmd(0, Op::Write, 8, 8),  // follows the write: sequential, though a read came between
            cmd(0, Op::Read, 108, 4), // follows the read
            cmd(0, Op::Read, 0, 4),   // jumps back
            cmd(0, Op::Trim, 4, 4),   // ends of other ops do not count
            cmd(0, Op::Flush, 0, 0),
        ]);
        assert_eq!((s.sequential_reads, s.sequential_writes, s.sequential_trims), (1, 1, 0));
        assert!((s.sequential_share - 2.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn how_far_back_timestamps_reach_and_a_gap_that_is_the_span_are_told() {
        // 1,200 reads 1 ms apart, one stamped before the last three, then
        // one a day later: reach 3, and the day is the span.
        let mut cmds: Vec<HostCmd> = (0..1200).map(|i| cmd(i * 1_000_000, Op::Read, 0, 8)).collect();
        cmds.push(cmd(1_196_500_000, Op::Read, 0, 8));
        cmds.push(cmd(86_400_000_000_000, Op::Read, 0, 8));
        let s = of(cmds.clone());
        assert_eq!((s.backwards_timestamps, s.backwards_reach), (1, 3));
        let table = render_table(&s, "csv");
        assert!(table.contains("(1 backwards timestamps, reaching 3 commands back: an open-loop replay puts them in time order); one gap"), "{table}");
        assert!(table.contains("a clock glitch?"), "{table}");
        // Further back than the replay's window; a trace without a jump.
        cmds.pop();
        cmds.push(cmd(0, Op::Read, 0, 8));
        let s = of(cmds);
        assert_eq!(s.backwards_reach as usize, REORDER_WINDOW + 1);
        let table = render_table(&s, "csv");
        assert!(table.contains("more than 1024 commands back: an open-loop replay issues those late)\n"), "{table}");
    }

    #[test]
    fn interarrival_summary() {
        // Gaps: 97 of 1 ms, two of 3 s, and one backwards (counted as 0).
        let mut t = 0;
        let mut cmds = vec![cmd(0, Op::Read, 0, 8)];
        for gap in [1_000_000; 97].into_iter().chain([3_000_000_000; 2]) {
            t += gap;
            cmds.push(cmd(t, Op::Read, 0, 8));
        }
        cmds.push(cmd(5, Op::Write, 0, 8));
        let s = of(cmds);
        let g = s.interarrival_ns.unwrap();
        let near = |got: u64, want: f64| (got as f64 - want).abs() <= want * 0.0005;
        // p99: the 99th of the 100 sorted gaps, the first 3 s one.
        assert!(near(g.p50, 1e6) && near(g.p99, 3e9), "{g:?}");
        assert_eq!(g.max, 3_000_000_000);
        assert!((g.mean - (97.0 * 1e6 + 6e9) / 100.0).abs() < 1e-6);
        assert_eq!(s.backwards_timestamps, 1);
        // Below 2,048 ns, exact.
        let s = of(vec![cmd(0, Op::Read, 0, 1), cmd(2047, Op::Read, 0, 1), cmd(2047 + 1999, Op::Read, 0, 1)]);
        assert_eq!(s.interarrival_ns.map(|g| (g.p50, g.p99)), Some((1999, 2047)));
        assert_eq!(of(vec![cmd(5, Op::Read, 0, 1)]).interarrival_ns, None);
    }

    #[test]
    fn table_shows_every_figure() {
        let s = of(vec![
            cmd(0, Op::Write, 0, 8),
            cmd(1000, Op::Write, 8, 8),
            cmd(3000, Op::Read, 0, 8),
            cmd(4000, Op::Trim, 0, 16),
            cmd(4600, Op::Flush, 0, 0),
        ]);
        let t = render_table(&s, "csv (detected)");
        for want in [
            "format         csv (detected)",
            "requests       5 (4 with data)",
            "  write                 2    40.0%        8 KiB    40.0%",
            "  flush                 1    20.0%          0 B        -",
            "working set    2 pages of 4 KiB read or written (8 KiB), 2 written (8 KiB)",
            "sequential     25.0% of data requests",
            "inter-arrival  mean 1.15 µs, p50 1.00 µs, p99 2.00 µs, max 2.00 µs",
            "request sizes            reads     writes      trims",
            "  2 KiB–4 KiB                1          2          0",
            "  4 KiB–8 KiB                0          0          1",
        ] {
            assert!(t.contains(want), "missing {want:?} in\n{t}");
        }
    }

    #[test]
    fn human_units() {
        assert_eq!(
            [human_bytes(0), human_bytes(512), human_bytes(4096), human_bytes(1536 * 1024)],
            ["0 B", "512 B", "4 KiB", "1.5 MiB"]
        );
        assert_eq!([human_ns(850.0), human_ns(12_500.0), human_ns(3.2e9)], ["850 ns", "12.50 µs", "3.20 s"]);
    }
}
