//! `--state`: a drive saved and loaded is the drive it was — same data, same
//! FTL and flash state — for every FTL, checked by driving the original and
//! the loaded copy on with the same commands and comparing everything.

use ftlsim::report::Metrics;
use ftlsim::{Config, PreconditionMode, Simulation};
use ftlsim_nbd::drive::{Command, Drive};
use ftlsim_nbd::{Pace, StateDir};

const SECTOR: u64 = 512;

fn sim(ftl: &str, extra: &[&str]) -> Simulation {
    let mut o: Vec<String> = vec![
        "nand.store_payloads=true".into(),
        "geometry.blocks_per_plane=48".into(),
        format!("ftl.name={ftl}"),
        "ftl.cache_bytes=2048".into(),
    ];
    o.extend(extra.iter().map(|s| s.to_string()));
    Simulation::new(Config::load("k9lag08u0m-4ch", &o).unwrap()).unwrap()
}

/// A deterministic mix of writes (partial pages too), reads, trims,
/// write-zeroes and flushes over the first `span` bytes, enough to run GC.
fn drive_on(d: &mut Drive, seed: u64, commands: u32, span: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..commands {
        let start = next() % (span / SECTOR - 64);
        let sectors = 1 + next() % 24;
        let kind = next() % 100;
        let bytes = (sectors * SECTOR) as usize;
        if kind < 60 {
            let fill = (next() % 251) as u8 + 1;
            d.execute(Command::Write { fua: kind < 3 }, start, sectors, Some(&vec![fill; bytes]), None).unwrap();
        } else if kind < 80 {
            let mut out = vec![0; bytes];
            d.execute(Command::Read, start, sectors, None, Some(&mut out)).unwrap();
        } else if kind < 92 {
            d.execute(Command::Trim { fua: false }, start, sectors * 4, None, None).unwrap();
        } else if kind < 97 {
            d.execute(Command::WriteZeroes { fua: false, no_hole: kind % 2 == 0 }, start, sectors, None, None).unwrap();
        } else {
            d.execute(Command::Flush, 0, 0, None, None).unwrap();
        }
    }
}

/// Everything observable: the data of every page, each block's wear, and the
/// full report (FTL statistics included) with wall time left out.
fn fingerprint(d: &Drive) -> (Vec<u8>, Vec<u32>, String) {
    let sim = d.simulation();
    let page = sim.config().geometry.page_size as usize;
    let pages = sim.logical_sectors() * SECTOR / page as u64;
    let mut data = Vec::new();
    for lpn in 0..pages as u32 {
        data.extend_from_slice(sim.page_contents(lpn).as_deref().unwrap_or(&vec![0; page]));
    }
    let mut report = sim.report_from(&Metrics::default(), 0.0);
    report.peak_rss_bytes = None;
    (data, sim.device().array.erase_counts().to_vec(), serde_json::to_string(&report).unwrap())
}

fn save_load_continue(ftl: &str, extra: &[&str], precondition: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("drive");
    let commands = 3000;
    // Two saved sessions, so a load replays more than one.
    for seed in [1, 2] {
        let state = StateDir::open(&path).unwrap();
        assert_eq!(state.is_saved(), seed > 1);
        let mut s = sim(ftl, extra);
        match precondition {
            Some(p) if !state.is_saved() => s.precondition(p.parse().unwrap()).unwrap(),
            _ => state.restore(&mut s, &mut |_, _| {}).unwrap(),
        }
        let mut d = Drive::new(s, Pace::None, None).unwrap();
        d.log_commands(state.session_log().unwrap());
        let span = d.size_bytes();
        drive_on(&mut d, seed, commands, span);
        let log = d.take_command_log().unwrap();
        state.save(d.simulation(), log).unwrap();
    }
    // The original, never saved: the same two sessions in one process.
    let mut s = sim(ftl, extra);
    if let Some(p) = precondition {
        s.precondition(p.parse().unwrap()).unwrap();
    }
    for seed in [1, 2] {
        let mut d = Drive::new(s, Pace::None, None).unwrap();
        let span = d.size_bytes();
        drive_on(&mut d, seed, commands, span);
        s = d.into_simulation();
        s.restart_measurement().unwrap();
    }
    let mut original = Drive::new(s, Pace::None, None).unwrap();
    let mut loaded_sim = sim(ftl, extra);
    StateDir::open(&path).unwrap().restore(&mut loaded_sim, &mut |_, _| {}).unwrap();
    let mut loaded = Drive::new(loaded_sim, Pace::None, None).unwrap();
    let (data, wear, _) = fingerprint(&original);
    assert!(wear.iter().any(|&e| e > 0), "{ftl}: the sessions should have run GC or merges");
    assert!(data.iter().any(|&b| b != 0));
    assert!(fingerprint(&loaded) == fingerprint(&original), "{ftl}: the loaded drive differs");
    // Driven on alike, they stay alike: the hidden state (maps, caches, free
    // blocks, victims) was the same too.
    for d in [&mut original, &mut loaded] {
        let span = d.size_bytes();
        drive_on(d, 3, commands, span);
    }
    let (a, b) = (fingerprint(&original), fingerprint(&loaded));
    assert!(a.0 == b.0 && a.1 == b.1, "{ftl}: data or wear differ after more commands");
    assert_eq!(a.2, b.2, "{ftl}: reports differ after more commands");
}

#[test]
fn page() {
    save_load_continue("page", &[], Some("fill=1.0"));
}

#[test]
fn page_preconditioned_and_cost_benefit() {
    save_load_continue("page", &["gc.policy=cost-benefit"], Some("fill=1.0,overwrite=0.5"));
}

#[test]
fn dftl() {
    save_load_continue("dftl", &[], Some("fill=1.0"));
}

#[test]
fn hat() {
    save_load_continue("hat", &[], Some("fill=1.0"));
}

#[test]
fn block() {
    save_load_continue("block", &[], None);
}

#[test]
fn bast() {
    save_load_continue("bast", &[], None);
}

#[test]
fn fast_with_trim_list() {
    save_load_continue("fast", &["ftl.trim_mode=list"], None);
}

#[test]
fn fast_immediate_trim() {
    save_load_continue("fast", &["ftl.trim_mode=immediate"], None);
}

fn saved_drive(path: &std::path::Path) {
    let state = StateDir::open(path).unwrap();
    let mut d = Drive::new(sim("page", &[]), Pace::None, None).unwrap();
    d.log_commands(state.session_log().unwrap());
    drive_on(&mut d, 5, 200, 8 << 20);
    let log = d.take_command_log().unwrap();
    state.save(d.simulation(), log).unwrap();
}

fn restore_error(path: &std::path::Path, s: &mut Simulation) -> String {
    StateDir::open(path).and_then(|st| st.restore(s, &mut |_, _| {})).unwrap_err().to_string()
}

#[test]
fn a_state_saved_before_precondition_modes_restores_timed() {
    let dir = tempfile::tempdir().unwrap();
    let timed = "fill=1.0,overwrite=0.5,mode=timed";
    let conditioned = || {
        let mut s = sim("page", &[]);
        s.precondition(timed.parse().unwrap()).unwrap();
        Drive::new(s, Pace::None, None).unwrap()
    };
    let state = StateDir::open(dir.path()).unwrap();
    let mut d = conditioned();
    d.log_commands(state.session_log().unwrap());
    drive_on(&mut d, 5, 200, 8 << 20);
    let log = d.take_command_log().unwrap();
    state.save(d.simulation(), log).unwrap();
    // As an older ftlsim wrote it: no mode, which meant timed.
    let manifest = dir.path().join("state.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains(",mode=timed"), "{text}");
    std::fs::write(&manifest, text.replace(",mode=timed", "")).unwrap();
    let mut s = sim("page", &[]);
    StateDir::open(dir.path()).unwrap().restore(&mut s, &mut |_, _| {}).unwrap();
    assert_eq!(s.preconditioned().unwrap().mode, PreconditionMode::Timed);
    let loaded = Drive::new(s, Pace::None, None).unwrap();
    // The original, never saved, as a new session starts.
    let mut original = conditioned();
    drive_on(&mut original, 5, 200, 8 << 20);
    let mut s = original.into_simulation();
    s.restart_measurement().unwrap();
    let original = Drive::new(s, Pace::None, None).unwrap();
    assert!(fingerprint(&loaded) == fingerprint(&original), "the loaded drive differs");
}

#[test]
fn refuses_another_drive_naming_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    saved_drive(dir.path());
    let e = restore_error(dir.path(), &mut sim("page", &["geometry.blocks_per_plane=64"]));
    assert!(e.contains("geometry.blocks_per_plane is 48 there, 64 here"), "{e}");
    assert!(e.contains("state.toml"), "{e}");
    let e = restore_error(dir.path(), &mut sim("fast", &[]));
    assert!(e.contains("ftl.name is \"page\" there, \"fast\" here"), "{e}");
}

#[test]
fn damaged_states_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    saved_drive(dir.path());
    let commands = dir.path().join("commands-0.bin");
    let good = std::fs::read(&commands).unwrap();
    std::fs::write(&commands, &good[..good.len() - 3]).unwrap();
    let e = restore_error(dir.path(), &mut sim("page", &[]));
    assert!(e.contains("commands-0.bin") && e.contains("commands of 25 bytes"), "{e}");
    let mut bad_op = good.clone();
    bad_op[25] = 0x7f;
    std::fs::write(&commands, &bad_op).unwrap();
    let e = restore_error(dir.path(), &mut sim("page", &[]));
    assert!(e.contains("record 1: unknown operation code 0x7f"), "{e}");
    let mut huge = good.clone();
    huge[17..25].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(&commands, &huge).unwrap();
    let e = restore_error(dir.path(), &mut sim("page", &[]));
    assert!(e.contains("record 0: sectors") && e.contains("beyond the drive"), "{e}");
    // A command that succeeded recorded as failed: the replay notices.
    let mut flipped = good.clone();
    flipped[0] |= 0x80;
    std::fs::write(&commands, &flipped).unwrap();
    let e = restore_error(dir.path(), &mut sim("page", &[]));
    assert!(e.contains("replay diverged at command 0"), "{e}");
    std::fs::write(dir.path().join("state.toml"), "format = 3").unwrap();
    let e = restore_error(dir.path(), &mut sim("page", &[]));
    assert!(e.contains("state.toml"), "{e}");
    std::fs::write(dir.path().join("state.toml"), "").unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let e = StateDir::open(&file).err().unwrap().to_string();
    assert!(e.contains("is not a directory"), "{e}");
}
