//! `include/switchyard_auto.h` is what cbindgen makes of the code, byte for byte.

use std::path::Path;

const BLESS: &str = "SWITCHYARD_BLESS=1 cargo test -p switchyard-auto-ffi --test it header";

/// The header as cbindgen generates it from the crate's source and `cbindgen.toml`.
fn generate(crate_dir: &Path) -> Vec<u8> {
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("cbindgen.toml: {e}"));
    // Parsing the source alone (not `with_crate`) needs no `cargo metadata`, so the test
    // neither locks nor resolves anything.
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen could not generate the header: {e}"));
    let mut out = Vec::new();
    bindings.write(&mut out);
    out
}

#[test]
fn committed_header_matches_the_code() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = crate_dir.join("include/switchyard_auto.h");
    let want = generate(crate_dir);
    if std::env::var_os("SWITCHYARD_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &want).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let got = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; generate it with `{BLESS}`", path.display()));
    if got != want {
        let at = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
        let line = want[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        panic!(
            "{} is out of date (first difference on line {line}): the C ABI changed. \
             Regenerate it with `{BLESS}`, review the diff and commit it",
            path.display()
        );
    }
}
