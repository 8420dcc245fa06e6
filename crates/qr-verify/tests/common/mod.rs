//! Helpers shared by qr-verify's integration tests.

pub mod fuzz_check;
