//! The integration tests of switchyard-auto-ffi, one module per topic: the committed
//! header matches the code (`header`), and a C program drives the library (`c_abi`).

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests, benchmarks and tools time real processes by the wall clock"
)]

mod c_abi;
mod header;
