//! The checks behind every fuzz target, shared with the corpus replay test
//! (`tests/corpus_replay.rs`) so that `cargo test` runs each committed
//! corpus file through exactly what the fuzzer ran. The fuzz crate
//! (`fuzz/`) includes these files with `#[path]`; qr-verify's library does
//! not see them.

pub mod cpu_geqrf;
pub mod cpu_q;
pub mod decode;
pub mod gate_check;
pub mod parsers;
pub mod shape_views;
