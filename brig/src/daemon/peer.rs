//! The peer check: only the user who runs brigd may talk to it.
//!
//! The socket's mode already keeps other users out, but a mode can be
//! changed, a directory can be shared, and root ignores modes. The kernel's
//! record of the connecting process's uid cannot be forged, so every
//! connection is checked against it. Root is not exempt: a daemon that holds
//! a user's credentials serves that user only.

/// A connection from a uid other than the daemon's own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("connection from uid {peer} refused: this socket serves only its owner, uid {owner}")]
pub struct Refused {
    pub peer: u32,
    pub owner: u32,
}

/// Accept `peer` only when it is `owner`.
pub fn check(peer: u32, owner: u32) -> Result<(), Refused> {
    if peer == owner { Ok(()) } else { Err(Refused { peer, owner }) }
}

/// The uid this daemon runs as.
pub fn own_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(1000, 1000, true)]
    #[case(1001, 1000, false)]
    // Root is refused like anyone else.
    #[case(0, 1000, false)]
    #[case(1000, 0, false)]
    #[case(0, 0, true)]
    fn only_the_owner_is_served(#[case] peer: u32, #[case] owner: u32, #[case] served: bool) {
        assert_eq!(check(peer, owner).is_ok(), served);
    }

    #[test]
    fn the_refusal_names_both_uids() {
        let refused = check(1001, 1000).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "connection from uid 1001 refused: this socket serves only its owner, uid 1000"
        );
        let line = crate::proto::Response::failure(1, refused.to_string()).to_line();
        assert_eq!(
            line,
            "{\"v\":1,\"ok\":false,\"code\":1,\"error\":\"connection from uid 1001 refused: this socket serves only its owner, uid 1000\"}\n"
        );
    }
}
