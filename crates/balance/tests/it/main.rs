//! The integration tests of `balance`, in one binary: one link instead of one per
//! file (faster builds, a fraction of the disk). Each module is what was a test file.

mod capacity;
mod choose;
mod properties;
