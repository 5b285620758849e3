//! `ftlsim repro mu-ftl --quick` as a user runs it: the table on stdout, the
//! four data files, and the paper's trends. The real SQLite-on-ext4 trace
//! is replayed too when the real traces folder is present (see
//! `ftlsim::testdata`); a fresh clone runs the generators alone.

use assert_cmd::Command;
use ftlsim::repro::mu_ftl::REAL_TRACE;
use serde_json::Value;

#[test]
fn repro_mu_ftl_quick_writes_table_files_and_trends() {
    let dir = tempfile::tempdir().unwrap();
    let real = ftlsim::testdata::real(REAL_TRACE);
    let traces_dir = match &real {
        Some(p) => p.ancestors().nth(2).unwrap().to_path_buf(),
        None => dir.path().join("no-real-traces"),
    };
    let out = Command::cargo_bin("ftlsim")
        .unwrap()
        .env("FTLSIM_REAL_TRACES", &traces_dir)
        .args(["repro", "mu-ftl", "--quick", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let table = String::from_utf8(out.stdout).unwrap();
    assert_eq!(std::fs::read_to_string(dir.path().join("mu-ftl.md")).unwrap(), table);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("mu-ftl.json")).unwrap()).unwrap();
    let rows = json.as_array().unwrap();
    // Per generator: Fig. 8 (4 FTLs × 5 spare levels), Figs. 9 and 10 (5 each); per trace, Fig. 8.
    let workloads: Vec<&str> = match real {
        Some(_) => {
            assert!(stderr.contains("also replaying"), "{stderr}");
            vec!["multimedia", "pc", "wiscsee-sqlitewal-update-ext4.txt"]
        }
        None => {
            assert!(stderr.contains("generators only"), "{stderr}");
            vec!["multimedia", "pc"]
        }
    };
    assert_eq!(rows.len(), 2 * 30 + (workloads.len() - 2) * 20);
    let csv = std::fs::read_to_string(dir.path().join("mu-ftl.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + rows.len());
    assert_eq!(table.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| workload")).count(), rows.len());
    let svg = std::fs::read_to_string(dir.path().join("mu-ftl.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("repro mu-ftl on mu-ftl-mlc (quick)"), "the title says what ran");
    for w in &workloads {
        assert!(svg.contains(&format!("Fig. 8, {w}")), "a Fig. 8 panel for {w}");
    }

    let get = |fig: &str, w: &str, ftl: &str, x: f64| -> &Value {
        rows.iter()
            .find(|r| r["figure"] == fig && r["workload"] == w && r["ftl"] == ftl && r["x"].as_f64() == Some(x))
            .unwrap_or_else(|| panic!("no {fig} row for {w} / {ftl} at {x}"))
    };
    let overhead = |fig: &str, w: &str, ftl: &str, x: f64| get(fig, w, ftl, x)["overhead_s"].as_f64().unwrap();
    for w in &workloads {
        // The paper's headline: at 3% extra blocks μ-FTL beats the superblock scheme.
        let (mu, sb) = (overhead("fig8", w, "mu", 3.0), overhead("fig8", w, "superblock", 3.0));
        assert!(mu < sb, "{w}: μ-FTL {mu} s against superblock {sb} s at 3%");
        // More spare never costs μ-FTL more.
        assert!(overhead("fig8", w, "mu", 5.0) <= overhead("fig8", w, "mu", 1.0), "{w}");
        // Its RAM is the configured budget, a small fraction of DAC's page map.
        let ram = |ftl: &str| get("fig8", w, ftl, 3.0)["mapping_ram_bytes"].as_u64().unwrap();
        assert_eq!(ram("mu"), 32 * 1024);
        assert!(ram("dac") > 30 * ram("mu"), "DAC {} B", ram("dac"));
    }
    // Fig. 9 keeps the RAM total fixed while the bitmap cache grows.
    let fig9_ram: Vec<u64> = [0.0, 8.0, 16.0, 32.0, 64.0]
        .iter()
        .map(|&kib| get("fig9", "pc", "mu", kib)["mapping_ram_bytes"].as_u64().unwrap())
        .collect();
    assert!(fig9_ram.windows(2).all(|w| w[0] == w[1]), "{fig9_ram:?}");
    // Fig. 10: partitions keep extents apart; one for the whole space costs most on pc.
    let whole = overhead("fig10", "pc", "mu", 0.0);
    for mib in [32.0, 64.0, 128.0] {
        assert!(overhead("fig10", "pc", "mu", mib) < whole, "{mib} MiB partitions against the whole space");
    }
}
