//! `ftlsim repro trim-cost --quick` as a user runs it: the tables on stdout,
//! the data files consistent with them, and the paper's shapes in the rows.

use assert_cmd::Command;

#[test]
fn repro_trim_cost_quick_writes_tables_files_and_the_papers_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("ftlsim")
        .unwrap()
        .args(["repro", "trim-cost", "--quick", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert_eq!(std::fs::read_to_string(dir.path().join("trim-cost.md")).unwrap(), table);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("trim-cost.json")).unwrap()).unwrap();
    let rows = json.as_array().unwrap();
    let csv = std::fs::read_to_string(dir.path().join("trim-cost.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + rows.len());
    let svg = std::fs::read_to_string(dir.path().join("trim-cost.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.matches("<polyline").count() >= 12, "a line per FTL (aligned and misaligned) and per FTL");
    for label in ["repro trim-cost", "range size (bytes)", "TRIM throughput (MB/s)", "1000", "deletion time (s)"] {
        assert!(svg.contains(label), "{label}");
    }
    let get = |series: &str, ftl: &str, x: &str| {
        rows.iter().find(|r| r["series"] == series && r["ftl"] == ftl && r["x"] == x).unwrap_or_else(|| {
            panic!("no row {series} {ftl} {x}");
        })
    };
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    for ftl in ["page", "dftl", "hat", "fast"] {
        // Aligned no slower than misaligned, and MB/s rising from 4 KiB to 4 MiB.
        let sizes: Vec<String> = (0..6).map(|k| (4096u64 << (2 * k)).to_string()).collect();
        for x in &sizes {
            assert!(f(get("size", ftl, x), "latency_us") <= f(get("size-misaligned", ftl, x), "latency_us"));
        }
        let mb: Vec<f64> = sizes.iter().map(|x| f(get("size", ftl, x), "mb_s")).collect();
        assert!(mb.windows(2).all(|w| w[1] > w[0]), "{ftl}: {mb:?}");
        // Per-range cost falls as ranges share a command.
        let per_range = |n: &str| f(get("ranges", ftl, n), "latency_us") / n.parse::<f64>().unwrap();
        assert!(per_range("64") < per_range("1") / 2.0, "{ftl}");
    }
    assert!(table.contains("time saved") && table.contains("non-queued"));
    assert!(csv.starts_with("series,preset,ftl,x,latency_us,mb_s,commands,ranges,map_flash_reads,"), "{csv}");
    // The claims judged per FTL, each with a verdict.
    let headlines = &table[table.find("Against the paper, claim by claim").expect("the headlines")..];
    for ftl in ["page", "dftl", "hat", "fast"] {
        for claim in ["cost per byte falls as the range grows", "a misaligned range costs more"] {
            let line = headlines.lines().find(|l| l.starts_with(&format!("| {claim}, {ftl} |"))).expect(claim);
            assert!(["reproduced", "direction only", "differs"].iter().any(|v| line.contains(&format!("| {v} |"))));
        }
    }
}
