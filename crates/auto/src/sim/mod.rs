//! The virtual-time simulator (`spec/auto-simulation.md`).

pub mod policies;
