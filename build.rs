//! Compiles the stored traces (`spec/vectors/traces/*.json`) into the
//! binary, like `keys.json`, so `procroute conform` runs them from any
//! directory. Writes `$OUT_DIR/stored_traces.rs`: a sorted list of
//! (file name, contents).

use std::fmt::Write as _;

fn main() {
    let dir = std::path::Path::new("spec/vectors/traces");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut out = String::from("&[\n");
    for n in &names {
        let path = std::fs::canonicalize(dir.join(n)).expect("stored trace path");
        println!("cargo:rerun-if-changed={}", path.display());
        let _ = writeln!(
            out,
            "    ({n:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    out.push_str("]\n");
    let dest =
        std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("stored_traces.rs");
    std::fs::write(dest, out).expect("write stored_traces.rs");
}
