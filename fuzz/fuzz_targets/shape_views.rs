//! qr-core's shapes and batch views on arbitrary sizes and buffer lengths.
#![no_main]

#[path = "../../crates/qr-verify/tests/common/fuzz_check/decode.rs"]
#[allow(dead_code)]
mod decode;
#[path = "../../crates/qr-verify/tests/common/fuzz_check/shape_views.rs"]
mod shape_views;

libfuzzer_sys::fuzz_target!(|data: &[u8]| shape_views::check(data));
