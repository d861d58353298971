//! Criterion benchmarks for the Auto engine.
fn main() {}
