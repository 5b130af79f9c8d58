//! A ref as typed on the command line, with or without the retiring
//! `--name`: parsing never panics, and a ref brig accepts names a sandbox
//! every runtime can take apart from the length rule the plan applies, and
//! reads back to the same session.
#![no_main]

use std::sync::LazyLock;

use brig::environment::Environment;
use brig::profile::Registry;
use brig::session::Session;
use libfuzzer_sys::fuzz_target;

static REGISTRY: LazyLock<Registry> =
    LazyLock::new(|| Registry::load(&Environment::from_pairs([("HOME", "/nonexistent")])));

fuzz_target!(|input: (&str, Option<&str>)| {
    let (typed, name) = input;
    let Ok((session, _)) = Session::parse_with_name(typed, name, &*REGISTRY) else { return };
    let sandbox = session.sandbox();
    assert!(sandbox.starts_with("brig-"), "{sandbox:?}");
    assert!(
        sandbox.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'_')),
        "{sandbox:?} from {typed:?}"
    );
    let again = Session::parse(&session.canonical_ref(), &*REGISTRY).expect("a canonical ref parses");
    assert_eq!(again.sandbox(), sandbox);
});
