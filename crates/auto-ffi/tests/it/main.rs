//! The integration tests of switchyard-auto-ffi, one module per topic: the committed
//! header matches the code (`header`), and a C program drives the library (`c_abi`).

mod c_abi;
mod header;
