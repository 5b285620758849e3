//! Behaviour of the block-mapped and log-block FTLs on the TRIM paper's
//! drive (scaled to 64 blocks per plane): which merges a workload causes,
//! what they cost against page mapping, and what TRIM saves them.
//!
//! Print the figures with `cargo test -p ftlsim --test integration hybrids:: -- --nocapture`.

use ftlsim::config::HostMode;
use ftlsim::trace::list::CmdList;
use ftlsim::trace::{HostCmd, Op};
use ftlsim::units::{Sector, SimTime};
use ftlsim::workload::{WorkloadSpec, generator};
use ftlsim::{Config, Precondition, Report, RunOptions, Simulation};

fn config(ftl: &str, extra: &[&str]) -> Config {
    let mut o = vec!["geometry.blocks_per_plane=64".to_string(), format!("ftl.name={ftl}")];
    o.extend(extra.iter().map(|s| s.to_string()));
    Config::load("k9lag08u0m-4ch", &o).unwrap()
}

fn closed_loop(sim: &Simulation) -> RunOptions {
    let mut o = RunOptions::from_config(sim.config());
    o.mode = HostMode::Closed;
    o.queue_depth = 1;
    o
}

/// Preconditions, then runs `cmds` (a workload spec or a command list).
fn run(cfg: Config, pre: Precondition, cmds: Cmds) -> Report {
    let mut sim = Simulation::new(cfg).unwrap();
    sim.precondition(pre).unwrap();
    let opts = closed_loop(&sim);
    let r = match cmds {
        Cmds::Spec(spec) => {
            let spec: WorkloadSpec = spec.parse().unwrap();
            let mut src = generator(&spec, sim.logical_sectors()).unwrap();
            sim.run(&mut src, &opts, &mut |_, _| true).unwrap()
        }
        Cmds::List(list) => sim.run(&mut CmdList::new("list", list), &opts, &mut |_, _| true).unwrap(),
    };
    sim.check_invariants().unwrap();
    eprintln!(
        "{} {}: WA {:.2}, merges {:?}, copied {}, padded {}, assoc {:?}, trim list {:?}",
        r.ftl,
        r.input.source,
        r.write_amplification.unwrap_or(0.0),
        r.merges,
        r.merge_pages_copied,
        r.pages_padded,
        r.log_associativity,
        r.trim_list
    );
    r
}

enum Cmds {
    Spec(String),
    List(Vec<HostCmd>),
}

fn cmd(op: Op, start: u64, sectors: u64) -> HostCmd {
    HostCmd { time: SimTime::ZERO, op, start: Sector(start), sectors, continued: false }
}

const FILL: Precondition = Precondition::new(1.0, 0.0);

#[test]
fn sequential_overwrite_of_whole_blocks_only_switches() {
    // 48 MiB = 48 whole blocks on each of the 4 chips, written twice in 256 KiB requests
    // on a fresh drive (a filled one ends in partly-logical blocks, partial-merged later).
    let sectors = 48 << 11;
    let list: Vec<_> = (0..2).flat_map(|_| (0..sectors).step_by(512).map(|s| cmd(Op::Write, s, 512))).collect();
    for ftl in ["bast", "fast"] {
        for striping in ["page", "block"] {
            let fresh = Precondition::new(0.0, 0.0);
            let r = run(config(ftl, &[&format!("ftl.striping={striping}")]), fresh, Cmds::List(list.clone()));
            // FAST writes the first pass in place (free data-block pages), BAST through its logs.
            let logged_passes = if ftl == "fast" { 1 } else { 2 };
            assert!(r.merges.switch >= logged_passes * 4 * 48 - 4 * 6, "{ftl} {striping}: {:?}", r.merges);
            assert_eq!((r.merges.partial, r.merges.full, r.merge_pages_copied), (0, 0, 0), "{ftl} {striping}");
        }
    }
}

#[test]
fn random_writes_mostly_full_merges_and_fast_amplifies_far_more_than_page() {
    // The full-size drive: with fewer logical blocks per chip, a random log's
    // pages share logical blocks and FAST's associativity is lower. Each FTL
    // starts in its steady state: the page FTL after a full random
    // overwrite, the log-block FTLs (whose logs are a few blocks per chip)
    // after the fill.
    let full = "geometry.blocks_per_plane=2048";
    let spec = || Cmds::Spec("rw=randwrite,bs=4k,ios=10000,seed=3".into());
    let steady = Precondition::new(1.0, 1.0);
    let page = run(config("page", &[full]), steady, spec()).write_amplification.unwrap();
    for ftl in ["bast", "fast"] {
        // Page striping: a random log gathers pages of more logical blocks.
        let r = run(config(ftl, &[full, "ftl.striping=page"]), FILL, spec());
        let m = &r.merges;
        assert!(m.full * 10 >= (m.switch + m.partial + m.full) * 9, "{ftl}: {m:?}");
        let wa = r.write_amplification.unwrap();
        if ftl == "fast" {
            assert!(wa >= 10.0 * page, "FAST WA {wa:.2} vs page {page:.2}");
            assert!(r.log_associativity.mean.unwrap() > 10.0, "{:?}", r.log_associativity);
        }
    }
}

#[test]
fn trimming_half_the_data_saves_merge_copies() {
    let cfg = config("fast", &[]);
    let half = cfg.logical_sectors() / 2;
    // Trim every other 1 MiB extent, then overwrite 4 KiB pages at random.
    let mut list: Vec<_> = (0..2 * half).step_by(4096).map(|s| cmd(Op::Trim, s, 2048)).collect();
    let spec: WorkloadSpec = "rw=randwrite,bs=4k,ios=8000,seed=9".parse().unwrap();
    let mut src = generator(&spec, cfg.logical_sectors()).unwrap();
    while let Some(c) = ftlsim::trace::CmdSource::next_cmd(&mut src).unwrap() {
        list.push(c);
    }
    for ftl in ["bast", "fast", "block"] {
        let with = run(config(ftl, &[]), FILL, Cmds::List(list.clone()));
        let without = run(config(ftl, &["ftl.trim=false"]), FILL, Cmds::List(list.clone()));
        assert!(with.merge_pages_copied < without.merge_pages_copied, "{ftl}: {with:?} vs {without:?}");
        assert!(with.trim_list.copies_saved > 0 && with.trim_list.peak_entries > 0, "{ftl}");
        assert_eq!(without.trim_list.copies_saved, 0);
    }
}

#[test]
fn page_striping_costs_associativity_under_merges() {
    // 16 KiB random writes: page striping spreads each over the 4 chips.
    let spec = || Cmds::Spec("rw=randwrite,bs=16k,ios=3000,seed=4".into());
    let page = run(config("fast", &["ftl.striping=page"]), FILL, spec());
    let block = run(config("fast", &["ftl.striping=block"]), FILL, spec());
    assert!(
        page.merge_pages_copied > block.merge_pages_copied,
        "{} vs {}",
        page.merge_pages_copied,
        block.merge_pages_copied
    );
}

#[test]
fn same_inputs_same_report() {
    let spec = "rw=randrw,rwmixread=30,trimmix=10,bs=2k-64k,ios=4000,seed=5";
    for ftl in ["block", "bast", "fast"] {
        let go = || {
            let mut v = serde_json::to_value(run(config(ftl, &[]), FILL, Cmds::Spec(spec.into()))).unwrap();
            v.as_object_mut().unwrap().remove("wall_time_s");
            v.as_object_mut().unwrap().remove("peak_rss_bytes");
            v
        };
        assert_eq!(go(), go(), "{ftl}");
    }
}
