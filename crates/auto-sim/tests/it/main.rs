//! The integration tests of `auto-sim`, in one binary: one link instead of one per
//! file (faster builds, a fraction of the disk). Each module is what was a test file.

mod examples;
mod paused;
mod runner;
mod scenario;
