//! Trial tokens: short, lowercase, unique within a run and unlikely to
//! collide across concurrent runs, so that every name a trial creates can be
//! found (and cleaned up) by searching for its token.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

static ISSUED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// A fresh token such as `t4k2p9`: `t` and five characters.
///
/// Starting with a letter keeps it a valid label and slug; no issued token
/// contains another, so a name search for one never finds another's.
pub fn fresh() -> String {
    let mut issued = ISSUED.lock().unwrap_or_else(|e| e.into_inner());
    let issued = issued.get_or_insert_with(HashSet::new);
    loop {
        let token = candidate();
        if !issued.contains(&token) {
            issued.insert(token.clone());
            return token;
        }
    }
}

fn candidate() -> String {
    // RandomState is seeded per process from the OS; the clock and pid make
    // two runs started in the same instant differ too.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    let mut n = hasher.finish();
    let mut token = String::from("t");
    for _ in 0..5 {
        token.push(ALPHABET[(n % ALPHABET.len() as u64) as usize] as char);
        n /= ALPHABET.len() as u64;
    }
    token
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_short_lowercase_and_distinct() {
        let tokens: Vec<String> = (0..200).map(|_| fresh()).collect();
        for t in &tokens {
            assert_eq!(t.len(), 6, "{t}");
            assert!(t.starts_with('t'), "{t}");
            assert!(t.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()), "{t}");
        }
        let distinct: HashSet<&String> = tokens.iter().collect();
        assert_eq!(distinct.len(), tokens.len());
    }
}
