//! A profile file: parsing and validation never panic, and a profile brig
//! accepts yields mounts a runtime's argument can carry.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(profile) = brig::profile::parse_bytes(data, "fuzz.yaml") else { return };
    let carried = |s: &str| !s.contains([',', ':', '"']) && !s.chars().any(char::is_control);
    for m in profile.tmpfs_mounts() {
        assert!(carried(&m.target), "{:?}", m.target);
    }
    for m in profile.hostmounts() {
        assert!(carried(&m.target) && carried(&m.path), "{m:?}");
        assert!(!m.path.starts_with(".brig-keep"), "{m:?}");
        let _ = profile.host_side(&m.path);
    }
    assert!(profile.guest_home.starts_with('/'), "{:?}", profile.guest_home);
});
