//! One run of `ftlsim repro hat`'s synthetic workloads, exactly as the repro
//! builds it (config, workload spec, fill and flush), as one line of JSON:
//! the figures that break an FTL's extra time down by cause (queueing and
//! service, flash work and erases by cause, hit ratio). GC copies of
//! translation pages are `gc_pages_copied - programs_by_cause.gc`.
//!
//! ```text
//! cargo run --release -p ftlsim --example hat_breakdown -- Fin1 dftl [--quick] [--set KEY=VALUE ...]
//! ```
use ftlsim::job::Input;
use ftlsim::repro::hat;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [wl, ftl, ..] = &args[..] else {
        eprintln!("usage: hat_breakdown WORKLOAD FTL [--quick] [--set KEY=VALUE ...]");
        std::process::exit(2);
    };
    let mut overrides = Vec::new();
    let mut quick = false;
    let mut it = args[2..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--set" => overrides.push(it.next().expect("--set needs KEY=VALUE").clone()),
            "--quick" => quick = true,
            _ => panic!("unknown argument {a}"),
        }
    }
    let opts = hat::Options { trace: None, quick, overrides, hot_set: hat::HotSet::Prefix };
    let shape = hat::SHAPES.iter().find(|s| s.name == wl).expect("workload");
    let cfg = hat::config(&opts, ftl).unwrap();
    let requests = if quick { 3000 } else { 100_000 };
    let spec = hat::spec(shape, &cfg, requests);
    let r = hat::measure(cfg, Input::Workload(spec.clone()), hat::PRECONDITION).unwrap();
    let v = serde_json::json!({
        "workload": wl, "ftl": ftl, "spec": spec, "overrides": r.overrides,
        "requests": r.requests, "reads": r.reads, "writes": r.writes,
        "mean_us": r.latency_us.all.mean, "read_mean_us": r.latency_us.read.mean, "write_mean_us": r.latency_us.write.mean,
        "queueing_mean_us": r.queueing_us.all.mean, "service_mean_us": r.service_us.all.mean,
        "service_read_us": r.service_us.read.mean, "service_write_us": r.service_us.write.mean,
        "queueing_read_us": r.queueing_us.read.mean, "queueing_write_us": r.queueing_us.write.mean,
        "host_pages_read": r.host_pages_read, "host_pages_written": r.host_pages_written,
        "reads_by_cause": r.flash_reads_by_cause, "programs_by_cause": r.flash_programs_by_cause,
        "erases_by_cause": r.erases_by_cause, "gc_pages_copied": r.gc_pages_copied, "rmw_reads": r.rmw_reads,
        "hit": r.mapping_hit_ratio, "wa": r.write_amplification, "iops": r.iops, "sim_s": r.sim_time_s,
        "util": r.utilization, "overhead_ms": r.management_overhead_ms, "warnings": r.warnings,
    });
    println!("{v}");
}
