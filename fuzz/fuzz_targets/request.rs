//! One line a brigd client sends: decoding never panics, and what decodes
//! was strict JSON with no key twice.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|line: &[u8]| {
    if brig::proto::parse_request(line).is_ok() {
        assert!(serde_json::from_slice::<serde_json::Value>(line).is_ok(), "{:?}", String::from_utf8_lossy(line));
    }
});
