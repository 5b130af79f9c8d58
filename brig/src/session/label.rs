//! The label slug rule: how any string becomes a label usable in a sandbox name.

/// The slug of `text`: lowercased, every character outside `[A-Za-z0-9._-]`
/// replaced by `-`, runs of `-` collapsed, and leading and trailing `.` and
/// `-` trimmed. There is no length cap: the runtime, not brig, decides how long
/// a sandbox name may be, and a silently shortened label could make two
/// sessions share one home.
///
/// The result may be empty (`"---"`, `"!!"`); callers refuse that.
pub fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars().flat_map(char::to_lowercase) {
        let ch = if ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-') { ch } else { '-' };
        if ch == '-' && out.ends_with('-') {
            continue;
        }
        out.push(ch);
    }
    out.trim_matches(['.', '-']).to_owned()
}

/// Whether `label` is already its own slug, i.e. usable as typed.
pub fn is_slug(label: &str) -> bool {
    !label.is_empty() && slug(label) == label
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("refactor", "refactor")]
    #[case("Refactor", "refactor")]
    #[case("Refactor Sprint", "refactor-sprint")]
    #[case("a  b\tc", "a-b-c")]
    #[case("a--b", "a-b")]
    #[case("a_b.c-d", "a_b.c-d")]
    #[case("-a-", "a")]
    #[case(".a.", "a")]
    #[case("..-a-..", "a")]
    #[case("a..b", "a..b")]
    #[case("a-.-b", "a-.-b")]
    #[case("ÄÖü x", "x")]
    #[case("café", "caf")]
    #[case("x/y", "x-y")]
    #[case("a@b", "a-b")]
    #[case("---", "")]
    #[case("!!", "")]
    #[case("", "")]
    #[case("v1.2", "v1.2")]
    #[case("ABC123", "abc123")]
    fn slug_table(#[case] input: &str, #[case] want: &str) {
        assert_eq!(slug(input), want);
    }

    #[test]
    fn no_length_cap() {
        let long = "a".repeat(300);
        assert_eq!(slug(&long), long);
    }

    #[rstest]
    #[case("refactor", true)]
    #[case("v1.2", true)]
    #[case("Refactor", false)]
    #[case("a--b", false)]
    #[case("-a", false)]
    #[case("", false)]
    fn is_slug_table(#[case] label: &str, #[case] want: bool) {
        assert_eq!(is_slug(label), want);
    }
}
