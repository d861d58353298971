//! The integration tests of `testkit`, in one binary: one link instead of one per
//! file (faster builds, a fraction of the disk). Each module is what was a test file.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests, benchmarks and tools time real processes by the wall clock"
)]

mod browser;
mod loadgen;
mod lossy;
mod netns;
mod postgres;
mod schemathesis;
mod sing_box;
mod vps;
