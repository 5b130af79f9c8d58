//! Published ports (spec 05 §2.6): a guest port made reachable at a host
//! address, so a user can open the dev server an agent started. The docker
//! grammar: `P`, `H:G` or `ADDR:H:G`, each with an optional `/tcp` or
//! `/udp`; an IPv4 address, loopback (`127.0.0.1`) unless one is given.

use std::net::Ipv4Addr;

/// One publication.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Publish {
    pub addr: Ipv4Addr,
    pub host: u16,
    pub guest: u16,
    pub udp: bool,
}

impl Publish {
    pub fn parse(text: &str) -> Result<Publish, String> {
        let bad = |why: &str| {
            format!("--publish {text:?}: {why}; write PORT, HOST:GUEST or ADDRESS:HOST:GUEST, with /tcp or /udp")
        };
        let (ports, udp) = match text.rsplit_once('/') {
            Some((ports, "tcp")) => (ports, false),
            Some((ports, "udp")) => (ports, true),
            Some(_) => return Err(bad("the protocol is tcp or udp")),
            None => (text, false),
        };
        let port = |p: &str| match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
            _ => Err(bad(&format!("{p:?} is not a port from 1 to 65535"))),
        };
        let parts: Vec<&str> = ports.split(':').collect();
        let (addr, host, guest) = match parts.as_slice() {
            [p] => (Ipv4Addr::LOCALHOST, port(p)?, port(p)?),
            [h, g] => (Ipv4Addr::LOCALHOST, port(h)?, port(g)?),
            [a, h, g] => {
                let addr = a.parse::<Ipv4Addr>().map_err(|_| bad(&format!("{a:?} is not an IPv4 address")))?;
                (addr, port(h)?, port(g)?)
            }
            _ => return Err(bad("too many ':'")),
        };
        Ok(Publish { addr, host, guest, udp })
    }

    fn proto(&self) -> &'static str {
        if self.udp { "udp" } else { "tcp" }
    }

    /// Reachable from more than this host: an address other than loopback.
    pub fn beyond_host(&self) -> bool {
        !self.addr.is_loopback()
    }

    /// Two publications that would listen on one host port: the same port
    /// and protocol, on the same address or with either on every address.
    pub fn overlaps(&self, other: &Publish) -> bool {
        self.host == other.host
            && self.udp == other.udp
            && (self.addr == other.addr || self.addr.is_unspecified() || other.addr.is_unspecified())
    }

    /// Whether the host port is free now: a listener bound and let go.
    pub fn free_on_host(&self) -> Result<(), std::io::Error> {
        let at = (self.addr, self.host);
        if self.udp { std::net::UdpSocket::bind(at).map(drop) } else { std::net::TcpListener::bind(at).map(drop) }
    }

    /// The line `info` shows.
    pub fn describe(&self) -> String {
        let mut line = format!("{}:{} → guest {}/{}", self.addr, self.host, self.guest, self.proto());
        if self.beyond_host() {
            line.push_str(" (reachable from the network, not only this host)");
        }
        line
    }
}

/// `ADDRESS:HOST:GUEST/PROTO`: the runtimes' `--publish` form, and brig's
/// label.
impl std::fmt::Display for Publish {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}/{}", self.addr, self.host, self.guest, self.proto())
    }
}

impl serde::Serialize for Publish {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Parse a label's comma-joined list; an entry brig did not write is left out.
pub fn from_label(text: &str) -> Vec<Publish> {
    text.split(',').filter(|p| !p.is_empty()).filter_map(|p| Publish::parse(p).ok()).collect()
}

pub fn to_label(list: &[Publish]) -> String {
    list.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

/// The first two publications of a list that would share a host port.
pub fn overlapping(list: &[Publish]) -> Option<(Publish, Publish)> {
    list.iter().enumerate().find_map(|(i, a)| list[i + 1..].iter().find(|b| a.overlaps(b)).map(|b| (*a, *b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("8080", "127.0.0.1:8080:8080/tcp")]
    #[case("3000:8080", "127.0.0.1:3000:8080/tcp")]
    #[case("0.0.0.0:3000:8080/udp", "0.0.0.0:3000:8080/udp")]
    #[case("192.0.2.1:1:65535/tcp", "192.0.2.1:1:65535/tcp")]
    fn the_docker_grammar_with_loopback_by_default(#[case] text: &str, #[case] want: &str) {
        let p = Publish::parse(text).unwrap();
        assert_eq!(p.to_string(), want);
        assert_eq!(Publish::parse(want).unwrap(), p, "the label form reads back");
    }

    #[rstest]
    #[case("0")]
    #[case("65536")]
    #[case("-1")]
    #[case("+80")]
    #[case("80/sctp")]
    #[case("::1:80:80")]
    #[case("host:80:80")]
    #[case("1:2:3:4")]
    #[case("")]
    #[case("80:")]
    fn anything_else_is_refused(#[case] text: &str) {
        assert!(Publish::parse(text).is_err(), "{text:?}");
    }

    #[test]
    fn overlaps_are_one_port_and_protocol_on_one_or_every_address() {
        let p = |t| Publish::parse(t).unwrap();
        assert!(p("8080").overlaps(&p("8080:9090")));
        assert!(p("0.0.0.0:8080:1").overlaps(&p("127.0.0.1:8080:2")));
        assert!(!p("8080").overlaps(&p("8080/udp")));
        assert!(!p("127.0.0.1:8080:1").overlaps(&p("192.0.2.1:8080:1")));
        assert_eq!(overlapping(&[p("1"), p("2"), p("0.0.0.0:1:5")]), Some((p("1"), p("0.0.0.0:1:5"))));
    }

    #[test]
    fn a_wider_address_is_flagged() {
        assert!(Publish::parse("0.0.0.0:80:80").unwrap().describe().contains("reachable from the network"));
        assert!(!Publish::parse("80").unwrap().describe().contains("reachable"));
    }
}
