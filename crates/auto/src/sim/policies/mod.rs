//! Models of peers' selection policies, for comparison in the simulator.
