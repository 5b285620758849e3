//! `ftlsim repro hat` as a user runs it.

use assert_cmd::Command;

/// The Financial1 excerpt, or the kept SSDsim sample where it is absent.
fn fin1_or_sample() -> std::path::PathBuf {
    ftlsim::testdata::real_or_kept("ssdsim_ascii/ssdsim-example-fin1.ascii", "ssdsim_ascii/ssdsim-sample.ascii")
}

#[test]
fn repro_hat_quick_writes_tables_data_and_figure() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("ftlsim")
        .unwrap()
        .args(["repro", "hat", "--quick", "--trace"])
        .arg(fin1_or_sample())
        .arg("--out")
        .arg(dir.path())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let stdout = String::from_utf8(out).unwrap();
    assert!(stdout.contains("Mean response time") && stdout.contains("| Openmail-like |"), "{stdout}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("hat.json")).unwrap()).unwrap();
    let ftls = json["ftls"].as_array().unwrap().len();
    assert_eq!(json["workloads"].as_array().unwrap().len(), 5 * ftls);
    let csv = std::fs::read_to_string(dir.path().join("hat.csv")).unwrap();
    assert!(csv.starts_with("table,workload,ftl,") && csv.contains("workload,Web-like,hat,"));
    let svg = std::fs::read_to_string(dir.path().join("hat.svg")).unwrap();
    // The figure says what ran (its drawing is checked in crates/ftlsim/tests/figures.rs).
    assert!(svg.trim_end().ends_with("</svg>") && svg.contains("repro hat on hat-table4 (quick)"), "{svg}");
    assert_eq!(std::fs::read_to_string(dir.path().join("hat.md")).unwrap(), stdout);
    // The regime, the paper's claims with verdicts, and the energy assumptions are printed.
    assert!(stdout.contains("Regime: gc.policy=\"greedy\", gc.threshold=0.2"), "{stdout}");
    let heads = stdout.split_once("## Headlines\n\n").unwrap().1.split_once("\n\n").unwrap().0;
    let claims: Vec<Vec<&str>> = heads.lines().skip(2).map(|l| l.split(" | ").collect()).collect();
    assert!(claims.iter().filter(|c| c[0] == "| DFTL vs page").count() == 5, "{heads}");
    assert!(claims.iter().all(|c| ["reproduced", "direction only", "differs"].contains(&c[4])), "{heads}");
    assert!(stdout.contains("Energy assumptions (HAT's model"), "{stdout}");
    // A saturated run is shown with the rate it served, not compared as a mean.
    for w in json["workloads"].as_array().unwrap().iter().filter(|w| w["saturated"] == true) {
        let served = format!("saturated: served {:.0} req/s", w["iops"].as_f64().unwrap());
        assert!(stdout.contains(&served), "{served} missing from\n{stdout}");
    }
}

#[test]
fn repro_hat_names_a_bad_override() {
    Command::cargo_bin("ftlsim")
        .unwrap()
        .args(["repro", "hat", "--quick", "--set", "ftl.cache_bytes=3"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("ftl.cache_bytes"));
}

#[test]
fn repro_hat_names_a_bad_hot_scatter() {
    Command::cargo_bin("ftlsim")
        .unwrap()
        .args(["repro", "hat", "--quick", "--hot-scatter", "2x"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("hot-scatter: '2x'"));
}
