//! Every repro figure, drawn from rows shaped like a real run's: the SVG
//! parses, carries its title, axis labels, tick values and legend entries in
//! series order, draws no bar of zero or negative height, and renders (resvg)
//! to a PNG of its stated size that is not blank and whose text draws ink.
//! A new repro adds its case here.

use ftlsim::report::EnergyReport;
use ftlsim::repro::{coftl, hat, mu_ftl, trim_cost, trim_ftl};
use resvg::{tiny_skia, usvg};

/// What a figure must show.
struct Expect<'a> {
    title: &'a str,
    axis_labels: &'a [&'a str],
    ticks: &'a [&'a str],
    /// Each panel's legend, in the order its bars or lines are drawn.
    legends: &'a [&'a [&'a str]],
    /// At least this many bars.
    bars: usize,
}

/// The SVG's texts in document order.
fn texts(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants().filter(|n| n.has_tag_name("text")).map(|n| n.text().unwrap_or("").trim().to_string()).collect()
}

fn attr(n: &roxmltree::Node, name: &str) -> f64 {
    let v = n.attribute(name).unwrap_or_else(|| panic!("<{}> without {name}", n.tag_name().name()));
    v.parse().unwrap_or_else(|_| panic!("<{}> {name}={v:?} is not a number", n.tag_name().name()))
}

fn check(name: &str, svg: &str, e: &Expect) {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|err| panic!("{name}: not well-formed XML: {err}"));
    assert_eq!(doc.root_element().tag_name().name(), "svg", "{name}");
    let texts = texts(&doc);
    let joined = texts.join(" ");
    assert!(joined.contains(e.title), "{name}: title {:?} missing from {texts:?}", e.title);
    for want in e.axis_labels.iter().chain(e.ticks) {
        assert!(texts.iter().any(|t| t == want), "{name}: no text {want:?} in {texts:?}");
    }
    // The legends' entries, in document order, are each panel's in turn.
    let all: Vec<&str> = e.legends.concat();
    let seen: Vec<&str> = texts.iter().map(String::as_str).filter(|t| all.contains(t)).collect();
    assert_eq!(seen, all, "{name}: legend entries out of order");
    let rects: Vec<roxmltree::Node> = doc.descendants().filter(|n| n.has_tag_name("rect")).collect();
    for r in &rects {
        let (w, h) = (attr(r, "width"), attr(r, "height"));
        assert!(w > 0.0 && h > 0.0, "{name}: a rect of {w} × {h} at x={}, y={}", attr(r, "x"), attr(r, "y"));
    }
    // Bars and legend swatches are the filled rects besides the white background.
    let filled = rects.iter().filter(|r| r.attribute("fill").is_some_and(|f| f != "none" && f != "#FFFFFF")).count();
    assert!(filled >= e.bars, "{name}: {filled} filled rects, want ≥ {} bars", e.bars);
    render(name, svg);
}

/// Fonts for the renderer: the system's (scripts/test installs DejaVu when
/// there are none), with the SVG's generic sans-serif mapped to one of them.
fn options() -> usvg::Options<'static> {
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    let family =
        db.faces().flat_map(|f| f.families.iter().map(|(n, _)| n.clone())).find(|n| n.contains("Sans")).expect(
            "no sans-serif font on this machine to render the figures' text: apt-get install fonts-dejavu-core",
        );
    db.set_sans_serif_family(family);
    opt
}

/// Dark pixels: ink of text, axes, lines and bars on the white background.
fn rasterize(svg: &str, opt: &usvg::Options) -> (tiny_skia::Pixmap, usize) {
    let tree = usvg::Tree::from_str(svg, opt).expect("usvg parses the figure");
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).expect("a non-empty canvas");
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    let ink = pixmap
        .pixels()
        .iter()
        .filter(|p| p.alpha() > 0 && (p.red() as u32 + p.green() as u32 + p.blue() as u32) < 600)
        .count();
    (pixmap, ink)
}

/// Every text's rendered box; no two may overlap (labels stay legible).
fn text_boxes_do_not_overlap(name: &str, tree: &usvg::Tree) {
    fn collect(g: &usvg::Group, out: &mut Vec<(String, usvg::Rect)>) {
        for n in g.children() {
            match n {
                usvg::Node::Group(g) => collect(g, out),
                usvg::Node::Text(t) => {
                    let text = t.chunks().iter().map(|c| c.text()).collect::<String>();
                    out.push((text, t.abs_bounding_box()));
                }
                _ => {}
            }
        }
    }
    let mut boxes = Vec::new();
    collect(tree.root(), &mut boxes);
    assert!(!boxes.is_empty(), "{name}: no text rendered");
    for (i, (a, ra)) in boxes.iter().enumerate() {
        for (b, rb) in &boxes[i + 1..] {
            // A pixel of slack: glyph boxes include side bearings.
            let overlap_x = ra.right().min(rb.right()) - ra.left().max(rb.left());
            let overlap_y = ra.bottom().min(rb.bottom()) - ra.top().max(rb.top());
            assert!(overlap_x <= 1.0 || overlap_y <= 1.0, "{name}: {a:?} at {ra:?} overlaps {b:?} at {rb:?}");
        }
    }
}

fn render(name: &str, svg: &str) {
    let opt = options();
    text_boxes_do_not_overlap(name, &usvg::Tree::from_str(svg, &opt).unwrap());
    let doc = roxmltree::Document::parse(svg).unwrap();
    let (w, h) = (attr(&doc.root_element(), "width") as u32, attr(&doc.root_element(), "height") as u32);
    let (pixmap, ink) = rasterize(svg, &opt);
    let png = pixmap.encode_png().expect("PNG encodes");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{name}");
    // IHDR: width and height, big-endian, right after the chunk header.
    let dims =
        (u32::from_be_bytes(png[16..20].try_into().unwrap()), u32::from_be_bytes(png[20..24].try_into().unwrap()));
    assert_eq!(dims, (w, h), "{name}: PNG size");
    let area = (w * h) as usize;
    assert!(ink > area / 100, "{name}: nearly blank, {ink} dark pixels of {area}");
    // The text draws: without its <text> elements the figure has less ink.
    let (_, bare_ink) = rasterize(&strip_text(svg), &opt);
    assert!(ink > bare_ink + area / 500, "{name}: text drew {} pixels", ink.saturating_sub(bare_ink));
    if let Some(dir) = std::env::var_os("FTLSIM_FIGURES_DIR") {
        // To look at them: FTLSIM_FIGURES_DIR=/tmp/figs cargo test -p ftlsim --test integration figures::
        std::fs::write(std::path::Path::new(&dir).join(format!("{name}.png")), &png).unwrap();
    }
}

fn strip_text(svg: &str) -> String {
    let mut out = String::new();
    let mut rest = svg;
    while let Some(i) = rest.find("<text") {
        out.push_str(&rest[..i]);
        let end = rest[i..].find("</text>").expect("closed text") + i + "</text>".len();
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

const HAT_FTLS: [&str; 5] = ["page", "block", "fast", "dftl", "hat"];

fn hat_results() -> hat::HatResults {
    // Ratios spanning 1.0 (page mapping) to 175× (FAST on Fin2): a log axis.
    let ratios = [1.0, 2.1, 175.0, 1.04, 1.01];
    let mut workloads = Vec::new();
    // The real trace's workload is named by its file.
    for (k, wl) in
        ["Fin1-like", "Fin2-like", "Openmail-like", "Web-like", "ssdsim-example-fin1.ascii"].into_iter().enumerate()
    {
        for (j, ftl) in HAT_FTLS.iter().enumerate() {
            let ratio = if k == 1 { ratios[j] } else { 1.0 + (ratios[j] - 1.0) / 20.0 };
            workloads.push(hat::WorkloadRow {
                workload: wl.into(),
                input: format!("{wl}-like"),
                ftl: ftl.to_string(),
                requests: 3000,
                mean_us: 500.0 * ratio,
                vs_page_pct: Some((ratio - 1.0) * 100.0),
                erases: 100,
                mapping_hit_ratio: None,
                paper_hit_ratio: None,
                energy_j: EnergyReport::default(),
                energy_vs_page: Some(1.0),
                pcm_write_busy: 0.0,
                vs_page_pct_pcm_free: None,
                iops: 1e6 / (500.0 * ratio),
                log_associativity: None,
                write_amplification: None,
                saturated: false,
                channel_busy: Some(0.5),
            });
        }
    }
    let mut micro = Vec::new();
    for op in ["randread", "randwrite"] {
        for sectors in hat::MICRO_SECTORS {
            for (j, ftl) in HAT_FTLS.iter().enumerate() {
                let vs = 1.0 / (1.0 + j as f64 * sectors as f64 / 64.0);
                micro.push(hat::MicroRow {
                    op: op.into(),
                    sectors,
                    ftl: ftl.to_string(),
                    iops: 8000.0 * vs,
                    vs_page: Some(vs),
                });
            }
        }
    }
    hat::HatResults {
        config: "hat-table4".into(),
        quick: false,
        ftls: HAT_FTLS.map(String::from).to_vec(),
        missing_ftls: vec![],
        workloads,
        micro,
        regime: hat::REGIME.map(String::from).to_vec(),
        energy: ftlsim::Config::load("hat-table4", &[]).unwrap().energy,
        pcm_read_us: 0.115,
        pcm_write_us: 90.0,
    }
}

#[test]
fn hat_figure() {
    let svg = hat::to_svg(&hat_results());
    check(
        "hat",
        &svg,
        &Expect {
            title: "repro hat on hat-table4: Fin1-like, Fin2-like, Openmail-like, Web-like, ssdsim-example-fin1.ascii workloads",
            axis_labels: &[
                "workload",
                "mean response time / page mapping's (×)",
                "request size (KiB)",
                "IOPS / page mapping's (×)",
            ],
            // Log axis decades; the micro-benchmark's sizes, 4 to 128 sectors.
            ticks: &["1", "10", "100", "Fin1-like", "ssdsim-example-fin1.ascii", "2", "4", "64"],
            legends: &[&HAT_FTLS, &HAT_FTLS, &HAT_FTLS],
            bars: 25,
        },
    );
    // Page mapping's ratio of exactly 1.0 still has a bar: 20 bars + 5 swatches.
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let blue = doc.descendants().filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some("#0072B2")).count();
    assert_eq!(blue, 5 + 1, "page mapping's bars, one per workload, and its legend swatch");
}

fn trim_rows() -> Vec<trim_ftl::Row> {
    let mut rows = Vec::new();
    for workload in ["os-install", "iozone"] {
        for ftl in ["fast", "page"] {
            for trim in [true, false] {
                let k = if trim { 1.0 } else { 1.6 };
                rows.push(trim_ftl::Row {
                    workload: workload.into(),
                    ftl: ftl.into(),
                    trim,
                    phases: vec![trim_ftl::Phase { name: "write".into(), seconds: 10.0 * k, mb_s: 20.0 / k }],
                    n_pb: (5000.0 * k) as u64,
                    n_vb: 900,
                    n_eb: 1.0,
                    e_ftl: Some(if ftl == "fast" { 0.002 * k } else { 0.2 / k }),
                    write_amplification: Some(1.2 * k),
                    merge_pages_copied: 0,
                    gc_pages_copied: 10,
                    trim_copies_saved: 5,
                    host_pages_written: 1000,
                });
            }
        }
    }
    rows
}

#[test]
fn trim_ftl_figure() {
    let svg = trim_ftl::to_svg(&trim_rows(), true);
    let legend: &[&str] = &["TRIM on", "TRIM off"];
    check(
        "trim-ftl",
        &svg,
        &Expect {
            title: "repro trim-ftl on k9lag08u0m-4ch (quick): os-install and iozone at QD 1",
            axis_labels: &["workload, FTL", "blocks programmed (N_pb)", "E_ftl (ratio)", "measured time (s)"],
            ticks: &["os-install fast", "iozone page", "0", "8000", "0.01", "0.1", "20"],
            legends: &[legend, legend, legend],
            bars: 3 * 8,
        },
    );
}

fn mu_rows() -> Vec<mu_ftl::Row> {
    let row = |figure: &str, workload: &str, ftl: &str, x: f64, overhead_s: f64| mu_ftl::Row {
        figure: figure.into(),
        workload: workload.into(),
        ftl: ftl.into(),
        x,
        overhead_s,
        gc_s: overhead_s,
        mapping_s: 0.0,
        bitmap_s: 0.0,
        merge_s: 0.0,
        write_amplification: Some(1.5),
        mapping_ram_bytes: 32768,
        tree_cache_hit_ratio: None,
    };
    let mut rows = Vec::new();
    for (k, wl) in mu_ftl::WORKLOADS.into_iter().enumerate() {
        for (j, ftl) in mu_ftl::FIG8_FTLS.iter().enumerate() {
            for extra in 1..=5 {
                rows.push(row("fig8", wl, ftl, extra as f64, (40.0 + 10.0 * j as f64 + k as f64) / extra as f64));
            }
        }
        for kib in [0, 8, 16, 32, 64] {
            rows.push(row("fig9", wl, "mu", kib as f64, 30.0 - kib as f64 / 4.0));
        }
        for mib in [32, 64, 128, 256, 0] {
            // A zero overhead still shows (a pixel tall).
            rows.push(row("fig10", wl, "mu", mib as f64, if mib == 0 { 0.0 } else { 12.0 }));
        }
    }
    rows
}

#[test]
fn mu_ftl_figure() {
    let svg = mu_ftl::to_svg(&mu_rows(), false);
    check(
        "mu-ftl",
        &svg,
        &Expect {
            title: "repro mu-ftl on mu-ftl-mlc: multimedia, pc workloads at QD 1",
            axis_labels: &[
                "extra blocks (% of the drive)",
                "management overhead (s)",
                "bitmap cache (KiB)",
                "partition size",
            ],
            ticks: &["1", "5", "64", "32 MiB", "whole space"],
            legends: &[&mu_ftl::FIG8_FTLS, &mu_ftl::FIG8_FTLS, &mu_ftl::WORKLOADS, &mu_ftl::WORKLOADS],
            bars: 10,
        },
    );
    // Fig. 10's groups are the five partition sizes, once each, though both workloads have them.
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(texts(&doc).iter().filter(|t| *t == "whole space").count(), 1);
}

#[test]
fn the_checks_catch_what_they_guard() {
    let svg = |body: &str| {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"200\" height=\"100\"><rect x=\"0\" y=\"0\" width=\"200\" height=\"100\" fill=\"#FFFFFF\"/>{body}</svg>"
        )
    };
    let text =
        |x: u32, s: &str| format!("<text x=\"{x}\" y=\"50\" font-family=\"sans-serif\" font-size=\"14\">{s}</text>");
    let tree = |s: &str| usvg::Tree::from_str(s, &options()).unwrap();
    let apart = svg(&(text(10, "left") + &text(120, "right")));
    text_boxes_do_not_overlap("apart", &tree(&apart));
    let crowded = svg(&(text(10, "a long label") + &text(40, "another")));
    let caught = std::panic::catch_unwind(|| text_boxes_do_not_overlap("crowded", &tree(&crowded)));
    assert!(caught.is_err(), "overlapping labels pass unnoticed");
    let flat = svg("<rect x=\"10\" y=\"10\" width=\"20\" height=\"0\" fill=\"#0072B2\"/>");
    let expect = Expect { title: "", axis_labels: &[], ticks: &[], legends: &[], bars: 0 };
    assert!(std::panic::catch_unwind(|| check("flat", &flat, &expect)).is_err(), "a zero-height bar passes");
}

#[test]
fn trim_cost_figure() {
    let rows = trim_cost::run(true, &mut |_| {}).unwrap();
    let misaligned: Vec<String> =
        trim_cost::FTLS.iter().flat_map(|f| [f.to_string(), format!("{f} misaligned")]).collect();
    let misaligned: Vec<&str> = misaligned.iter().map(String::as_str).collect();
    check(
        "trim-cost",
        &trim_cost::to_svg(&rows),
        &Expect {
            title: "repro trim-cost",
            axis_labels: &[
                "range size (bytes)",
                "TRIM throughput (MB/s)",
                "ranges per command",
                "time per range (µs)",
                "deletion time (s)",
            ],
            ticks: &["4096", "1", "64"],
            legends: &[&misaligned, &trim_cost::FTLS, &["one range per TRIM", "batches of 64 ranges"]],
            bars: 8,
        },
    );
}

#[test]
fn coftl_figure() {
    let rows = coftl::run(true, 1, &mut |_| {}).unwrap();
    check(
        "coftl",
        &coftl::to_svg(&rows),
        &Expect {
            title: "repro coftl on coftl-mt29f64g08",
            axis_labels: &[
                "blocks per virtual block",
                "data cache (MiB)",
                "channels",
                "drive size (GiB, physical)",
                "requests/s",
                "recovery flash time (s)",
            ],
            ticks: &["1", "8", "16"],
            legends: &[&["COFTL", "BL"], &["COFTL"], &["COFTL", "BL"], &["COFTL", "page FTL, full OOB scan (est.)"]],
            bars: 10,
        },
    );
}
