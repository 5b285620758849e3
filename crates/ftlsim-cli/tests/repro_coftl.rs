//! `ftlsim repro coftl --quick` as a user runs it: the table on stdout, the
//! four data files, and the trends the model must show.

use assert_cmd::Command;
use serde_json::Value;

#[test]
fn repro_coftl_quick_writes_table_files_and_trends() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("ftlsim")
        .unwrap()
        .args(["repro", "coftl", "--quick", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert_eq!(std::fs::read_to_string(dir.path().join("coftl.md")).unwrap(), table);
    // Four tables, each a title, a blank line, a header and a rule before its rows.
    let table_rows = table.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| FTL")).count();
    assert_eq!(table_rows, 5 + 7 + 10 + 4, "{table}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("coftl.json")).unwrap()).unwrap();
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 26);
    let csv = std::fs::read_to_string(dir.path().join("coftl.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 26);
    let svg = std::fs::read_to_string(dir.path().join("coftl.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("repro coftl on coftl-mt29f64g08"), "the title says what ran");
    for label in [
        "blocks per virtual block",
        "data cache (MiB)",
        "channels",
        "recovery flash time (s)",
        "BL",
        "COFTL",
        "page FTL, full OOB scan (est.)",
    ] {
        assert!(svg.contains(label), "{label}");
    }

    let pick = |fig: &str, ftl: &str| -> Vec<(f64, f64)> {
        let key = if fig == "recovery" { "recovery_s" } else { "requests_per_s" };
        rows.iter()
            .filter(|r| r["figure"] == fig && r["ftl"].as_str().unwrap().starts_with(ftl))
            .map(|r| (r["x"].as_f64().unwrap(), r[key].as_f64().unwrap()))
            .collect()
    };
    // (a) With 4 or more blocks per virtual block, COFTL's page sets span
    // enough channels to beat BL's one-block-at-a-time merges.
    let bl = pick("fig7", "bl")[0].1;
    for (k, rps) in pick("fig7", "coftl").into_iter().filter(|&(k, _)| k >= 4.0) {
        assert!(rps >= bl, "COFTL {rps} req/s at {k} blocks per virtual block, BL {bl}");
    }
    // (b) A larger data cache never costs throughput (within 2%: the α rule
    // and eviction order differ).
    let fig8 = pick("fig8", "coftl");
    assert!(fig8.windows(2).all(|w| w[1].1 >= w[0].1 * 0.98), "{fig8:?}");
    // (c) More channels at the same capacity never cost throughput.
    for ftl in ["coftl", "bl"] {
        let fig9 = pick("fig9", ftl);
        assert_eq!(fig9.len(), 5);
        assert!(fig9.windows(2).all(|w| w[1].1 >= w[0].1 * 0.98), "{ftl}: {fig9:?}");
    }
    // (d) COFTL reads a few pages per chain; a full OOB scan reads them all.
    let (co, page) = (pick("recovery", "coftl"), pick("recovery", "page"));
    assert_eq!(co.len(), 2);
    for (c, p) in co.iter().zip(&page) {
        assert_eq!(c.0, p.0);
        assert!(c.1 > 0.0 && c.1 * 5.0 < p.1, "COFTL {} s, OOB scan {} s at {} GiB", c.1, p.1, c.0);
    }
    assert!((page[1].1 / page[0].1 - 2.0).abs() < 1e-9, "a scan grows with the drive");
}
