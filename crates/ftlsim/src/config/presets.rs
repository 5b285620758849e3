//! Device presets, compiled in from `presets/*.toml` so the binary needs no
//! files at run time. Each preset cites its source in its `source` key.

const PRESETS: &[(&str, &str)] = &[
    ("k9lag08u0m-4ch", include_str!("../../../../presets/k9lag08u0m-4ch.toml")),
    ("hat-table4", include_str!("../../../../presets/hat-table4.toml")),
    ("coftl-mt29f64g08", include_str!("../../../../presets/coftl-mt29f64g08.toml")),
    ("mu-ftl-mlc", include_str!("../../../../presets/mu-ftl-mlc.toml")),
    ("modern-tlc", include_str!("../../../../presets/modern-tlc.toml")),
];

/// Names of the compiled-in presets.
pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

/// The TOML text of a preset, if one has this name.
pub fn preset_source(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}
