//! The client's integration tests, in one binary.

mod auto_live;
