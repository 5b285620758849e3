//! Determinism and physics: identical inputs give identical reports, preset
//! drives run with GC active and sane figures, TRIM saves GC work, and reads
//! of trimmed or never-written pages cost what they should.

use ftlsim::config::HostMode;
use ftlsim::trace::{CmdSource, HostCmd, Op};
use ftlsim::units::{Sector, SimTime};
use ftlsim::workload::{WorkloadSpec, generator};
use ftlsim::{Config, Precondition, Report, RunOptions, Simulation};

fn opts(sim: &Simulation, queue_depth: u32) -> RunOptions {
    let mut o = RunOptions::from_config(sim.config());
    o.mode = HostMode::Closed;
    o.queue_depth = queue_depth;
    o
}

/// Preconditions (when given) and runs a synthetic workload.
fn run_spec(cfg: Config, pre: Option<Precondition>, spec: &str, queue_depth: u32) -> Report {
    let mut sim = Simulation::new(cfg).unwrap();
    if let Some(p) = pre {
        sim.precondition(p).unwrap();
    }
    let spec: WorkloadSpec = spec.parse().unwrap();
    let mut src = generator(&spec, sim.logical_sectors()).unwrap();
    let o = opts(&sim, queue_depth);
    let r = sim.run(&mut src, &o, &mut |_, _| true).unwrap();
    sim.check_invariants().unwrap();
    r
}

/// The report as JSON without the fields that measure the host machine.
fn comparable(r: &Report) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    let m = v.as_object_mut().unwrap();
    m.remove("wall_time_s").expect("report has wall_time_s");
    m.remove("peak_rss_bytes").expect("report has peak_rss_bytes");
    v
}

fn small(preset: &str, extra: &[&str]) -> Config {
    let mut o = vec!["geometry.blocks_per_plane=64".to_string()];
    o.extend(extra.iter().map(|s| s.to_string()));
    Config::load(preset, &o).unwrap()
}

const MIXED: &str = "rw=randrw,rwmixread=30,trimmix=5,bs=4k-32k,ios=20000,seed=5";

#[test]
fn same_inputs_same_report() {
    for policy in ["greedy", "d-choices", "random", "cost-benefit"] {
        let cfg = small("hat-table4", &[&format!("gc.policy={policy}")]);
        let pre = Some(Precondition::new(1.0, 0.5));
        let a = run_spec(cfg.clone(), pre, MIXED, 8);
        let b = run_spec(cfg.clone(), pre, MIXED, 8);
        assert!(a.gc_invocations > 0, "{policy}: GC must run for the comparison to mean something");
        assert_eq!(comparable(&a), comparable(&b), "{policy}: same config, workload and seed");

        // Another workload seed changes the commands.
        let c = run_spec(cfg.clone(), pre, &MIXED.replace("seed=5", "seed=6"), 8);
        assert_ne!(comparable(&a), comparable(&c), "{policy}: workload seed");
        // Another drive seed changes preconditioning (and victim sampling).
        let mut cfg2 = cfg;
        cfg2.seed += 1;
        let d = run_spec(cfg2, pre, MIXED, 8);
        assert_ne!(comparable(&a), comparable(&d), "{policy}: config seed");
    }
}

#[test]
fn the_heap_write_buffer_is_deterministic() {
    for ftl in ["page", "coftl"] {
        let cfg = small(
            "hat-table4",
            &[&format!("ftl.name=\"{ftl}\""), "cache.bytes=262144", "cache.policy=\"heap\"", "cache.alpha=0.5"],
        );
        let a = run_spec(cfg.clone(), None, MIXED, 8);
        let b = run_spec(cfg, None, MIXED, 8);
        let buf = a.write_buffer.as_ref().unwrap();
        assert!(buf.clean_evictions > 0 && buf.dirty_evictions > 0, "{ftl}: {buf:?}");
        assert_eq!(comparable(&a), comparable(&b), "{ftl}: same config, workload and seed");
    }
}

fn check_sane(name: &str, r: &Report) {
    assert!(r.gc_invocations > 0 && r.gc_pages_copied > 0, "{name}: GC inactive");
    let wa = r.write_amplification.unwrap();
    assert!(wa >= 1.0, "{name}: WA {wa}");
    assert_eq!(r.flash_pages_programmed, r.flash_programs_by_cause.host + r.flash_programs_by_cause.gc, "{name}");
    for (what, l) in [("read", &r.latency_us.read), ("write", &r.latency_us.write), ("all", &r.latency_us.all)] {
        assert!(l.count > 0, "{name}: no {what} latencies");
        assert!(
            0.0 < l.p50 && l.p50 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max * 1.001,
            "{name}: {what} percentiles out of order: {l:?}"
        );
        assert!(l.mean <= l.max, "{name}: {what} mean above max: {l:?}");
    }
    let e = r.e_ftl.unwrap_or_else(|| panic!("{name}: no E_ftl"));
    assert!(e.is_finite() && e > 0.0, "{name}: E_ftl {e}");
    assert!(r.n_pb > 0 && r.n_vb > 0 && r.n_eb > 0.0, "{name}");
    assert!(r.sim_time_s > 0.0 && r.iops > 0.0, "{name}");
}

#[test]
fn presets_run_with_gc_active() {
    for preset in ["hat-table4", "k9lag08u0m-4ch"] {
        let cfg = small(preset, &[]);
        let pre = Some(Precondition::new(1.0, 1.0));
        let r = run_spec(cfg, pre, "rw=randrw,rwmixread=40,bs=4k-16k,ios=30000,seed=2", 16);
        check_sane(preset, &r);
    }
}

/// A fixed list of commands.
struct Cmds {
    cmds: std::vec::IntoIter<HostCmd>,
}

impl Cmds {
    fn new(cmds: Vec<HostCmd>) -> Cmds {
        Cmds { cmds: cmds.into_iter() }
    }
}

impl CmdSource for Cmds {
    fn next_cmd(&mut self) -> ftlsim::Result<Option<HostCmd>> {
        Ok(self.cmds.next())
    }
    fn name(&self) -> &str {
        "fixed"
    }
}

fn cmd(op: Op, start: u64, sectors: u64) -> HostCmd {
    HostCmd { time: SimTime::ZERO, op, start: Sector(start), sectors, continued: false }
}

fn run_cmds(cfg: Config, cmds: Vec<HostCmd>) -> (Report, Simulation) {
    let mut sim = Simulation::new(cfg).unwrap();
    let o = opts(&sim, 1);
    let r = sim.run(&mut Cmds::new(cmds), &o, &mut |_, _| true).unwrap();
    sim.check_invariants().unwrap();
    (r, sim)
}

/// A drive of 2 planes × 64 blocks × 32 pages of 4 KiB, 12% over-provisioned.
fn tiny(extra: &[&str]) -> Config {
    let text = r#"
name = "tiny"
overprovisioning = 0.12
[geometry]
channels = 1
planes_per_die = 2
blocks_per_plane = 64
pages_per_block = 32
page_size = 4096
[timing]
read_us = 20.0
program_us = 200.0
erase_us = 1500.0
bus_ns_per_byte = 1.0
"#;
    let o: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    Config::from_toml_str(text, "tiny", &o).unwrap()
}

/// Fill the drive, trim its upper half (unless `trim` is false, when the
/// same commands are absent), then overwrite the lower half at random.
fn trim_workload(cfg: &Config, trim: bool) -> Vec<HostCmd> {
    let pages = cfg.logical_pages();
    let mut cmds: Vec<HostCmd> = (0..pages).step_by(16).map(|p| cmd(Op::Write, p * 8, 16.min(pages - p) * 8)).collect();
    if trim {
        let half = pages / 2;
        cmds.extend((half..pages).step_by(64).map(|p| cmd(Op::Trim, p * 8, 64.min(pages - p) * 8)));
    }
    let mut rng = ftlsim::rng::SimRng::new(9);
    cmds.extend((0..pages * 3).map(|_| cmd(Op::Write, rng.below(pages / 2) * 8, 8)));
    cmds
}

#[test]
fn trim_reduces_gc_copying() {
    let cfg = tiny(&[]);
    let (with, _) = run_cmds(cfg.clone(), trim_workload(&cfg, true));
    let (without, _) = run_cmds(cfg.clone(), trim_workload(&cfg, false));
    let disabled_cfg = tiny(&["ftl.trim=false"]);
    let (disabled, _) = run_cmds(disabled_cfg.clone(), trim_workload(&disabled_cfg, true));
    assert_eq!(with.trimmed_pages, cfg.logical_pages() - cfg.logical_pages() / 2);
    assert_eq!(disabled.trimmed_pages, 0);
    assert!(without.gc_pages_copied > 0);
    assert!(
        with.gc_pages_copied < without.gc_pages_copied,
        "trim: {} copies, no trims: {}",
        with.gc_pages_copied,
        without.gc_pages_copied
    );
    // Ignored trims are no trims at all.
    assert_eq!(disabled.gc_pages_copied, without.gc_pages_copied);
    assert!(with.write_amplification.unwrap() < without.write_amplification.unwrap());
}

#[test]
fn trimmed_reads_cost_no_flash_read() {
    for policy in ["zero", "place"] {
        let cfg = tiny(&[&format!("host.unwritten_reads={policy}")]);
        // Write 64 pages, trim them (one 4-page tail stays), read them all back.
        let cmds = vec![cmd(Op::Write, 0, 64 * 8), cmd(Op::Trim, 0, 60 * 8), cmd(Op::Read, 0, 64 * 8)];
        let (r, _) = run_cmds(cfg, cmds);
        assert_eq!(r.trimmed_pages, 60, "{policy}");
        assert_eq!(r.flash_reads_by_cause.host, 4, "{policy}: only the untrimmed pages are read");
        assert_eq!(r.placed_reads, 0, "{policy}: trimmed pages are not placed");
    }
}

#[test]
fn never_written_reads_are_placed_or_zero() {
    let cmds = || vec![cmd(Op::Write, 0, 8), cmd(Op::Read, 0, 10 * 8), cmd(Op::Read, 4 * 8, 2 * 8)];
    let (placed, _) = run_cmds(tiny(&["host.unwritten_reads=place"]), cmds());
    assert_eq!(placed.placed_reads, 9, "pages 1..10 are placed once each");
    assert_eq!(placed.flash_reads_by_cause.host, 12, "placed pages are then read like any other");
    assert_eq!(placed.flash_programs_by_cause.placement, 9);
    assert_eq!(placed.flash_pages_programmed, 1, "placement costs no timed program");

    let (zero, _) = run_cmds(tiny(&["host.unwritten_reads=zero"]), cmds());
    assert_eq!(zero.placed_reads, 0);
    assert_eq!(zero.flash_reads_by_cause.host, 1, "only the written page is read");
}
