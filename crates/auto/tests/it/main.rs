//! The integration tests of `auto`, in one binary: one link instead of one per
//! file (faster builds, a fraction of the disk). Each module is what was a test file.

mod common;

mod decisions;
mod hold;
mod limits_and_marks;
mod neighbours;
mod overdue_and_empty;
mod properties;
mod pruning;
mod restore_and_clock;
mod state_and_input;
mod triggers;
