//! `cargo xtask`: the one entry point for tests and benchmarks.

fn main() {
    println!("xtask");
}
