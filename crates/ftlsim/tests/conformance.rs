//! Conformance: an FTL must behave as a plain block device.
//!
//! [`check_ftl`] drives `Simulation::submit` with payloads stored, on a tiny
//! drive with little over-provisioning so GC runs all the time, with random
//! sequences of writes, reads, trims and flushes (partial pages, multi-page
//! spans, a hot region next to uniform addresses), and compares every read
//! byte for byte with an in-memory reference device:
//!
//! - writes store bytes;
//! - TRIM zeroes the whole pages it covers (partial-page ends keep their
//!   data, as `ftl::whole_pages`; with `trim.partial = "zero"` every sector
//!   of the range), and nothing at all with `ftl.trim=false`;
//! - a multi-range TRIM does what its ranges would one by one;
//! - never-written and trimmed data reads as zeros, under both
//!   `host.unwritten_reads` policies (placed pages hold zeros).
//!
//! Every FTL calls `check_ftl` with its name; regression tests replay shrunk
//! failures with [`replay`]. [`check_ftl_batched`] runs the cases through
//! host-side TRIM batching (`trace::batch`) first, and
//! `batching_never_changes_what_reads_return` checks on the reference alone
//! that the batched stream reads exactly what the original does.

use ftlsim::config::TrimPartial;
use ftlsim::ftl::Span;
use ftlsim::ftl::whole_pages;
use ftlsim::trace::batch::TrimBatcher;
use ftlsim::trace::list::CmdList;
use ftlsim::trace::{CmdSource, HostCmd, Op};
use ftlsim::units::{Nanos, Sector, SimTime};
use ftlsim::{Config, Precondition, PreconditionMode, Simulation};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestCaseError, TestRunner};

/// One host command of a test sequence; offsets and lengths in sectors.
#[derive(Clone, Debug)]
enum Cmd {
    /// Write `len` sectors at `start` with the pattern of `seed`.
    W(u64, u64, u64),
    R(u64, u64),
    T(u64, u64),
    /// One TRIM command of several ranges.
    Tm(Vec<(u64, u64)>),
    F,
    /// Power cut (FTLs with crash recovery), at the issue of the next
    /// command (0) or `k`/4 of the way to it from the later of the last
    /// command's issue and the last FLUSH's completion: into the last
    /// command's flash work, whose programs then tear.
    P(u8),
}
use Cmd::{F, P, R, T, Tm, W};

/// What TRIM ranges do to the reference device; the whole pages they touch
/// are noted as changed (a power cut may leave either version).
fn trim_reference(cfg: &Config, reference: &mut [u8], ranges: &[(u64, u64)], durability: Option<&mut Durability>) {
    let mut durability = durability;
    let spp = cfg.geometry.page_size / 512;
    let page = cfg.geometry.page_size as usize;
    for &(start, sectors) in ranges.iter().filter(|_| cfg.ftl.trim) {
        if cfg.trim.partial == TrimPartial::Zero {
            reference[(start * 512) as usize..((start + sectors) * 512) as usize].fill(0);
        }
        for lpn in whole_pages(Span { start: Sector(start), sectors }, spp) {
            reference[lpn as usize * page..(lpn as usize + 1) * page].fill(0);
        }
        let first = (start / spp as u64) as usize * page;
        let end = ((start + sectors).div_ceil(spp as u64) as usize * page).min(reference.len());
        if let Some(d) = durability.as_deref_mut() {
            d.changed(reference, first..end);
        }
    }
}

/// A test case: optional preconditioning (sequential fill + random
/// overwrites, which write zeros; `fill=1.0,overwrite=1.0` in the mode
/// given), then the commands.
#[derive(Clone, Debug)]
struct Case {
    precondition: Option<PreconditionMode>,
    cmds: Vec<Cmd>,
}

/// Fast preconditioning, or none.
fn fast(on: bool) -> Option<PreconditionMode> {
    on.then_some(PreconditionMode::Fast)
}

/// The tiny drive: 1 channel, 2 planes × 16 blocks × 8 pages of 1 KiB.
const BASE: &str = include_str!("drives/tiny.toml");

fn config(ftl_name: &str, overrides: &[&str]) -> Config {
    let mut all = vec![format!("ftl.name=\"{ftl_name}\"")];
    all.extend(overrides.iter().map(|s| s.to_string()));
    Config::from_toml_str(BASE, "conformance", &all).unwrap()
}

/// Deterministic write data: byte `i` of a write with `seed`.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            // xorshift64*
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// What each sector may read after a power cut: its value at the last
/// completed FLUSH, or any value written (or trimmed) since.
struct Durability {
    flushed: Vec<u8>,
    since: Vec<Vec<Vec<u8>>>,
}

impl Durability {
    fn new(reference: &[u8]) -> Durability {
        Durability { flushed: reference.to_vec(), since: vec![Vec::new(); reference.len() / 512] }
    }

    fn changed(&mut self, reference: &[u8], bytes: std::ops::Range<usize>) {
        for s in bytes.start / 512..bytes.end / 512 {
            self.since[s].push(reference[s * 512..(s + 1) * 512].to_vec());
        }
    }

    fn flushed(&mut self, reference: &[u8]) {
        *self = Durability::new(reference);
    }

    /// Checks what the drive reads after a cut; it becomes the new state.
    fn check(&mut self, i: usize, out: &[u8]) -> Result<(), String> {
        for (s, got) in out.chunks(512).enumerate() {
            let durable = &self.flushed[s * 512..(s + 1) * 512];
            if got != durable && !self.since[s].iter().any(|v| v == got) {
                let what = if self.since[s].is_empty() { "its flushed data" } else { "any of its versions" };
                return Err(format!("power cut at command {i}: sector {s} reads neither {what}"));
            }
        }
        self.flushed(out);
        Ok(())
    }
}

/// Runs one case against the reference device; `Err` describes the first divergence.
fn run_case(cfg: &Config, case: &Case) -> Result<(), String> {
    run_case_counting(cfg, case).map(|_| ())
}

/// As [`run_case`]; returns the power cuts it made.
fn run_case_counting(cfg: &Config, case: &Case) -> Result<u64, String> {
    let spp = cfg.geometry.page_size / 512;
    let mut sim = Simulation::new(cfg.clone()).map_err(|e| e.to_string())?;
    let mut reference = vec![0u8; (sim.logical_sectors() * 512) as usize];
    if let Some(mode) = case.precondition {
        let p = Precondition { mode, ..Precondition::new(1.0, 1.0) };
        sim.precondition(p).map_err(|e| format!("precondition: {e}"))?;
        sim.check_invariants().map_err(|e| format!("after precondition: {e}"))?;
    }
    let mut now = SimTime::ZERO;
    let mut durability = Durability::new(&reference);
    let mut cuts = 0;
    let (mut last_issue, mut flushed_at) = (SimTime::ZERO, SimTime::ZERO);
    for (i, cmd) in case.cmds.iter().enumerate() {
        let (op, start, sectors) = match *cmd {
            W(s, n, _) => (Op::Write, s, n),
            R(s, n) => (Op::Read, s, n),
            T(s, n) => (Op::Trim, s, n),
            Tm(_) => (Op::Trim, 0, 0),
            F | P(_) => (Op::Flush, 0, 0),
        };
        let host = HostCmd { time: now, op, start: Sector(start), sectors, continued: false };
        let bytes = (start * 512) as usize..((start + sectors) * 512) as usize;
        let fail = |e: ftlsim::Error| format!("command {i} {cmd:?}: {e}");
        let done = match *cmd {
            W(_, _, seed) => {
                let data = pattern(seed, bytes.len());
                let done = sim.submit(&host, now, Some(&data), None).map_err(fail)?;
                reference[bytes.clone()].copy_from_slice(&data);
                durability.changed(&reference, bytes);
                done
            }
            R(..) => {
                let mut out = vec![0xEEu8; bytes.len()];
                let done = sim.submit(&host, now, None, Some(&mut out)).map_err(fail)?;
                if out[..] != reference[bytes.clone()] {
                    let at = out.iter().zip(&reference[bytes.clone()]).position(|(a, b)| a != b).unwrap();
                    let sector = start + at as u64 / 512;
                    return Err(format!(
                        "command {i} {cmd:?}: byte {at} (sector {sector}, page {}) reads {:#04x}, expected {:#04x}",
                        sector / spp as u64,
                        out[at],
                        reference[bytes.start + at]
                    ));
                }
                done
            }
            T(..) => {
                let done = sim.submit(&host, now, None, None).map_err(fail)?;
                trim_reference(cfg, &mut reference, &[(start, sectors)], Some(&mut durability));
                done
            }
            Tm(ref ranges) => {
                let spans: Vec<Span> = ranges.iter().map(|&(s, n)| Span { start: Sector(s), sectors: n }).collect();
                let done = sim.submit_trim(&spans, now).map_err(fail)?;
                trim_reference(cfg, &mut reference, ranges, Some(&mut durability));
                done
            }
            F => {
                let done = sim.submit(&host, now, None, None).map_err(fail)?;
                durability.flushed(&reference);
                done
            }
            P(k) => {
                let from = last_issue.max(flushed_at).min(now);
                let at = SimTime(from.0 + (now.0 - from.0) * k as u64 / 4);
                let r = sim.power_cut(at).map_err(fail)?;
                cuts += 1;
                sim.check_invariants().map_err(|e| format!("after power cut {i}: {e}"))?;
                sim.check_mapped_pages().map_err(|e| format!("after power cut {i}: {e}"))?;
                let at = r.recovered_at.max(now);
                let all = HostCmd {
                    time: at,
                    op: Op::Read,
                    start: Sector(0),
                    sectors: sim.logical_sectors(),
                    continued: false,
                };
                let mut out = vec![0xEEu8; reference.len()];
                let done = sim.submit(&all, at, None, Some(&mut out)).map_err(fail)?;
                durability.check(i, &out)?;
                reference = out;
                done
            }
        };
        if done < now {
            return Err(format!("command {i} {cmd:?}: completes at {done:?}, before its issue at {now:?}"));
        }
        if matches!(cmd, F) {
            flushed_at = done;
        }
        last_issue = now;
        // Closed loop at queue depth 1, with an occasional idle gap.
        now = if i % 7 == 0 { done } else { SimTime(done.0 + 1000) };
        if i % 32 == 31 {
            sim.check_invariants().map_err(|e| format!("after command {i} {cmd:?}: {e}"))?;
        }
    }
    sim.check_invariants().map_err(|e| format!("at the end: {e}"))?;
    // The side-effect-free view of each page (what `serve --state` saves) agrees.
    let page = cfg.geometry.page_size as usize;
    for (lpn, expected) in reference.chunks(page).enumerate() {
        let got = sim.page_contents(lpn as u32);
        if got.map_or(expected.iter().any(|&b| b != 0), |g| g != expected) {
            return Err(format!("page_contents({lpn}) differs from the reference"));
        }
    }
    // Everything reads back, whole device in one pass.
    let all = HostCmd { time: now, op: Op::Read, start: Sector(0), sectors: sim.logical_sectors(), continued: false };
    let mut out = vec![0xEEu8; reference.len()];
    sim.submit(&all, now, None, Some(&mut out)).map_err(|e| format!("final read: {e}"))?;
    if out != reference {
        let at = out.iter().zip(&reference).position(|(a, b)| a != b).unwrap();
        return Err(format!("final read: byte {at} (sector {}) differs", at / 512));
    }
    sim.check_invariants().map_err(|e| format!("after the final read: {e}"))?;
    Ok(cuts)
}

/// Commands over a device of `cap` sectors with `spp` sectors per page:
/// half the addresses fall in a hot region of 12 pages, lengths from one
/// sector to 5 pages, writes dominate so GC keeps running.
fn cmds(cap: u64, spp: u64, cuts: bool) -> impl Strategy<Value = Vec<Cmd>> {
    let hot = 12 * spp;
    let addr = prop_oneof![0..hot, 0..cap];
    let len = prop_oneof![3 => 1..=spp, 3 => 1..=2 * spp, 1 => 1..=5 * spp];
    let span = (addr, len).prop_map(move |(s, n)| {
        let n = n.min(cap);
        (s.min(cap - n), n)
    });
    let cmd = prop_oneof![
        10 => (span.clone(), any::<u64>()).prop_map(|((s, n), seed)| W(s, n, seed)),
        5 => span.clone().prop_map(|(s, n)| R(s, n)),
        3 => span.prop_map(|(s, n)| T(s, n)),
        1 => Just(F),
        if cuts { 2 } else { 0 } => (0..4u8).prop_map(P),
    ];
    prop::collection::vec(cmd, 100..400)
}

/// Property test of the FTL named `ftl_name` with config `overrides`.
pub fn check_ftl(ftl_name: &str, overrides: &[&str]) {
    check_ftl_cases(ftl_name, overrides, 96);
}

fn check_ftl_cases(ftl_name: &str, overrides: &[&str], cases: u32) {
    check_cases(ftl_name, overrides, cases, false);
}

/// As [`check_ftl`], with power cuts among the commands (about one in ten):
/// after each, every sector must read its data as of the last completed
/// FLUSH or a version written since. Returns the cuts made.
pub fn check_ftl_with_power_cuts(ftl_name: &str, overrides: &[&str]) -> u64 {
    check_cases(ftl_name, overrides, 96, true)
}

fn check_cases(ftl_name: &str, overrides: &[&str], cases: u32, cuts: bool) -> u64 {
    let cfg = config(ftl_name, overrides);
    let cap = cfg.logical_sectors();
    let spp = (cfg.geometry.page_size / 512) as u64;
    let strategy = (any::<bool>(), cmds(cap, spp, cuts))
        .prop_map(|(precondition, cmds)| Case { precondition: fast(precondition), cmds });
    check_strategy(&cfg, strategy, cases, &format!("{ftl_name} {overrides:?}"))
}

/// Runs `cases` cases drawn from `strategy` on `cfg`; panics naming `what`.
/// Returns the power cuts made.
fn check_strategy(cfg: &Config, strategy: impl Strategy<Value = Case>, cases: u32, what: &str) -> u64 {
    let cases = cases.saturating_mul(case_scale());
    let mut runner = TestRunner::new(PtConfig { cases, failure_persistence: None, ..PtConfig::default() });
    let made = std::sync::atomic::AtomicU64::new(0);
    let result = runner.run(&strategy, |case| {
        let n = run_case_counting(cfg, &case).map_err(TestCaseError::fail)?;
        made.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{what}: {e:?}");
    }
    made.into_inner()
}

/// How many times its usual number of cases each FTL check runs:
/// `FTLSIM_CONFORMANCE_SCALE=N` (default 1) for a long bug hunt, e.g.
/// `FTLSIM_CONFORMANCE_SCALE=20 cargo test --release -p ftlsim --test
/// integration conformance`. Cases are drawn afresh at every run.
fn case_scale() -> u32 {
    let Ok(v) = std::env::var("FTLSIM_CONFORMANCE_SCALE") else { return 1 };
    match v.parse::<u32>() {
        Ok(n) if n >= 1 => n,
        _ => panic!("FTLSIM_CONFORMANCE_SCALE={v:?}: expected a whole number of at least 1"),
    }
}

/// `cmds` as host-side TRIM batching (at most `max` ranges a command, a
/// window of `window_cmds` commands) turns them into: the same reads,
/// writes and flushes in order, the TRIMs moved later and grouped.
fn batched(cmds: &[Cmd], max: u32, window_cmds: u64, spp: u64) -> Vec<Cmd> {
    // Arrivals 1 µs apart; reads and writes keep their data through the order.
    let mut seeds = Vec::new();
    let host: Vec<HostCmd> = cmds
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let time = SimTime(i as u64 * 1000);
            let (op, start, sectors) = match *c {
                W(s, n, seed) => {
                    seeds.push(seed);
                    (Op::Write, s, n)
                }
                R(s, n) => (Op::Read, s, n),
                T(s, n) => (Op::Trim, s, n),
                Tm(_) => unreachable!("cases are single-range"),
                P(_) => unreachable!("batched cases have no power cuts"),
                F => (Op::Flush, 0, 0),
            };
            HostCmd { time, op, start: Sector(start), sectors, continued: false }
        })
        .collect();
    let mut b = TrimBatcher::new(CmdList::new("case", host), max, Nanos(window_cmds * 1000), spp);
    let (mut out, mut ranges, mut seeds) = (Vec::new(), Vec::new(), seeds.into_iter());
    while let Some(c) = b.next_cmd().unwrap() {
        match c.op {
            Op::Trim => {
                ranges.push((c.start.0, c.sectors));
                if !c.continued {
                    out.push(Tm(std::mem::take(&mut ranges)));
                }
            }
            Op::Write => out.push(W(c.start.0, c.sectors, seeds.next().unwrap())),
            Op::Read => out.push(R(c.start.0, c.sectors)),
            Op::Flush => out.push(F),
        }
    }
    out
}

/// What every read of `cmds` returns on the reference device, in order.
fn reference_reads(cfg: &Config, cmds: &[Cmd]) -> Vec<Vec<u8>> {
    let mut reference = vec![0u8; (cfg.logical_sectors() * 512) as usize];
    let mut reads = Vec::new();
    for c in cmds {
        let bytes = |s: u64, n: u64| (s * 512) as usize..((s + n) * 512) as usize;
        match *c {
            W(s, n, seed) => reference[bytes(s, n)].copy_from_slice(&pattern(seed, (n * 512) as usize)),
            R(s, n) => reads.push(reference[bytes(s, n)].to_vec()),
            T(s, n) => trim_reference(cfg, &mut reference, &[(s, n)], None),
            Tm(ref ranges) => trim_reference(cfg, &mut reference, ranges, None),
            F | P(_) => {}
        }
    }
    reads.push(reference);
    reads
}

/// As [`check_ftl`], every case through host-side TRIM batching.
pub fn check_ftl_batched(ftl_name: &str, overrides: &[&str]) {
    let cfg = config(ftl_name, overrides);
    let cap = cfg.logical_sectors();
    let spp = (cfg.geometry.page_size / 512) as u64;
    let strategy = (any::<bool>(), cmds(cap, spp, false), 2u32..=64, 1u64..40).prop_map(
        move |(precondition, cmds, max, window)| Case {
            precondition: fast(precondition),
            cmds: batched(&cmds, max, window, spp),
        },
    );
    check_strategy(&cfg, strategy, 48, &format!("{ftl_name} {overrides:?} batched"));
}

/// The transform itself, on the reference device: the batched stream reads
/// what the original reads, read for read, and leaves the same contents.
#[test]
fn batching_never_changes_what_reads_return() {
    for partial in ["trim.partial=\"ignore\"", "trim.partial=\"zero\""] {
        let cfg = config("page", &[partial]);
        let (cap, spp) = (cfg.logical_sectors(), (cfg.geometry.page_size / 512) as u64);
        let strategy = (cmds(cap, spp, false), 2u32..=64, 1u64..40);
        let mut runner = TestRunner::new(PtConfig { cases: 256, failure_persistence: None, ..PtConfig::default() });
        let grouped = std::cell::Cell::new(0);
        runner
            .run(&strategy, |(cmds, max, window)| {
                let b = batched(&cmds, max, window, spp);
                grouped.set(grouped.get() + b.iter().any(|c| matches!(c, Tm(r) if r.len() > 1)) as u32);
                prop_assert_eq!(reference_reads(&cfg, &cmds), reference_reads(&cfg, &b));
                Ok(())
            })
            .unwrap();
        let grouped = grouped.get();
        assert!(grouped > 128, "batching grouped TRIMs in only {grouped} of 256 cases");
    }
}

/// Replays one case (regression tests of shrunk failures).
fn replay(ftl_name: &str, overrides: &[&str], precondition: bool, cmds: &[Cmd]) {
    let cfg = config(ftl_name, overrides);
    if let Err(e) = run_case(&cfg, &Case { precondition: fast(precondition), cmds: cmds.to_vec() }) {
        panic!("{ftl_name} {overrides:?}: {e}");
    }
}

/// The tiny drive really is under GC pressure: a sequence the size of the
/// generated ones erases blocks many times over.
#[test]
fn harness_keeps_gc_busy() {
    let cfg = config("page", &[]);
    let cap = cfg.logical_sectors();
    let mut sim = Simulation::new(cfg).unwrap();
    let mut now = SimTime::ZERO;
    for i in 0..200u64 {
        let start = (i * 7919) % (cap - 4);
        let cmd = HostCmd { time: now, op: Op::Write, start: Sector(start), sectors: 3, continued: false };
        now = sim.submit(&cmd, now, Some(&pattern(i, 3 * 512)), None).unwrap();
    }
    let erases = sim.device().counters.erases.iter().sum::<u64>();
    assert!(erases > 20, "{erases} erases");
    sim.check_invariants().unwrap();
}

#[test]
fn page_greedy() {
    check_ftl("page", &["gc.policy=greedy"]);
}

#[test]
fn page_cost_benefit() {
    check_ftl("page", &["gc.policy=cost-benefit"]);
}

#[test]
fn page_fifo() {
    check_ftl("page", &["gc.policy=fifo"]);
}

#[test]
fn page_random() {
    check_ftl("page", &["gc.policy=random"]);
}

#[test]
fn page_d_choices() {
    check_ftl("page", &["gc.policy=d-choices", "gc.d=3"]);
}

#[test]
fn page_without_trim() {
    check_ftl("page", &["ftl.trim=false"]);
}

#[test]
fn page_placing_unwritten_reads() {
    check_ftl("page", &["host.unwritten_reads=place"]);
}

#[test]
fn page_large_pages() {
    check_ftl("page", &["geometry.page_size=2048", "gc.policy=d-choices"]);
}

#[test]
fn page_sector_pages() {
    check_ftl("page", &["geometry.page_size=512", "gc.policy=cost-benefit"]);
}

#[test]
fn page_one_block_reserve() {
    check_ftl("page", &["gc.min_free_blocks=1", "gc.threshold=0", "gc.policy=random"]);
}

/// The page FTL conditioned functionally (`mode=functional`: the state
/// built with no time, on the array and the block pool) is an ordinary
/// drive: what it then reads, writes, trims and flushes conforms, power
/// cuts among the commands (recovery rebuilds the map from the OOB it
/// wrote), where the drive allows them (not with sub-page units). 4 KiB
/// pages or units: the tiny drive's 1 KiB pages are under the 4 KiB
/// overwrites it models.
#[test]
fn page_after_functional_preconditioning() {
    let variants: [&[&str]; 9] = [
        &["geometry.page_size=4096"],
        // Units under the 4 KiB an overwrite writes: runs of them, the
        // forward map kept as the state is built.
        &["geometry.page_size=2048", PAPER_GC[0], PAPER_GC[1], PAPER_GC[2]],
        &[],
        &["geometry.page_size=2048", "ftl.map_unit_bytes=512"],
        &["geometry.page_size=4096", "gc.mode=\"blocking\"", "ftl.allocation=\"static\"", "gc.policy=cost-benefit"],
        &["geometry.page_size=4096", "gc.frontier=\"separate\"", "cache.bytes=16384"],
        &["geometry.page_size=4096", PAPER_GC[0], PAPER_GC[1], PAPER_GC[2]],
        // 4 KiB units two to a page, packed behind a buffer, padded without.
        &["geometry.page_size=8192", "ftl.map_unit_bytes=4096", "cache.bytes=32768"],
        &["geometry.page_size=8192", "ftl.map_unit_bytes=4096", "gc.mode=\"blocking\""],
    ];
    for extra in variants {
        let cfg = config("page", extra);
        let (cap, spp) = (cfg.logical_sectors(), (cfg.geometry.page_size / 512) as u64);
        let functional = Some(PreconditionMode::Functional);
        let units = cfg.units_per_page() > 1;
        let strategy = cmds(cap, spp, !units).prop_map(move |cmds| Case { precondition: functional, cmds });
        let cuts = check_strategy(&cfg, strategy, 24, &format!("page after functional preconditioning {extra:?}"));
        assert!(units || cuts > 0, "{extra:?}: no power cut was made");
    }
}

/// GC as the TRIM paper runs it: below 30% free space, and blocks erased as
/// soon as TRIM or overwrites leave them empty.
const PAPER_GC: [&str; 3] = ["gc.threshold=0.3", "gc.threshold_of=\"free-space\"", "gc.reclaim_empty=true"];

#[test]
fn page_free_space_gc_reclaiming_empty_blocks() {
    check_ftl("page", &PAPER_GC);
}

#[test]
fn page_free_space_gc_blocking_quarter_page_units() {
    let extra = ["gc.mode=\"blocking\"", "geometry.page_size=2048", "ftl.map_unit_bytes=512"];
    check_ftl("page", &[&PAPER_GC[..], &extra].concat());
}

#[test]
fn dftl_free_space_gc_reclaiming_empty_blocks() {
    check_ftl("dftl", &[&PAPER_GC[..], &[TINY_CACHE]].concat());
}

// Mapping units smaller than the page (`ftl.map_unit_bytes`): units of
// different LPNs share pages, partial units are read-modify-written, GC
// packs live units, TRIM drops whole pages' units.
#[test]
fn page_quarter_page_units() {
    check_ftl("page", &["geometry.page_size=2048", "ftl.map_unit_bytes=512"]);
}

#[test]
fn page_quarter_page_units_blocking_cost_benefit() {
    check_ftl(
        "page",
        &["geometry.page_size=2048", "ftl.map_unit_bytes=512", "gc.mode=\"blocking\"", "gc.policy=cost-benefit"],
    );
}

#[test]
fn page_quarter_page_units_placing_unwritten_reads() {
    check_ftl("page", &["geometry.page_size=2048", "ftl.map_unit_bytes=512", "host.unwritten_reads=place"]);
}

#[test]
fn page_half_page_units_zeroing_partial_trims() {
    check_ftl("page", &["ftl.map_unit_bytes=512", "trim.partial=\"zero\"", "gc.policy=random"]);
}

/// A CMT/QMT of four entries: nearly every translation misses and evicts.
const TINY_CACHE: &str = "ftl.cache_bytes=32";

#[test]
fn dftl_whole_table_cached() {
    check_ftl("dftl", &[]);
}

#[test]
fn dftl_tiny_cache() {
    check_ftl("dftl", &[TINY_CACHE]);
}

#[test]
fn dftl_one_entry_cache_placing_unwritten_reads() {
    check_ftl("dftl", &["ftl.cache_bytes=8", "host.unwritten_reads=place", "gc.policy=cost-benefit"]);
}

/// Small pages on a larger drive: six translation pages, so write-backs,
/// batched GC updates and translation-page GC touch different pages.
#[test]
fn dftl_many_translation_pages() {
    check_ftl("dftl", &[TINY_CACHE, "geometry.page_size=512", "geometry.blocks_per_plane=64", "gc.policy=d-choices"]);
}

/// A TRIM covering DFTL translation pages whole drops them (one read
/// each, no rewrite) instead of loading their entries: the usual commands
/// with TRIMs of one or two whole translation pages (128 entries of a
/// 512 B page) among them, with and without power cuts.
#[test]
fn dftl_trims_of_whole_translation_pages() {
    let o = [TINY_CACHE, "geometry.page_size=512", "geometry.blocks_per_plane=64"];
    let cfg = config("dftl", &o);
    let (cap, spp) = (cfg.logical_sectors(), (cfg.geometry.page_size / 512) as u64);
    let table_page = (cfg.geometry.page_size / 4) as u64 * spp;
    let tables = cap / table_page;
    assert!(tables >= 2, "{tables} whole translation pages");
    let whole = (0..tables, 1..=2u64).prop_map(move |(t, n)| T(t * table_page, n.min(tables - t) * table_page));
    for cuts in [false, true] {
        let inserted = prop::collection::vec((any::<prop::sample::Index>(), whole.clone()), 1..6);
        let strategy =
            (any::<bool>(), cmds(cap, spp, cuts), inserted).prop_map(|(precondition, mut cmds, inserted)| {
                for (at, trim) in inserted {
                    let i = at.index(cmds.len() + 1);
                    cmds.insert(i, trim);
                }
                Case { precondition: fast(precondition), cmds }
            });
        let made = check_strategy(&cfg, strategy, 96, &format!("dftl {o:?}, cuts {cuts}"));
        assert!(!cuts || made >= 500, "{made} power cuts");
    }
}

#[test]
fn dftl_without_trim() {
    check_ftl("dftl", &[TINY_CACHE, "ftl.trim=false", "gc.policy=fifo"]);
}

#[test]
fn hat_whole_table_cached() {
    check_ftl("hat", &[]);
}

#[test]
fn hat_tiny_cache() {
    check_ftl("hat", &[TINY_CACHE]);
}

#[test]
fn hat_one_entry_cache_placing_unwritten_reads() {
    check_ftl("hat", &["ftl.cache_bytes=8", "host.unwritten_reads=place", "gc.policy=random"]);
}

#[test]
fn hat_small_pages() {
    check_ftl("hat", &[TINY_CACHE, "geometry.page_size=512", "geometry.blocks_per_plane=64"]);
}

// Regression tests of shrunk failures.

/// A partial-page write to a never-written page (and a read of one under
/// `zero`) looked up the payload of the NEVER marker as if it were a page
/// number: slice index out of range.
#[test]
fn regression_partial_write_to_unwritten_page() {
    replay("page", &[], false, &[W(0, 1, 0), R(0, 2), R(5, 3)]);
}

/// The same for a partial write to a trimmed page.
#[test]
fn regression_partial_write_to_trimmed_page() {
    replay("page", &[], false, &[W(0, 2, 1), T(0, 2), W(1, 1, 2), R(0, 2)]);
}

/// Random (and d-choices) victims may be full blocks by chance; GC stopped
/// at one as if the plane were full of live data, the host then took the
/// reserve's last free block, and the next GC had nowhere to copy to
/// ("GC of block 20 found no free page in its plane").
#[test]
fn regression_random_victim_full_block() {
    replay("page", &["gc.policy=random"], true, &[]);
    replay("page", &["gc.policy=d-choices", "gc.d=3"], true, &[]);
}

/// `gc.min_free_blocks=1` (accepted by validation, "GC needs at least 1 free
/// block to copy into") left GC no free block: GC ran only once the host had
/// taken the last one.
#[test]
fn regression_one_block_reserve() {
    replay("page", &["gc.min_free_blocks=1", "gc.threshold=0"], true, &[W(0, 4, 1), R(0, 4)]);
}

// Block-mapped and hybrid FTLs. Two channels make page and block striping differ.

#[test]
fn block_page_striping() {
    check_ftl("block", &["geometry.channels=2", "ftl.striping=page"]);
}

#[test]
fn block_block_striping_immediate_trim() {
    check_ftl("block", &["geometry.channels=2", "ftl.striping=block", "ftl.trim_mode=immediate"]);
}

#[test]
fn bast_page_striping() {
    check_ftl("bast", &["geometry.channels=2", "ftl.striping=page"]);
}

#[test]
fn bast_block_striping() {
    check_ftl("bast", &["geometry.channels=2", "ftl.striping=block", "ftl.log_blocks=2"]);
}

#[test]
fn bast_immediate_trim() {
    check_ftl("bast", &["ftl.trim_mode=immediate", "ftl.trim_list_groups=3"]);
}

#[test]
fn bast_without_trim_placing_unwritten_reads() {
    check_ftl("bast", &["ftl.trim=false", "host.unwritten_reads=place"]);
}

#[test]
fn fast_page_striping() {
    check_ftl("fast", &["geometry.channels=2", "ftl.striping=page"]);
}

#[test]
fn fast_block_striping() {
    check_ftl("fast", &["geometry.channels=2", "ftl.striping=block", "ftl.trim_list_groups=5"]);
}

#[test]
fn fast_immediate_trim() {
    check_ftl("fast", &["ftl.trim_mode=immediate"]);
}

#[test]
fn fast_random_logs_only_placing_unwritten_reads() {
    check_ftl("fast", &["ftl.seq_log_blocks=0", "ftl.rand_log_blocks=2", "host.unwritten_reads=place"]);
}

#[test]
fn fast_without_trim_sector_pages() {
    check_ftl("fast", &["ftl.trim=false", "geometry.page_size=512"]);
}

// μ-FTL: a RAM budget of two tree-cache pages (one read, one write) and a
// four-entry bitmap cache, so tree write-backs and bitmap flushes never stop.

/// `ftl.mu_ram_bytes` for the tiny drive: 32 counters, `bitmap` bytes of
/// bitmap cache, and `pages` tree-cache pages of `page` bytes.
fn mu_ram(bitmap: u64, pages: u64, page: u64) -> String {
    format!("ftl.mu_ram_bytes={}", 32 + bitmap + pages * page)
}

#[test]
fn mu_small_caches() {
    check_ftl("mu", &[&mu_ram(16, 2, 1024), "ftl.mu_bitmap_cache_bytes=16", "ftl.gc_until_free=5"]);
}

#[test]
fn mu_four_partitions() {
    check_ftl(
        "mu",
        &[&mu_ram(16, 3, 1024), "ftl.mu_bitmap_cache_bytes=16", "ftl.partition_bytes=49152", "ftl.gc_until_free=3"],
    );
}

#[test]
fn mu_no_bitmap_cache_placing_unwritten_reads() {
    check_ftl(
        "mu",
        &[&mu_ram(0, 2, 1024), "ftl.mu_bitmap_cache_bytes=0", "host.unwritten_reads=place", "gc.policy=cost-benefit"],
    );
}

/// Runs `check` on μ-FTL with 512 B pages (smaller tree nodes, so a
/// taller μ-Tree) and TRIM off.
fn on_mu_sector_pages_without_trim(check: fn(&str, &[&str])) {
    let ram = mu_ram(64, 4, 512);
    check(
        "mu",
        &[&ram, "ftl.mu_bitmap_cache_bytes=64", "geometry.page_size=512", "ftl.trim=false", "ftl.gc_until_free=4"],
    );
}

#[test]
fn mu_sector_pages_without_trim() {
    on_mu_sector_pages_without_trim(check_ftl);
}

// DAC: page mapping with hot/cold regions (write streams) over the page path.

#[test]
fn dac_two_regions() {
    check_ftl("dac", &["ftl.dac_regions=2"]);
}

#[test]
fn dac_three_regions_placing_unwritten_reads() {
    check_ftl(
        "dac",
        &["ftl.dac_regions=3", "geometry.blocks_per_plane=24", "host.unwritten_reads=place", "gc.policy=cost-benefit"],
    );
}

// Superblock: page mapping within groups of adjacent logical blocks.

#[test]
fn superblock_default() {
    check_ftl("superblock", &["ftl.superblock_blocks=8", "ftl.gc_until_free=4"]);
}

#[test]
fn superblock_small_groups_placing_unwritten_reads() {
    check_ftl(
        "superblock",
        &[
            "ftl.superblock_blocks=4",
            "ftl.superblock_extra_blocks=1",
            "geometry.blocks_per_plane=32",
            "ftl.gc_until_free=3",
            "host.unwritten_reads=place",
        ],
    );
}

#[test]
fn superblock_without_trim_sector_pages() {
    check_ftl(
        "superblock",
        &["ftl.trim=false", "geometry.page_size=512", "ftl.superblock_blocks=12", "ftl.gc_until_free=4"],
    );
}

// The write buffer in front of every kind of FTL: small enough to fill, so
// writes stall, destage under GC pressure, and reads mix buffered sectors
// with flash's; FIFO and LRU, and with blocking GC and static allocation.
#[test]
fn page_with_write_buffer() {
    check_ftl("page", &["cache.bytes=8192", "cache.policy=\"lru\""]);
}

// A drive that models power cuts (payloads record program sequences by
// default) books owed copies a step at a time; without sequences it books
// them as runs reads cut into (`engine/device/preempt.rs`): both checked.
#[test]
fn page_with_write_buffer_paying_gc_debt_in_background() {
    check_ftl("page", &["cache.bytes=8192", "gc.debt=\"background\""]);
    check_ftl("page", &["cache.bytes=8192", "gc.debt=\"background\"", "nand.record_sequence=false"]);
}

#[test]
fn page_paying_gc_debt_in_background_without_a_buffer() {
    check_ftl("page", &["gc.debt=\"background\""]);
    check_ftl("page", &["gc.debt=\"background\"", "nand.record_sequence=false"]);
    check_ftl("dftl", &["gc.debt=\"background\"", "nand.record_sequence=false"]);
}

#[test]
fn page_with_write_buffer_fifo_blocking_static() {
    check_ftl(
        "page",
        &["cache.bytes=4096", "cache.policy=\"fifo\"", "gc.mode=\"blocking\"", "ftl.allocation=\"static\""],
    );
}

#[test]
fn page_quarter_page_units_with_write_buffer() {
    check_ftl("page", &["geometry.page_size=2048", "ftl.map_unit_bytes=512", "cache.bytes=8192"]);
}

/// Units of several sectors behind the buffer: a buffered unit's dirty
/// sectors can be runs apart (sectors 0 and 2 of 4), destaged as two spans
/// of one unit in one batch, which must stage the unit once (it was
/// staged twice: mapped twice, its valid count off by one, the first run's
/// bytes and the old copy's lost).
#[test]
fn page_half_page_units_of_several_sectors_with_write_buffer() {
    check_ftl("page", &["geometry.page_size=4096", "ftl.map_unit_bytes=2048", "cache.bytes=16384"]);
}

#[test]
fn page_quarter_page_units_with_write_buffer_fifo_blocking_static() {
    check_ftl(
        "page",
        &[
            "geometry.page_size=2048",
            "ftl.map_unit_bytes=512",
            "cache.bytes=4096",
            "cache.policy=\"fifo\"",
            "gc.mode=\"blocking\"",
            "ftl.allocation=\"static\"",
        ],
    );
}

// COFTL's heap rule as the buffer's replacement (`cache.policy = "heap"`):
// with the default α (program / read time: clean pages go first) and with
// α below 1, where replacements wait for dirty pages' write-backs; and with
// sub-page units, whose destages take the lowest-valued units.
#[test]
fn page_with_write_buffer_heap() {
    check_ftl("page", &["cache.bytes=8192", "cache.policy=\"heap\""]);
}

#[test]
fn page_with_write_buffer_heap_low_alpha_blocking_static() {
    check_ftl(
        "page",
        &[
            "cache.bytes=4096",
            "cache.policy=\"heap\"",
            "cache.alpha=0.25",
            "gc.mode=\"blocking\"",
            "ftl.allocation=\"static\"",
        ],
    );
}

#[test]
fn page_quarter_page_units_with_write_buffer_heap() {
    check_ftl(
        "page",
        &["geometry.page_size=2048", "ftl.map_unit_bytes=512", "cache.bytes=8192", "cache.policy=\"heap\""],
    );
}

#[test]
fn dftl_with_write_buffer() {
    check_ftl("dftl", &["cache.bytes=8192", "ftl.cache_bytes=64"]);
}

#[test]
fn hat_with_write_buffer() {
    check_ftl("hat", &["cache.bytes=8192"]);
}

#[test]
fn fast_with_write_buffer() {
    check_ftl("fast", &["cache.bytes=8192"]);
}

/// A fill (in-place write or merge) that skips a page the TRIM list holds
/// while it is still mapped realizes the TRIM: its old copy stops counting.
#[test]
fn fast_with_write_buffer_skipping_a_listed_page() {
    let cfg = config("fast", &["cache.bytes=8192"]);
    let cmds = include!("drives/fast_write_buffer_case.rs");
    run_case(&cfg, &Case { precondition: None, cmds }).unwrap();
}

#[test]
fn page_with_write_buffer_ignoring_trim() {
    check_ftl("page", &["cache.bytes=8192", "ftl.trim=false"]);
}

#[test]
fn mu_with_write_buffer() {
    check_ftl("mu", &[&mu_ram(16, 2, 1024), "ftl.mu_bitmap_cache_bytes=16", "ftl.gc_until_free=5", "cache.bytes=8192"]);
}

// COFTL: 16-page blocks (two page sets go to summary and replacement pages)
// and room for its spare and log sets. Two-block sets on the two planes,
// a VPT cache of two tables (evictions commit summaries), and its data
// cache of four virtual pages.
const COFTL: [&str; 4] =
    ["geometry.pages_per_block=16", "geometry.blocks_per_plane=32", "overprovisioning=0.6", "ftl.coftl_set_blocks=2"];
const COFTL_TINY_VPT_CACHE: &str = "ftl.cache_bytes=112";
const COFTL_DATA_CACHE: &str = "ftl.coftl_cache_bytes=8192";

fn coftl(extra: &[&'static str]) -> Vec<&'static str> {
    COFTL.iter().copied().chain(extra.iter().copied()).collect()
}

#[test]
fn coftl_without_data_cache() {
    check_ftl("coftl", &coftl(&[COFTL_TINY_VPT_CACHE]));
}

#[test]
fn coftl_with_data_cache() {
    check_ftl("coftl", &coftl(&[COFTL_TINY_VPT_CACHE, COFTL_DATA_CACHE]));
}

#[test]
fn coftl_one_block_sets_one_replacement_without_trim() {
    check_ftl(
        "coftl",
        &coftl(&["ftl.coftl_set_blocks=1", "ftl.coftl_replacements=1", "ftl.trim=false", "ftl.coftl_wl_erases=7"]),
    );
}

#[test]
fn coftl_with_controller_write_buffer() {
    check_ftl("coftl", &coftl(&[COFTL_DATA_CACHE, "cache.bytes=4096"]));
}

#[test]
fn coftl_with_controller_write_buffer_heap() {
    check_ftl("coftl", &coftl(&[COFTL_DATA_CACHE, "cache.bytes=4096", "cache.policy=\"heap\""]));
}

#[test]
fn coftl_without_data_cache_with_controller_write_buffer_heap_low_alpha() {
    check_ftl("coftl", &coftl(&[COFTL_TINY_VPT_CACHE, "cache.bytes=4096", "cache.policy=\"heap\"", "cache.alpha=0.5"]));
}

#[test]
fn coftl_power_cuts_without_data_cache() {
    let cuts = check_ftl_with_power_cuts("coftl", &coftl(&[COFTL_TINY_VPT_CACHE, "ftl.coftl_log_free_sets=3"]));
    assert!(cuts >= 1000, "{cuts} power cuts");
}

#[test]
fn coftl_power_cuts_with_data_cache() {
    let cuts = check_ftl_with_power_cuts(
        "coftl",
        &coftl(&[COFTL_TINY_VPT_CACHE, COFTL_DATA_CACHE, "ftl.coftl_wl_erases=5", "ftl.coftl_replacements=1"]),
    );
    assert!(cuts >= 1000, "{cuts} power cuts");
}

#[test]
fn bl_is_block() {
    check_ftl_cases("bl", &["geometry.channels=2"], 16);
}

/// A write buffer of 8 pages: a cut loses what it holds.
const WRITE_BUFFER: &str = "cache.bytes=8192";

/// Power cuts on an FTL that rebuilds its map from OOB records, with the
/// write buffer off and on (each asserting the issue's 1,000 cuts).
fn check_oob_recovery(ftl_name: &str, overrides: &[&str]) {
    for buffer in [None, Some(WRITE_BUFFER)] {
        let all: Vec<&str> = overrides.iter().copied().chain(buffer).collect();
        let cuts = check_ftl_with_power_cuts(ftl_name, &all);
        eprintln!("{ftl_name} {all:?}: {cuts} power cuts");
        assert!(cuts >= 1000, "{ftl_name} {all:?}: {cuts} power cuts");
    }
}

#[test]
fn page_power_cuts() {
    check_oob_recovery("page", &[]);
}

#[test]
fn page_power_cuts_heap_write_buffer() {
    let cuts = check_ftl_with_power_cuts("page", &[WRITE_BUFFER, "cache.policy=\"heap\"", "cache.alpha=0.5"]);
    assert!(cuts >= 1000, "{cuts} power cuts");
}

#[test]
fn page_power_cuts_blocking_gc_and_placed_reads() {
    check_oob_recovery("page", &["gc.mode=\"blocking\"", "host.unwritten_reads=\"place\""]);
}

/// FIFO's and random victims can hold more live pages than greedy's: after
/// a cut that left a plane no free block, GC must still pick one that fits
/// in the rest of its open block (a bug until 2026-11-30: "GC of block N
/// found no free page in its plane").
#[test]
fn page_power_cuts_fifo_and_random_victims() {
    for policy in ["fifo", "random"] {
        let all = [format!("gc.policy={policy}"), "host.unwritten_reads=\"place\"".to_string()];
        // Thrice the usual cases: at the usual number, one run in three missed the bug.
        let cuts = check_cases("page", &all.each_ref().map(String::as_str), 3 * 96, true);
        assert!(cuts >= 1000, "{policy}: {cuts} power cuts");
    }
}

/// Drawn by the page family's grid with `FTLSIM_CONFIG_GRID_GEOMETRY=1`
/// (session 47; minimized from 169 commands and 18 options): on a die
/// (the array unit) of four planes, a background GC run kept for host
/// reads to go before was booked after a program; a host read
/// took it back and booked it again, its first copy's read in the idle
/// gap before that program and its program after it; a second read took
/// it back from the first copy on and freed the other program's time
/// too (a debug assertion; in a release build the die could be booked
/// twice at once). Taking back now frees each copy's own time.
#[test]
fn reads_cut_twice_into_a_gc_run_booked_around_a_program() {
    replay(
        "page",
        &[
            "geometry.planes_per_die=4",
            "geometry.channels=2",
            "geometry.page_size=4096",
            "cache.bytes=65536",
            "gc.policy=cost-benefit",
            "nand.record_sequence=false",
        ],
        true,
        &[
            W(3059, 2, 13127767829307542305),
            W(5848, 3, 5199055112025790016),
            W(261, 2, 7927079709654556788),
            W(2509, 5, 5060520054954047308),
            W(7, 6, 11640783697079313729),
            W(55, 8, 5516233777790979672),
            W(1961, 8, 2220631161750317585),
            R(27, 2),
            W(53, 4, 7677709237551006814),
            T(3770, 5),
            W(4912, 15, 1419460114661714223),
            W(5378, 3, 5869397993192816946),
            W(5, 10, 13812467537491132910),
            W(3961, 10, 8111172100660944636),
            T(3, 5),
            W(68, 7, 16171565250075613027),
            W(2890, 39, 17596413558506889188),
            W(95, 20, 10138601158078138764),
        ],
    );
}

/// Drawn by `page_power_cuts_fifo_and_random_victims` in CI (session 46;
/// minimized from 110 commands): GC copied a victim as full as the room
/// it had (its plane's last free block) when a cut tore a copy, which took
/// a page and left its source live; the victim no longer fit, no other
/// plane had two free blocks, and GC found no free page for its rest. It
/// now takes a page in the open block of a plane that keeps one free.
#[test]
fn fifo_victims_keep_room_for_gc_through_power_cuts() {
    replay(
        "page",
        &["gc.policy=fifo", "host.unwritten_reads=\"place\""],
        true,
        &[
            F,
            W(184, 3, 0),
            R(0, 1),
            R(0, 1),
            R(0, 1),
            R(0, 1),
            R(0, 1),
            P(0),
            W(14, 1, 0),
            W(2, 3, 0),
            R(0, 1),
            W(95, 2, 0),
            R(0, 1),
            R(0, 1),
            R(0, 1),
            W(22, 1, 0),
            F,
            R(0, 1),
            W(0, 1, 0),
            W(126, 3, 0),
            W(362, 1, 349385804583129),
            T(8, 3),
            W(275, 1, 5535082900116039016),
            W(7, 3, 488629152724149050),
            W(14, 2, 6951593853632268005),
            P(0),
            W(8, 7, 11415492757781874199),
            W(240, 1, 13020321751129424019),
            W(94, 7, 6138969516954256543),
            R(20, 1),
            W(217, 2, 14688689961390392354),
            W(180, 4, 16957626558716293319),
            W(212, 4, 17724415696156853176),
            W(10, 1, 15281724558921090492),
            W(3, 2, 12455555109222162169),
            R(22, 4),
            W(3, 1, 17613907820497594131),
            W(6, 2, 1655937924431021622),
            W(173, 3, 16010813519968654805),
            W(4, 1, 6438107553356873347),
            P(3),
            T(121, 5),
            W(346, 10, 11463415962319803826),
            W(5, 2, 13721703822560740669),
            W(8, 1, 9547052594420312209),
            W(368, 4, 17795236310352878960),
            W(17, 2, 17172542732826083013),
            W(10, 4, 16478246837455431312),
            W(363, 7, 3401786577497947112),
            W(1, 3, 17984226918815896336),
            W(142, 9, 12147261032273066975),
            W(271, 2, 2560391816664818989),
            W(7, 2, 2969287166424612812),
            T(12, 4),
            R(324, 1),
            R(332, 1),
            W(15, 1, 4529791444498564856),
            P(2),
        ],
    );
}

/// After the last cut of this drawing, plane 0 had no free block, no
/// partly written one, and a live page in each of its blocks: GC there
/// (for the reads placed after the cut) had nowhere in the plane to copy
/// its victim's one live page, and now copies it to another plane (a bug
/// until 2026-11-30: "GC of block 1 found no free page in its plane",
/// drawn by `page_power_cuts_fifo_and_random_victims` in one CI run of a
/// few). Fails before the fix.
#[test]
fn regression_power_cut_leaving_a_plane_no_room() {
    let cfg = config("page", &["gc.policy=random", "host.unwritten_reads=\"place\""]);
    let cuts = run_case_counting(&cfg, &Case { precondition: None, cmds: plane_without_room() }).unwrap();
    assert_eq!(cuts, 14);
}

#[rustfmt::skip]
fn plane_without_room() -> Vec<Cmd> {
    vec![
        R(12, 1), R(66, 1), P(0), T(259, 9), W(2, 1, 0), R(0, 1), R(0, 1), R(0, 1), R(0, 1), F, W(63, 2, 0),
        W(84, 1, 0), T(269, 3), W(21, 4, 0), W(12, 1, 0), W(168, 3, 0), W(2, 1, 0), R(0, 1), W(9, 4, 0), P(0),
        R(0, 1), R(0, 1), W(328, 1, 0), R(0, 1), R(0, 1), R(0, 1), R(0, 1), W(151, 2, 0), P(0), W(119, 4, 0),
        W(183, 6, 0), W(122, 1, 0), W(102, 3, 0), R(0, 1), W(268, 1, 0), W(190, 3, 0), W(129, 2, 0), W(228, 1, 0),
        R(0, 1), R(0, 1), T(9, 3), W(4, 3, 0), W(194, 3, 0), R(0, 1), R(0, 1), W(14, 3, 0), T(203, 3), W(12, 1, 0),
        W(272, 1, 0), W(182, 1, 0), W(16, 1, 0), W(22, 3, 0), P(0), F, W(298, 1, 0), R(0, 1), T(21, 3), R(0, 1),
        W(166, 1, 0), W(19, 2, 0), R(0, 1), T(309, 3), W(0, 3, 0), R(0, 1), F, R(0, 1), W(16, 1, 0), W(14, 7, 0),
        W(12, 1, 0), W(13, 2, 0), W(6, 1, 0), R(0, 1), R(0, 1), T(0, 1), T(165, 7), W(44, 1, 0), R(0, 1), F, F,
        R(0, 1), W(159, 2, 0), W(16, 1, 0), R(0, 1), W(23, 2, 0), W(3, 2, 0), R(0, 1), R(0, 1), R(0, 1),
        W(290, 1, 0), W(370, 3, 0), R(166, 1), W(46, 1, 0), W(346, 7, 0), W(328, 1, 0), W(180, 1, 0), T(0, 2),
        R(14, 9), P(2), W(237, 1, 16315187008179924845), W(93, 2, 6167882222211581239), R(293, 1), R(214, 2), P(0),
        P(3), R(193, 2), W(13, 3, 367129477483639810), W(122, 1, 565218130259389899), P(3),
        W(80, 2, 15670321969711539814), W(248, 2, 2356276777192345681), P(3), F, W(100, 3, 11926256433331173405),
        R(17, 1), T(8, 3), W(8, 4, 5426001895015219828), W(11, 1, 1028642314093911468),
        W(12, 2, 16391514487884371636), R(286, 2), R(9, 1), T(22, 9), W(14, 1, 9488500540925029402),
        W(17, 4, 749687797241140830), F, R(13, 1), R(68, 8), W(263, 4, 4537311121494589857), T(335, 4), P(0),
        T(313, 1), W(45, 4, 7792246358760213685), T(39, 1), W(22, 1, 10986456501641600354),
        W(204, 1, 4605225276884668672), W(244, 1, 1402324423611033731), W(8, 2, 18392486800963223819), R(321, 1),
        T(3, 3), W(23, 4, 185659780535712003), W(64, 1, 8571926126805214679), T(14, 1), R(3, 1),
        W(171, 1, 15437191362360772246), R(265, 3), W(1, 1, 13175749838872365250), W(96, 3, 9657882554631412179),
        P(0), W(322, 3, 12603447798561762841), R(315, 2), R(6, 3), W(23, 2, 15179418471482413795),
        W(374, 2, 12139730306939996127), T(329, 4), W(274, 2, 15765421473863757261), P(2), R(289, 2),
        W(225, 1, 10272250058159634744), W(9, 2, 4682695623988691189), P(1), W(260, 4, 10024652906591214285),
        W(13, 1, 254118246458570094), W(16, 1, 3569782907491162405), T(331, 2), W(18, 10, 16099894611042664988), F,
        R(357, 3), W(15, 2, 6366520954279740877), T(10, 4), W(23, 2, 10195866656808240053),
        W(212, 2, 5599381407331411243), W(285, 2, 10097614438185778362), W(23, 2, 10557920020025988211), R(1, 1),
        R(91, 8), R(5, 1), R(166, 2), W(372, 1, 2258446689733436629), R(101, 7), P(1),
    ]
}

#[test]
fn page_power_cuts_free_space_gc_reclaiming_empty_blocks() {
    check_oob_recovery("page", &PAPER_GC);
}

/// Multi-plane groups change when programs end, not what is written: reads
/// and what a power cut leaves are checked as without them (the tiny
/// drive's die has 2 planes).
#[test]
fn page_multi_plane() {
    check_ftl("page", &["timing.multi_plane=true"]);
}

/// Reads that suspend erases and GC copies move their ends (`engine/device/suspend.rs`).
const SUSPEND: &[&str] = &["timing.erase_suspend_us=30", "timing.program_suspend_us=20"];

#[test]
fn page_erase_suspend() {
    check_ftl("page", SUSPEND);
}

#[test]
fn page_power_cuts_erase_suspend() {
    check_oob_recovery("page", SUSPEND);
}

#[test]
fn page_power_cuts_multi_plane() {
    check_oob_recovery("page", &["timing.multi_plane=true"]);
}

#[test]
fn page_power_cuts_separate_gc_frontier() {
    check_oob_recovery("page", &["gc.frontier=\"separate\""]);
}

#[test]
fn dftl_power_cuts() {
    check_oob_recovery("dftl", &[TINY_CACHE]);
}

#[test]
fn hat_power_cuts() {
    check_oob_recovery("hat", &[TINY_CACHE]);
}

#[test]
fn dac_power_cuts() {
    check_oob_recovery("dac", &["ftl.dac_regions=2"]);
}

/// Recovery of a plane whose last free block GC held at the cut: GC runs
/// before host pages take the room it needs.
#[test]
fn dac_power_cut_while_gc_held_the_last_free_block() {
    let cfg = config("dac", &["ftl.dac_regions=2"]);
    let cmds = include!("drives/dac_power_cut_case.rs");
    run_case(&cfg, &Case { precondition: Some(PreconditionMode::Fast), cmds }).unwrap();
}

#[test]
fn superblock_power_cuts() {
    check_oob_recovery("superblock", &["ftl.superblock_blocks=8", "ftl.gc_until_free=4"]);
}

/// Small superblocks at their limit collect within themselves all the
/// time: cuts land in that GC, leaving a superblock over its limit.
#[test]
fn superblock_power_cuts_small_groups() {
    let small = ["ftl.superblock_blocks=4", "ftl.superblock_extra_blocks=1", "geometry.blocks_per_plane=32"];
    check_oob_recovery("superblock", &[&small[..], &["ftl.gc_until_free=3"]].concat());
}

#[test]
fn block_power_cuts() {
    check_oob_recovery("block", &["geometry.channels=2", "ftl.striping=page"]);
}

#[test]
fn bast_power_cuts() {
    check_oob_recovery("bast", &["geometry.channels=2", "ftl.striping=block", "ftl.log_blocks=2"]);
}

#[test]
fn fast_power_cuts() {
    check_oob_recovery("fast", &["geometry.channels=2", "ftl.striping=page"]);
}

#[test]
fn fast_power_cuts_trimming_at_once_and_placing_reads() {
    check_oob_recovery("fast", &["ftl.trim_mode=immediate", "host.unwritten_reads=place"]);
}

/// μ-FTL rebuilds its μ-Tree from the OOB scan; the small caches keep tree
/// write-backs, bitmap flushes and GC of tree blocks going, so cuts land
/// among them.
#[test]
fn mu_power_cuts() {
    check_oob_recovery("mu", &[&mu_ram(16, 2, 1024), "ftl.mu_bitmap_cache_bytes=16", "ftl.gc_until_free=5"]);
}

/// Four partitions (four update blocks a cut may leave part-written), no
/// bitmap cache, placed reads and cost-benefit victims.
fn mu_four_partitions_placing_reads() -> [String; 6] {
    [
        mu_ram(0, 3, 1024),
        "ftl.mu_bitmap_cache_bytes=0".into(),
        "ftl.partition_bytes=49152".into(),
        "ftl.gc_until_free=3".into(),
        "host.unwritten_reads=place".into(),
        "gc.policy=cost-benefit".into(),
    ]
}

#[test]
fn mu_power_cuts_four_partitions_placing_reads() {
    check_oob_recovery("mu", &mu_four_partitions_placing_reads().each_ref().map(String::as_str));
}

/// A shrunk failure of the test above (about one case in 100,000): GC
/// erased a wholly invalid block, whose bitmap entries left the tree and
/// freed a node, after releasing the tree's dead pages and before choosing
/// the tree block holding the newly dead page as its victim.
#[test]
fn mu_power_cut_then_tree_gc() {
    replay(
        "mu",
        &mu_four_partitions_placing_reads().each_ref().map(String::as_str),
        true,
        &[
            W(3, 4, 0),
            R(0, 1),
            P(0),
            W(6, 1, 0),
            W(212, 5, 0),
            W(2, 1, 0),
            W(10, 3, 0),
            W(298, 1, 0),
            W(4, 3, 0),
            T(34, 10),
            W(7, 2, 0),
            W(10, 3, 0),
            W(8, 3, 0),
            F,
            W(0, 3, 0),
            W(5, 2, 0),
            W(0, 1, 0),
        ],
    );
}

/// DFTL with FIFO victims on the tiny drive, then a power cut: recovery
/// queues the translation pages it found stale for rewriting at the next
/// translations, and each rewrite's page may make blocking GC collect FIFO
/// victims that free nothing (all live) while their moves dirty
/// translation pages again. Rewriting a page once per victim without a
/// bound on the queue let it grow with every victim until a block wore
/// out (a CI failure of
/// `random_combinations_of_the_page_familys_options_with_power_cuts`,
/// seed 16099990068662798832, here up to the cut); past the bound a page
/// already queued takes later victims' updates along.
/// Random victims on a one-plane drive nearly full of live data: GC's own
/// copies fill blocks, and random picks of (nearly) full blocks spent the
/// per-call budget with the plane at its last free block while others held
/// stale pages; the FLUSH's destage was refused "device full" (found by
/// `random_combinations_of_the_page_familys_options_with_power_cuts`, seed
/// 8095945761464082912 with `FTLSIM_CONFIG_GRID_GEOMETRY=1`). Past the
/// budget, greedy picks until the host has a page.
#[test]
fn random_victims_spend_their_budget_then_greedy_frees_a_page() {
    replay(
        "page",
        &[
            "geometry.planes_per_die=1",
            "geometry.dies_per_chip=1",
            "geometry.page_size=2048",
            "cache.bytes=65536",
            "cache.policy=\"fifo\"",
            "gc.mode=\"preemptible\"",
            "ftl.allocation=\"static\"",
            "gc.frontier=\"separate\"",
            "gc.debt=\"ahead\"",
            "gc.policy=random",
            "trim.partial=\"ignore\"",
            "ftl.trim=true",
            "timing.multi_plane=false",
        ],
        true,
        &[
            W(42, 5, 3324406193306571541),
            P(3),
            W(26, 1, 133637997448663391),
            P(0),
            W(10, 3, 5586223922010195858),
            R(169, 1),
            R(37, 17),
            W(314, 8, 8063481408163411632),
            P(0),
            W(306, 3, 6468121879568283863),
            W(39, 20, 5583634945874416801),
            F,
        ],
    );
}

/// The same with DFTL and blocking GC (the same seed's other failing
/// combination): random picks of full blocks while two closed blocks held
/// no valid page, and a host write refused.
#[test]
fn random_victims_with_blocking_dftl_leave_the_host_a_page() {
    replay(
        "dftl",
        &[
            "geometry.planes_per_die=1",
            "geometry.dies_per_chip=1",
            "geometry.page_size=8192",
            "cache.bytes=0",
            "gc.mode=\"blocking\"",
            "ftl.allocation=\"static\"",
            "gc.policy=random",
            "trim.partial=\"zero\"",
            "ftl.trim=true",
            "timing.multi_plane=true",
            "ftl.cache_bytes=8",
        ],
        true,
        &[
            T(155, 18),
            P(0),
            T(811, 26),
            W(95, 26, 16090532634518722346),
            F,
            W(42, 32, 15956063878384273683),
            W(922, 9, 14948872622601218261),
            T(92, 28),
            W(1169, 29, 14146535390350083977),
            W(414, 27, 11207553925326714907),
            W(770, 27, 2605221479133059271),
            W(80, 1, 4753575791555560365),
            W(109, 5, 12491302509105980633),
            P(3),
            W(28, 14, 4076702513131592750),
            W(957, 2, 2595044851763485720),
            T(185, 66),
            W(100, 19, 11630148791332737410),
            W(2, 7, 2752948041581409786),
            W(986, 6, 12981495167771838311),
            W(89, 29, 6062746212863166465),
            W(138, 5, 414034869140676383),
            P(3),
            W(743, 14, 9252343710626744876),
            W(51, 4, 14211644964170084388),
            P(3),
            W(11, 13, 9146392213257902632),
            T(28, 6),
            T(383, 1),
            T(129, 8),
            T(83, 1),
            T(116, 10),
            W(66, 2, 12066083827340985038),
            W(851, 15, 1080725876628615870),
            P(3),
            W(166, 8, 8271127654691284785),
            T(1092, 1),
            T(415, 2),
            W(162, 5, 16256104153829142497),
            W(936, 5, 15263534718032182694),
            F,
            P(2),
            W(421, 14, 8223454091179067770),
        ],
    );
}

#[test]
fn dftl_fifo_rewrites_after_a_power_cut_stay_bounded() {
    replay(
        "page",
        &[
            "ftl.name=\"dftl\"",
            "geometry.page_size=2048",
            "ftl.map_unit_bytes=2048",
            "cache.bytes=0",
            "gc.mode=\"blocking\"",
            "ftl.allocation=\"static\"",
            "gc.policy=fifo",
            "trim.partial=\"ignore\"",
            "ftl.trim=true",
            "host.unwritten_reads=\"place\"",
            "timing.multi_plane=true",
        ],
        true,
        &[
            W(23, 7, 14027676531431483919),
            W(30, 1, 9060793701965882257),
            W(742, 4, 16081975754238807119),
            P(2),
            W(45, 1, 13921321988988866373),
            W(556, 3, 13740228215071135875),
            P(3),
            W(17, 3, 131508878039897177),
            W(46, 7, 15682255291947844881),
            F,
            T(43, 9),
            W(156, 1, 4960952536385422642),
            W(376, 2, 16431740739849983414),
            P(1),
            W(203, 4, 10730253424219827784),
            W(0, 3, 684539017950872301),
            W(38, 1, 4423595843388182498),
            W(37, 7, 10946512196888147554),
            P(2),
            W(36, 16, 9324119533103371608),
            W(193, 2, 16158264550627218377),
            W(343, 6, 9054573717087728502),
            W(707, 7, 3092424309521622427),
            W(35, 1, 5511940172260530121),
            W(42, 3, 313025893142665427),
            P(3),
            W(4, 2, 11306512274034601852),
            W(44, 12, 10248806499944809421),
            W(44, 2, 12769640420008934798),
            W(13, 3, 7519520035612328301),
            W(319, 3, 13009780390782326620),
            W(631, 7, 885306081822471740),
            W(13, 3, 3947261677756177327),
            W(21, 8, 13016111865836554733),
            F,
            W(37, 4, 14313707193158950486),
            W(43, 1, 10027878917130008239),
            R(44, 13),
            T(13, 1),
            R(2, 5),
            T(698, 4),
            W(29, 4, 16897070226417476326),
            R(24, 7),
            W(611, 4, 2120720744179583227),
            W(7, 1, 4010481996479148293),
            P(2),
            T(112, 14),
            R(10, 4),
            W(546, 4, 2025835245721290777),
            R(197, 6),
            R(39, 2),
            R(20, 4),
            T(142, 1),
            T(630, 6),
            T(749, 3),
            W(10, 4, 11198686168831539789),
            W(27, 5, 10080674503886445714),
            P(0),
            R(7, 2),
            W(9, 3, 12840100245675956453),
            P(0),
            W(6, 3, 15437077852520520332),
            W(186, 4, 16185142856330421918),
            W(27, 3, 8962718742942838260),
            W(18, 1, 10339671338033916529),
            F,
            R(496, 12),
            W(13, 9, 12344840408464302128),
            R(77, 2),
            R(575, 2),
            P(1),
            T(28, 6),
            W(748, 4, 3164556502811489145),
            P(1),
            P(3),
            W(231, 5, 16666663105946926270),
            P(3),
            T(83, 1),
            P(2),
            T(460, 2),
            W(3, 4, 15413575483684014621),
            R(137, 5),
            R(47, 7),
            W(16, 1, 323135497491160347),
            F,
            W(8, 8, 3274149542842407480),
            W(47, 4, 13901995473051474808),
            T(21, 2),
            W(30, 4, 18315838592941825646),
            R(18, 8),
            F,
            F,
            R(22, 2),
            T(44, 2),
            W(0, 4, 2072242377754963397),
            W(27, 20, 4502630830301058076),
            P(1),
        ],
    );
}

#[test]
fn mu_power_cuts_sector_pages_without_trim() {
    on_mu_sector_pages_without_trim(check_oob_recovery);
}

// Host-side TRIM batching (multi-range commands) and `trim.partial = "zero"`.

#[test]
fn page_batched_trims() {
    check_ftl_batched("page", &[]);
}

#[test]
fn page_batched_trims_with_write_buffer_and_zeroed_partial_pages() {
    check_ftl_batched("page", &["cache.bytes=8192", "trim.partial=\"zero\""]);
}

#[test]
fn dftl_batched_trims() {
    check_ftl_batched("dftl", &[TINY_CACHE]);
}

#[test]
fn hat_batched_trims() {
    check_ftl_batched("hat", &[TINY_CACHE]);
}

#[test]
fn fast_batched_trims() {
    check_ftl_batched("fast", &["geometry.channels=2"]);
}

#[test]
fn mu_batched_trims() {
    check_ftl_batched("mu", &[&mu_ram(16, 2, 1024), "ftl.mu_bitmap_cache_bytes=16"]);
}

#[test]
fn page_zeroed_partial_pages() {
    check_ftl("page", &["trim.partial=\"zero\""]);
}

#[test]
fn fast_zeroed_partial_pages_non_queued() {
    check_ftl("fast", &["trim.partial=\"zero\"", "host.trim_queued=false"]);
}

#[test]
fn dftl_zeroed_partial_pages() {
    check_ftl("dftl", &[TINY_CACHE, "trim.partial=\"zero\""]);
}

/// Combinations of FTL options drawn at random, each run through the
/// conformance check (24 cases; with `cuts`, power cuts among them):
/// `FTLSIM_CONFIG_GRID_N` combinations (default 40; one the config or the
/// FTL refuses, or that refuses power cuts, is drawn again), from a seed
/// drawn at every run, or `FTLSIM_CONFIG_GRID_SEED` to replay one (with
/// `FTLSIM_CONFIG_GRID_GEOMETRY` as it was). Bugs hide in combinations no named test has: sub-page units of
/// several sectors behind the write buffer lost data (fixed 2026-11-29);
/// the page family's drawings find that bug, reverted, in 300 drawings of
/// seed 7 (9 fail).
fn random_combinations(options: &[(&str, &[&str])], cuts: bool) {
    let env =
        |k: &str| std::env::var(k).ok().map(|v| v.parse::<u64>().unwrap_or_else(|_| panic!("{k}={v:?}: not a number")));
    let wanted = env("FTLSIM_CONFIG_GRID_N").unwrap_or(40);
    let seed = env("FTLSIM_CONFIG_GRID_SEED").unwrap_or_else(|| {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new().build_hasher().finish()
    });
    let shapes = std::env::var_os("FTLSIM_CONFIG_GRID_GEOMETRY").is_some_and(|v| v == "1");
    let options: Vec<(&str, &[&str])> = GEOMETRY_OPTIONS
        .iter()
        .filter(|(k, _)| shapes && !options.iter().any(|(o, _)| o == k))
        .chain(options)
        .copied()
        .collect();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut below = |n: usize| {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    };
    let (mut ran, mut drawn_all, mut failed) = (0, 0, Vec::new());
    while ran < wanted && drawn_all < 20 * wanted {
        drawn_all += 1;
        let drawn: Vec<String> = options
            .iter()
            .map(|(k, vs)| (k, vs[below(vs.len())]))
            .filter(|(_, v)| *v != "-")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let Ok(cfg) = Config::from_toml_str(BASE, "conformance", &drawn) else { continue };
        if Simulation::new(cfg.clone()).is_err() {
            continue;
        }
        // A drive that refuses power cuts (sub-page units, no program
        // sequences) says so at the first.
        let cut = Case { precondition: None, cmds: vec![W(0, 1, 1), P(0)] };
        if cuts && run_case(&cfg, &cut).is_err_and(|e| e.contains(": config: ")) {
            continue;
        }
        ran += 1;
        let overrides: Vec<&str> = drawn.iter().map(String::as_str).collect();
        // `config` puts "page" first; the drawn `ftl.name` overrides it.
        if std::panic::catch_unwind(|| check_cases("page", &overrides, 24, cuts)).is_err() {
            failed.push(drawn);
        }
    }
    eprintln!("{ran} combinations run of {drawn_all} drawn (seed {seed})");
    let geometry = if shapes { ", with FTLSIM_CONFIG_GRID_GEOMETRY=1" } else { "" };
    assert!(failed.is_empty(), "seed {seed} (FTLSIM_CONFIG_GRID_SEED{geometry}): {} failed: {failed:#?}", failed.len());
    assert_eq!(ran, wanted, "seed {seed}: {drawn_all} drawings held only {ran} runnable combinations");
}

/// The drive's shape, drawn too with `FTLSIM_CONFIG_GRID_GEOMETRY=1` (for
/// longer hunts: a run takes about twice as long) where a family does not
/// draw it already: the tiny drive has one die of two planes, so a die's
/// multi-plane stripe never spans four planes without it.
const GEOMETRY_OPTIONS: [(&str, &[&str]); 3] = [
    ("geometry.planes_per_die", &["1", "2", "4"]),
    ("geometry.channels", &["1", "2"]),
    ("geometry.dies_per_chip", &["1", "2"]),
];

#[test]
fn random_combinations_of_the_page_familys_options() {
    random_combinations(&PAGE_FAMILY_OPTIONS, false);
}

#[test]
fn random_combinations_of_the_page_familys_options_with_power_cuts() {
    random_combinations(&PAGE_FAMILY_OPTIONS, true);
}

const PAGE_FAMILY_OPTIONS: [(&str, &[&str]); 18] = [
    ("ftl.name", &["\"page\"", "\"page\"", "\"page\"", "\"dftl\"", "\"hat\"", "\"dac\""]),
    ("geometry.page_size", &["1024", "2048", "4096", "8192"]),
    ("ftl.map_unit_bytes", &["-", "-", "512", "1024", "2048", "4096"]),
    ("cache.bytes", &["0", "0", "4096", "16384", "65536"]),
    ("cache.policy", &["\"lru\"", "\"fifo\"", "\"heap\""]),
    ("gc.mode", &["\"preemptible\"", "\"blocking\""]),
    ("ftl.allocation", &["\"dynamic\"", "\"static\""]),
    ("gc.frontier", &["\"shared\"", "\"separate\""]),
    ("gc.debt", &["\"background\"", "\"ahead\""]),
    ("gc.policy", &["greedy", "cost-benefit", "fifo", "random", "d-choices"]),
    ("trim.partial", &["\"ignore\"", "\"zero\""]),
    ("ftl.trim", &["true", "true", "false"]),
    ("host.unwritten_reads", &["\"zero\"", "\"place\""]),
    ("timing.multi_plane", &["false", "true"]),
    ("timing.erase_suspend_us", &["-", "-", "30", "300"]),
    ("timing.program_suspend_us", &["-", "-", "20"]),
    ("ftl.cache_bytes", &["-", "8", "64"]),
    // Without sequence numbers no power cut is modelled, and background GC
    // books owed copies as runs reads cut into (`engine/device/preempt.rs`).
    ("nand.record_sequence", &["-", "-", "false"]),
];

/// The hybrids, μ-FTL and superblock, with their own options.
#[test]
fn random_combinations_of_the_block_mapped_ftls_options() {
    random_combinations(&BLOCK_MAPPED_OPTIONS, false);
}

#[test]
fn random_combinations_of_the_block_mapped_ftls_options_with_power_cuts() {
    random_combinations(&BLOCK_MAPPED_OPTIONS, true);
}

const BLOCK_MAPPED_OPTIONS: [(&str, &[&str]); 21] = [
    ("ftl.name", &["\"block\"", "\"bast\"", "\"fast\"", "\"mu\"", "\"superblock\""]),
    ("geometry.channels", &["1", "2"]),
    ("geometry.page_size", &["512", "1024", "2048"]),
    ("ftl.striping", &["-", "page", "block"]),
    ("ftl.trim_mode", &["-", "immediate", "list"]),
    ("ftl.trim_list_groups", &["-", "3", "5"]),
    ("ftl.log_blocks", &["-", "2", "4"]),
    ("ftl.seq_log_blocks", &["-", "0", "1"]),
    ("ftl.rand_log_blocks", &["-", "2", "3"]),
    ("ftl.mu_ram_bytes", &["-", "2096", "4144"]),
    ("ftl.mu_bitmap_cache_bytes", &["-", "16"]),
    ("ftl.mu_write_cache_pages", &["-", "2", "8"]),
    ("ftl.gc_until_free", &["-", "4", "5"]),
    ("ftl.superblock_blocks", &["-", "8", "12"]),
    ("timing.erase_suspend_us", &["-", "-", "30", "300"]),
    ("timing.program_suspend_us", &["-", "-", "20"]),
    ("cache.bytes", &["0", "0", "4096", "8192"]),
    ("cache.policy", &["\"lru\"", "\"fifo\"", "\"heap\""]),
    ("trim.partial", &["\"ignore\"", "\"zero\""]),
    ("ftl.trim", &["true", "true", "false"]),
    ("host.unwritten_reads", &["\"zero\"", "\"place\""]),
];

/// COFTL on its conformance drive (`COFTL`), with its own options.
#[test]
fn random_combinations_of_coftls_options() {
    random_combinations(&COFTL_OPTIONS, false);
}

#[test]
fn random_combinations_of_coftls_options_with_power_cuts() {
    random_combinations(&COFTL_OPTIONS, true);
}

const COFTL_OPTIONS: [(&str, &[&str]); 19] = [
    ("ftl.name", &["\"coftl\""]),
    ("geometry.pages_per_block", &["16"]),
    ("geometry.blocks_per_plane", &["32"]),
    ("overprovisioning", &["0.6"]),
    ("geometry.channels", &["1", "2"]),
    ("ftl.coftl_set_blocks", &["1", "2"]),
    ("ftl.coftl_replacements", &["-", "1", "2"]),
    ("ftl.cache_bytes", &["112", "1024"]),
    ("ftl.coftl_cache_bytes", &["0", "8192"]),
    ("ftl.coftl_alpha", &["-", "0.5"]),
    ("ftl.coftl_log_free_sets", &["-", "3"]),
    ("ftl.coftl_wl_erases", &["-", "7"]),
    ("timing.erase_suspend_us", &["-", "-", "30", "300"]),
    ("timing.program_suspend_us", &["-", "-", "20"]),
    ("cache.bytes", &["0", "0", "4096"]),
    ("cache.policy", &["\"lru\"", "\"fifo\"", "\"heap\""]),
    ("trim.partial", &["\"ignore\"", "\"zero\""]),
    ("ftl.trim", &["true", "true", "false"]),
    ("host.unwritten_reads", &["\"zero\"", "\"place\""]),
];

/// A partial-page TRIM with `trim.partial = "zero"` zeroes the page's
/// trimmed sectors only if the page holds data; a page held only in
/// COFTL's data cache counted as holding none, so its trimmed sector read
/// back its old bytes (found by the random combinations).
#[test]
fn coftl_data_cache_zeroes_partially_trimmed_pages() {
    let o = coftl(&[COFTL_TINY_VPT_CACHE, COFTL_DATA_CACHE, "trim.partial=\"zero\""]);
    replay("coftl", &o, false, &[W(1, 2, 0), T(1, 1), R(1, 2)]);
    check_ftl("coftl", &o);
}

/// Drawn by the random grid (`random_combinations_of_the_page_familys_options_with_power_cuts`):
/// `page` with GC's own frontier, preemptible GC and power cuts. A host
/// write that waited for GC only until it could take a block left a job
/// mid-victim, and at command 187 GC found no free page for its copies
/// ("GC of block 25 found no free page in its plane").
#[test]
fn a_gc_frontier_of_its_own_keeps_room_for_gc_through_power_cuts() {
    let overrides = [
        "geometry.page_size=2048",
        "cache.bytes=0",
        "cache.policy=\"lru\"",
        "gc.mode=\"preemptible\"",
        "ftl.allocation=\"dynamic\"",
        "gc.frontier=\"separate\"",
        "gc.debt=\"background\"",
        "gc.policy=random",
        "trim.partial=\"zero\"",
        "ftl.trim=true",
        "host.unwritten_reads=\"place\"",
        "timing.multi_plane=true",
        "ftl.cache_bytes=64",
    ];
    let cfg = config("page", &overrides);
    let case = Case {
        precondition: Some(PreconditionMode::Fast),
        cmds: vec![
            W(438, 3, 16859651189834734071),
            W(41, 15, 14066166366288077068),
            R(83, 13),
            W(40, 1, 16856708106264811906),
            W(135, 5, 16950428870333613434),
            W(65, 4, 2213866778125714795),
            W(7, 4, 7093628221443906494),
            W(18, 17, 165497678335139235),
            W(40, 2, 12200255248740666462),
            R(728, 8),
            P(2),
            R(38, 3),
            W(369, 6, 3143183675249306164),
            F,
            W(185, 1, 4759652195571095646),
            R(359, 7),
            T(21, 1),
            W(346, 1, 8230683466005770956),
            W(42, 2, 306070571762935311),
            W(13, 5, 2781845334993557656),
            W(39, 6, 11520101181547881507),
            W(25, 3, 3192785066231550306),
            W(172, 3, 14339989434310583180),
            F,
            W(299, 1, 12425624666923995505),
            R(357, 1),
            R(349, 3),
            W(357, 3, 4256466842571147798),
            W(45, 2, 4506298947033711202),
            P(1),
            W(30, 2, 4794771189720773868),
            T(14, 1),
            W(346, 4, 17273597024379002578),
            W(26, 4, 4236449419895338594),
            T(44, 4),
            W(35, 1, 556437468204114611),
            W(10, 8, 6982786650552741560),
            R(10, 4),
            W(749, 6, 15428324779014720593),
            W(689, 4, 13932226103348514953),
            R(159, 4),
            R(619, 4),
            R(534, 3),
            R(24, 7),
            W(338, 6, 13412955131175878358),
            R(166, 3),
            R(29, 7),
            R(13, 4),
            T(394, 1),
            R(91, 3),
            W(352, 3, 4850330580327155328),
            W(387, 13, 15407127877323076690),
            W(41, 2, 9466143789081818361),
            W(13, 2, 18040100136495985518),
            R(491, 4),
            F,
            P(3),
            T(46, 4),
            F,
            W(34, 6, 9747524347827620521),
            W(39, 6, 16438879713707495219),
            W(8, 7, 11956012142627031510),
            W(133, 3, 631993747225890148),
            W(510, 1, 4913639324818564533),
            R(467, 2),
            W(684, 1, 13725191182507364303),
            T(47, 6),
            T(35, 1),
            F,
            T(21, 3),
            W(45, 18, 11485607121588791207),
            W(88, 13, 10685423997591408871),
            F,
            R(555, 3),
            F,
            R(4, 1),
            W(21, 11, 15557125005377723377),
            W(521, 1, 3613764409405452562),
            R(544, 4),
            P(2),
            T(18, 5),
            W(386, 2, 2987683606537827232),
            R(750, 1),
            P(0),
            W(478, 3, 4491539158551345426),
            W(57, 8, 6307439573355976168),
            R(36, 3),
            T(30, 1),
            W(705, 8, 12004570887872031324),
            P(1),
            F,
            T(2, 4),
            R(150, 4),
            W(410, 8, 5944218481151044283),
            R(44, 4),
            W(532, 3, 8725528404144965573),
            W(88, 4, 2199081526867142252),
            R(13, 1),
            W(25, 1, 10862545604075725167),
            W(16, 7, 17256370735370757477),
            W(10, 3, 4056377258219398318),
            W(29, 14, 7297870455679022762),
            W(288, 1, 1278756596611790314),
            R(30, 6),
            T(40, 2),
            W(17, 7, 1276439645240764206),
            T(501, 1),
            R(523, 3),
            W(43, 8, 14687581385788414520),
            W(542, 2, 15689328135042172082),
            R(661, 4),
            P(2),
            R(666, 6),
            F,
            W(27, 4, 17512964815071227500),
            W(2, 5, 7998195282044973594),
            W(2, 5, 9915896046830819410),
            F,
            W(29, 8, 9319628793699792067),
            W(676, 4, 1951834470775351287),
            W(251, 2, 4818155752929533440),
            P(3),
            W(45, 4, 6653170594686431852),
            W(9, 2, 13302801763448526016),
            T(742, 4),
            W(25, 1, 16900831609947929084),
            W(13, 4, 7130517604977793124),
            R(167, 8),
            P(1),
            W(511, 3, 13674029200246849210),
            R(37, 2),
            W(24, 4, 8388581288147561570),
            W(399, 13, 15505671466350788446),
            R(737, 5),
            W(466, 3, 1472356517222522160),
            W(36, 8, 14362258850984687882),
            W(122, 1, 810635797031376956),
            T(659, 5),
            R(2, 3),
            F,
            W(1, 20, 14311921151094197720),
            T(34, 3),
            W(434, 1, 14893697814781238118),
            R(423, 3),
            R(35, 3),
            P(0),
            T(7, 3),
            W(45, 6, 9389117584836796152),
            W(17, 3, 3832863382363788526),
            F,
            T(29, 3),
            W(199, 8, 10244748406492345137),
            R(701, 3),
            W(571, 4, 8877152303348375482),
            F,
            R(723, 5),
            R(4, 1),
            T(25, 4),
            P(0),
            R(527, 7),
            R(589, 2),
            W(27, 3, 16635582564733642993),
            R(335, 1),
            T(331, 14),
            R(33, 1),
            W(25, 8, 5130170006696114157),
            F,
            W(728, 3, 8949929066097154565),
            W(505, 19, 16034936985256993802),
            P(2),
            R(499, 3),
            R(662, 5),
            R(9, 3),
            T(127, 1),
            F,
            R(253, 3),
            R(0, 2),
            P(3),
            T(156, 11),
            R(524, 1),
            W(27, 4, 1325387039000968394),
            P(3),
            W(29, 4, 4930709604398996003),
            T(32, 3),
            W(30, 2, 5025318116033433053),
            R(565, 4),
            W(429, 5, 10932806117449607474),
            W(560, 18, 7021317272085329117),
            W(77, 10, 13171715698472426180),
            T(306, 3),
            R(41, 1),
            F,
            W(38, 4, 470771155351669345),
            W(7, 3, 5146978281379174475),
            R(130, 7),
            W(10, 1, 8359333943042323842),
            W(22, 3, 5487585288063438371),
            W(587, 7, 4395150219331621736),
            W(12, 1, 10769338979861481857),
            W(77, 5, 13942633397978506630),
            R(251, 14),
            W(617, 3, 13136216838385822965),
            R(708, 2),
            W(102, 4, 469575506811569461),
            R(351, 1),
            F,
            P(2),
            T(441, 2),
            R(656, 6),
            F,
            R(11, 2),
            W(613, 4, 15246986380289436204),
            W(570, 16, 8825390337790443792),
            R(42, 4),
            P(3),
            T(269, 6),
            W(24, 4, 17505414272137546395),
            T(514, 5),
            P(3),
            R(435, 1),
            R(248, 1),
            R(134, 3),
            W(4, 8, 12292477982591045907),
            T(2, 3),
            T(110, 8),
            R(42, 2),
            W(35, 2, 16893242774031133607),
            R(29, 4),
            F,
            R(4, 5),
            P(0),
            F,
            P(1),
            P(0),
            T(47, 2),
            P(0),
            F,
            W(300, 2, 13608793352480413557),
            R(39, 3),
            P(3),
            P(1),
            W(34, 1, 6203240907583515995),
            R(33, 3),
            F,
            R(7, 4),
            W(37, 19, 15996668445195758334),
            R(233, 3),
            R(404, 2),
            W(50, 6, 17570310422262309406),
            W(349, 8, 18086545035373888581),
            T(94, 8),
            W(662, 3, 6277697889902329925),
            W(0, 1, 13136796795284463975),
            R(121, 3),
            R(243, 1),
            R(325, 2),
            W(46, 3, 3853112975714676936),
            T(10, 8),
            R(39, 1),
        ]
        .to_vec(),
    };
    run_case(&cfg, &case).unwrap();
}

/// Drawn by the random grid (session 45, `FTLSIM_CONFIG_GRID_N=300`):
/// `page` with preemptible background GC, multi-plane programs and power
/// cuts (minimized from 366 commands). A power cut lost a GC job half
/// through a victim on a plane with no free block left; the other plane's
/// multi-plane GC then filled that plane's GC block with its own copies,
/// and GC found no free page there for the victim's last live pages.
#[test]
fn gc_keeps_room_for_its_copies_with_multi_plane_programs_and_power_cuts() {
    // The grid drew 14 options; these four are the ones the bug needs.
    let overrides = ["geometry.page_size=2048", "gc.policy=random", "trim.partial=\"zero\"", "timing.multi_plane=true"];
    replay(
        "page",
        &overrides,
        true,
        &[
            W(103, 2, 3179916746780559608),
            W(180, 4, 17468822893183702111),
            R(40, 6),
            R(4, 2),
            W(645, 4, 2029629126719519205),
            R(46, 7),
            W(30, 5, 5745343581371700693),
            T(32, 3),
            W(10, 1, 14672384464193924516),
            T(27, 2),
            W(23, 6, 7668409781303196293),
            W(522, 1, 14571330240519052108),
            W(583, 3, 4277323780798689024),
            T(617, 2),
            W(753, 2, 13121473553431357409),
            R(357, 8),
            W(29, 1, 1106653171435643150),
            W(40, 7, 8818787651124199205),
            P(2),
            R(29, 8),
            W(646, 1, 10495134783532629648),
            W(399, 13, 1681464235705872192),
            P(1),
            W(10, 5, 11238738351521830046),
            R(24, 4),
            R(130, 5),
            W(423, 4, 3291083433649347437),
            R(2, 3),
            W(676, 3, 4231325390089626280),
            T(2, 2),
            W(364, 3, 6177388296503672468),
            W(248, 1, 14519525442904331749),
            W(557, 5, 9435616597861436533),
            F,
            W(18, 8, 9759746320819833037),
            P(1),
            T(170, 14),
            R(20, 14),
            R(723, 7),
            T(567, 1),
            F,
            F,
            W(11, 3, 16309989524618727460),
            R(690, 5),
            W(684, 6, 14815967564678685377),
            F,
            R(144, 8),
            W(530, 1, 7475902835287409410),
            T(34, 3),
            W(719, 3, 12007086027920879407),
            W(23, 6, 1299140826994767050),
            W(417, 3, 6840583891285094366),
            T(353, 1),
            W(44, 4, 517290298735718655),
            W(30, 4, 8933486154575218098),
            W(431, 3, 382056287861059588),
            W(2, 3, 14741618535467284387),
            T(34, 3),
            T(2, 5),
            R(18, 4),
            R(284, 3),
            R(32, 8),
            W(12, 1, 14637998183277491339),
            R(8, 1),
            W(45, 7, 11380990000846133830),
            T(376, 5),
            W(47, 1, 5581177431961332523),
            P(1),
            W(24, 4, 13275958883141534682),
            W(380, 1, 11899071787549754411),
            W(129, 3, 9142943528688277179),
            T(34, 1),
            W(27, 8, 12416980679640515570),
            W(32, 3, 7454653842685924701),
            T(6, 3),
            W(154, 2, 14476008070894571095),
            T(31, 4),
            W(19, 1, 4813990573604279402),
            W(21, 3, 4638734448762357409),
            W(41, 3, 4446777946216618072),
            W(228, 3, 18176635353687497642),
            W(587, 2, 6403495326369597739),
            T(636, 3),
        ],
    );
}
