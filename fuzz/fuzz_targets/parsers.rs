//! The command-line parsers: Spec, Case and Set from arbitrary strings.
#![no_main]

#[path = "../../crates/qr-verify/tests/common/fuzz_check/decode.rs"]
#[allow(dead_code)]
mod decode;
#[path = "../../crates/qr-verify/tests/common/fuzz_check/parsers.rs"]
#[allow(dead_code)]
mod parsers;

libfuzzer_sys::fuzz_target!(|data: &[u8]| parsers::check(data));
