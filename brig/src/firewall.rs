//! Host isolation for `isolated` sandboxes (decision 16), with the host's
//! nftables: one table per sandbox, `inet brig_<sandbox>`, whose rules
//! refuse what comes in on the sandbox's bridge for the host itself (its
//! every address, the bridge gateway included, but for DNS to the gateway)
//! and what the host would forward from it to another local bridge (every
//! other sandbox network, shared or isolated), and drop new connections
//! forwarded into it from one. Traffic to the internet, forwarded through
//! the host's uplink, is left as the runtime set it up.
//!
//! The table is written in one `nft -f` transaction before the sandbox
//! boots and again before it starts, so no moment passes with the sandbox
//! running and the rules missing, and a rebooted host gets them back; it
//! goes with the sandbox's network. nftables tables are independent: other
//! firewalls' rules (the runtime's, the host's) are untouched, and any drop
//! here is final whatever they accept.
//!
//! Rootless podman keeps its sandbox networks in a network namespace of the
//! user's (the "rootless netns"), which reaches the host through
//! slirp4netns: a connection to any host address leaves it as the user's
//! own socket. brig writes the same table there (`podman unshare
//! --rootless-netns nft`), where the user holds the network capability, and
//! the forward chain also refuses the host's own addresses and the subnets
//! of its other bridges, which from there are destinations like any other.

use std::net::IpAddr;
use std::path::PathBuf;

use crate::environment::Environment;
use crate::process::Command;

/// How long `nft` may take: it talks to the kernel only (through podman,
/// which may first set its namespace up, when rootless).
const NFT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// Where brig writes a sandbox's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writer {
    /// The host's own nftables, as root.
    Host { nft: PathBuf },
    /// Rootless podman's network namespace, entered with `podman unshare
    /// --rootless-netns`.
    RootlessPodman { podman: PathBuf, nft: PathBuf },
}

impl Writer {
    pub fn describe(&self) -> String {
        match self {
            Writer::Host { nft } => format!("the host's nftables ({})", nft.display()),
            Writer::RootlessPodman { nft, .. } => {
                format!("nftables in rootless podman's network namespace ({}, through podman unshare)", nft.display())
            }
        }
    }
}

/// A sandbox network's bridge on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bridge {
    /// The host interface, e.g. `br-f9a62fd0e670` or `podman1`.
    pub interface: String,
    /// The bridge's gateway addresses: where the guest's DNS is answered.
    pub gateways: Vec<IpAddr>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "the isolated network of {sandbox} cannot be kept from the host: {why}; run brig as root with nftables installed (`nft`), or choose --network shared (no host isolation) or --network offline"
    )]
    Unenforceable { sandbox: String, why: String },
    #[error("the host firewall refused brig's rules for {sandbox}: {said}")]
    Refused { sandbox: String, said: String },
    #[error("the network of {sandbox} has no bridge brig can name ({why})")]
    NoBridge { sandbox: String, why: String },
}

/// The table of one sandbox: `brig_` and its name as it is. nft takes
/// letters, digits, `.`, `-` and `_` in a table's name, which is all a
/// sandbox name may hold, so two sandboxes never share a table (a name
/// with anything else, which brig never makes, has it replaced by `_`).
pub fn table(sandbox: &str) -> String {
    let body: String = sandbox
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' })
        .collect();
    format!("brig_{body}")
}

/// The interfaces the host's default routes leave by: forwarding to them is
/// the sandbox's way to the internet, even when one is itself a bridge.
pub fn uplinks() -> Vec<String> {
    let routes = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    let mut out: Vec<String> = routes
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (iface, destination) = (fields.next()?, fields.next()?);
            let mask = fields.nth(5)?;
            (destination == "00000000" && mask == "00000000").then(|| iface.to_owned())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// An interface name as nft reads it inside double quotes: the runtimes
/// name bridges with letters, digits, `-`, `_` and `.`; anything else is
/// refused rather than quoted.
fn quoted(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= 15
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    ok.then(|| format!("\"{name}\""))
}

/// The nameservers the host resolves with, but for its loopback ones: the
/// addresses a guest that copies the host's resolv.conf asks, let through
/// on port 53 under a policy whose default is deny.
pub fn host_nameservers() -> Vec<IpAddr> {
    let text = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("nameserver"))
        .filter_map(|rest| rest.trim().parse::<IpAddr>().ok())
        .filter(|ip| !ip.is_loopback())
        .collect()
}

/// An egress policy's rules, for the forward chain: what the sandbox opens
/// beyond the host. Replies pass; DNS to the host's resolvers passes; then
/// deny, then allow, then the default. A refused TCP connection gets a
/// reset, anything else an ICMP refusal, so a client fails at once rather
/// than timing out.
fn egress_rules(iface: &str, egress: &crate::policy::Resolved, nameservers: &[IpAddr]) -> String {
    let family = |ip: &IpAddr| if ip.is_ipv4() { "ip" } else { "ip6" };
    let refuse = |matcher: &str| {
        format!(
            "    iifname {iface} {matcher}meta l4proto tcp reject with tcp reset\n    iifname {iface} {matcher}reject with icmpx admin-prohibited\n"
        )
    };
    let mut out = format!("    iifname {iface} ct state established,related accept\n");
    if egress.default == crate::policy::Default::Deny {
        for ns in nameservers {
            for proto in ["udp", "tcp"] {
                out.push_str(&format!("    iifname {iface} {} daddr {ns} {proto} dport 53 accept\n", family(ns)));
            }
        }
    }
    for net in &egress.deny {
        out.push_str(&refuse(&format!("{} daddr {net} ", family(&net.addr))));
    }
    for net in &egress.allow {
        out.push_str(&format!("    iifname {iface} {} daddr {net} accept\n", family(&net.addr)));
    }
    if egress.default == crate::policy::Default::Deny {
        out.push_str(&refuse(""));
    }
    out
}

/// The forward rules that keep the host's addresses and other bridges'
/// subnets from the sandbox where they are forwarded destinations (the
/// rootless namespace); the sandbox's own subnet, which holds its gateway,
/// is left out.
fn host_rules(iface: &str, bridge: &Bridge, host: &HostView) -> String {
    let own = |net: &crate::policy::Net| bridge.gateways.iter().any(|g| net.contains(*g));
    let mut out = String::new();
    let family = |ip: &IpAddr| if ip.is_ipv4() { "ip" } else { "ip6" };
    for addr in &host.addresses {
        out.push_str(&format!(
            "    iifname {iface} {} daddr {addr} reject with icmpx admin-prohibited\n",
            family(addr)
        ));
    }
    for net in host.bridge_nets.iter().filter(|n| !own(n)) {
        out.push_str(&format!("    iifname {iface} ip daddr {net} reject with icmpx admin-prohibited\n"));
    }
    out
}

/// The whole transaction: (re)create the sandbox's table with its rules.
pub fn ruleset(
    sandbox: &str,
    bridge: &Bridge,
    uplinks: &[String],
    host: &HostView,
    egress: Option<&crate::policy::Resolved>,
) -> Result<String, Error> {
    let no_bridge = |why: &str| Error::NoBridge { sandbox: sandbox.to_owned(), why: why.to_owned() };
    let iface = quoted(&bridge.interface).ok_or_else(|| no_bridge("its interface name is not one nft can match"))?;
    let mut others = vec![iface.clone()];
    others.extend(uplinks.iter().filter_map(|u| quoted(u)));
    let others = others.join(", ");
    let table = table(sandbox);
    let mut dns = String::new();
    for gateway in &bridge.gateways {
        let family = if gateway.is_ipv4() { "ip" } else { "ip6" };
        for proto in ["udp", "tcp"] {
            dns.push_str(&format!("    iifname {iface} {family} daddr {gateway} {proto} dport 53 accept\n"));
        }
    }
    Ok(format!(
        "add table inet {table}\n\
         delete table inet {table}\n\
         table inet {table} {{\n\
         \x20 chain input {{\n\
         \x20   type filter hook input priority filter - 5; policy accept;\n\
         \x20   iifname {iface} ct state established,related accept\n\
         {dns}\
         \x20   iifname {iface} reject with icmpx admin-prohibited\n\
         \x20 }}\n\
         \x20 chain forward {{\n\
         \x20   type filter hook forward priority filter - 5; policy accept;\n\
         \x20   iifname {iface} oifname != {{ {others} }} meta oifkind \"bridge\" reject with icmpx admin-prohibited\n\
         \x20   oifname {iface} iifname != {{ {others} }} meta iifkind \"bridge\" ct state new drop\n\
         {host}\
         {egress}\
         \x20 }}\n\
         }}\n",
        host = host_rules(&iface, bridge, host),
        egress = egress.map(|e| egress_rules(&iface, e, &host_nameservers())).unwrap_or_default(),
    ))
}

fn nft(env: &Environment) -> Option<PathBuf> {
    env.find_on_path("nft").or_else(|| {
        ["/usr/sbin/nft", "/sbin/nft"].into_iter().map(PathBuf::from).find(|p| crate::environment::is_executable(p))
    })
}

/// Where brig would write the rules of a sandbox of this runtime, or why
/// it cannot: as root, the host's nftables; as a user on podman, podman's
/// rootless namespace, where that user's sandboxes live.
pub fn capable(env: &Environment, runtime: crate::runtime::Kind, bin: &std::path::Path) -> Result<Writer, String> {
    let nft = nft(env).ok_or_else(|| "there is no `nft` on PATH or in /usr/sbin".to_owned())?;
    if rustix::process::geteuid().is_root() {
        return Ok(Writer::Host { nft });
    }
    match runtime {
        crate::runtime::Kind::Podman => Ok(Writer::RootlessPodman { podman: bin.to_owned(), nft }),
        other => Err(format!(
            "the host's firewall takes rules from root only, and brig runs as another user on {other}, whose networks are the host's"
        )),
    }
}

/// Write the sandbox's table, replacing any before it, with the egress
/// policy's rules when it has one.
pub fn apply(
    writer: &Writer,
    sandbox: &str,
    bridge: &Bridge,
    egress: Option<&crate::policy::Resolved>,
) -> Result<(), Error> {
    let script = ruleset(sandbox, bridge, &uplinks(), &HostView::read(), egress)?;
    load(writer, sandbox, script)
}

/// Remove the sandbox's table where rules for a sandbox of `runtime` are
/// written; where brig can write none, it wrote none.
pub fn remove_for(env: &Environment, runtime: &dyn crate::runtime::Runtime, sandbox: &str) -> Result<(), Error> {
    match capable(env, runtime.kind(), runtime.bin()) {
        Ok(writer) => remove(&writer, sandbox),
        Err(_) => Ok(()),
    }
}

/// The writer for a sandbox of `runtime`, or the refusal of its isolation.
pub fn writer_for(env: &Environment, runtime: &dyn crate::runtime::Runtime, sandbox: &str) -> Result<Writer, Error> {
    capable(env, runtime.kind(), runtime.bin()).map_err(|why| Error::Unenforceable { sandbox: sandbox.to_owned(), why })
}

/// Remove the sandbox's table; one that is not there is already gone.
pub fn remove(writer: &Writer, sandbox: &str) -> Result<(), Error> {
    let table = table(sandbox);
    // `add` first makes the delete succeed whether or not the table was there.
    load(writer, sandbox, format!("add table inet {table}\ndelete table inet {table}\n"))
}

/// One `nft -f -` transaction: all of it or none.
fn load(writer: &Writer, sandbox: &str, script: String) -> Result<(), Error> {
    let cmd = match writer {
        Writer::Host { nft } => Command::new(nft),
        Writer::RootlessPodman { podman, nft } => {
            Command::new(podman).args(["unshare", "--rootless-netns"]).path_arg(nft)
        }
    };
    cmd.args(["-f", "-"]).stdin(script.into_bytes()).timeout(NFT_TIMEOUT).output().map(drop).map_err(|e| {
        Error::Refused {
            sandbox: sandbox.to_owned(),
            said: e.stderr().map(crate::process::first_lines).unwrap_or_else(|| e.to_string()),
        }
    })
}

/// The host as a sandbox must not reach it: its own addresses, and the
/// subnets of its bridges that are not uplinks (other sandbox networks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostView {
    pub addresses: Vec<IpAddr>,
    pub bridge_nets: Vec<crate::policy::Net>,
}

impl HostView {
    /// Read from /proc and /sys of brig's own namespace, the host's.
    pub fn read() -> HostView {
        let mut addresses = local_v4(&std::fs::read_to_string("/proc/net/fib_trie").unwrap_or_default());
        addresses.extend(local_v6(&std::fs::read_to_string("/proc/net/if_inet6").unwrap_or_default()));
        addresses.sort();
        addresses.dedup();
        let uplinks = uplinks();
        let routes = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
        let bridge_nets = bridge_routes(&routes)
            .into_iter()
            .filter(|(iface, _)| !uplinks.contains(iface))
            .filter(|(iface, _)| std::path::Path::new("/sys/class/net").join(iface).join("bridge").exists())
            .map(|(_, net)| net)
            .collect();
        HostView { addresses, bridge_nets }
    }
}

/// The host's own IPv4 addresses: `/32 host LOCAL` leaves of the FIB.
fn local_v4(fib_trie: &str) -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut last: Option<IpAddr> = None;
    for line in fib_trie.lines() {
        let text = line.trim_start_matches([' ', '|', '-', '+']);
        if let Some(addr) = text.split_whitespace().next().and_then(|w| w.parse::<IpAddr>().ok()) {
            last = Some(addr);
        } else if text.trim() == "/32 host LOCAL"
            && let Some(addr) = last
        {
            out.push(addr);
        }
    }
    out
}

/// The host's own IPv6 addresses, from `/proc/net/if_inet6`.
fn local_v6(if_inet6: &str) -> Vec<IpAddr> {
    if_inet6
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter_map(|hex| u128::from_str_radix(hex, 16).ok())
        .map(|n| IpAddr::V6(n.into()))
        .collect()
}

/// (interface, network) of each IPv4 route that is not a default route.
fn bridge_routes(route: &str) -> Vec<(String, crate::policy::Net)> {
    route
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (iface, dest, mask) = (f.first()?, f.get(1)?, f.get(7)?);
            // /proc/net/route writes addresses in the host's byte order.
            let dest = u32::from_str_radix(dest, 16).ok()?.swap_bytes();
            let mask = u32::from_str_radix(mask, 16).ok()?.swap_bytes();
            (mask != 0).then(|| {
                let net = crate::policy::Net { addr: IpAddr::V4(dest.into()), prefix: mask.count_ones() as u8 };
                ((*iface).to_owned(), net)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bridge() -> Bridge {
        Bridge { interface: "br-f9a62fd0e670".into(), gateways: vec!["10.4.1.1".parse().unwrap()] }
    }

    #[test]
    fn every_sandbox_has_a_table_of_its_own() {
        assert_eq!(table("brig-lab-agent-x.y"), "brig_brig-lab-agent-x.y");
        let names = ["brig-a-b", "brig-a.b", "brig-a_b", "brig-A-b"];
        let tables: std::collections::BTreeSet<String> = names.iter().map(|n| table(n)).collect();
        assert_eq!(tables.len(), names.len());
    }

    #[test]
    fn the_ruleset_replaces_the_table_and_names_bridge_gateway_and_uplinks() {
        let rules = ruleset("brig-a", &bridge(), &["eth0".into()], &HostView::default(), None).unwrap();
        assert!(rules.starts_with("add table inet brig_brig-a\ndelete table inet brig_brig-a\n"), "{rules}");
        assert!(rules.contains("iifname \"br-f9a62fd0e670\" ip daddr 10.4.1.1 udp dport 53 accept"), "{rules}");
        assert!(rules.contains("oifname != { \"br-f9a62fd0e670\", \"eth0\" } meta oifkind \"bridge\""), "{rules}");
        assert!(rules.contains("iifname \"br-f9a62fd0e670\" reject"), "{rules}");
    }

    #[test]
    fn an_interface_nft_could_misread_is_refused() {
        for bad in ["br\" accept", "", "a b", "waytoolonginterfacename"] {
            let mut b = bridge();
            b.interface = bad.into();
            assert!(
                matches!(ruleset("brig-a", &b, &[], &HostView::default(), None), Err(Error::NoBridge { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn an_egress_policy_denies_then_allows_then_defaults_after_replies_and_dns() {
        use crate::policy::{Default, Net, Resolved};
        let egress = Resolved {
            default: Default::Deny,
            allow: vec![Net::parse("198.51.100.0/24").unwrap()],
            deny: vec![Net::parse("198.51.100.3").unwrap(), Net::parse("2001:db8::/32").unwrap()],
            unresolved: Vec::new(),
        };
        let rules = egress_rules("\"br0\"", &egress, &["192.0.2.53".parse().unwrap()]);
        let at = |needle: &str| rules.find(needle).unwrap_or_else(|| panic!("{needle} missing from {rules}"));
        let replies = at("ct state established,related accept");
        let dns = at("ip daddr 192.0.2.53 udp dport 53 accept");
        let deny = at("ip daddr 198.51.100.3/32 meta l4proto tcp reject with tcp reset");
        let deny6 = at("ip6 daddr 2001:db8::/32 reject with icmpx");
        let allow = at("ip daddr 198.51.100.0/24 accept");
        let default = at("iifname \"br0\" meta l4proto tcp reject with tcp reset");
        assert!(replies < dns && dns < deny && deny < deny6 && deny6 < allow && allow < default, "{rules}");
        let open = Resolved { default: Default::Allow, ..egress };
        let rules = egress_rules("\"br0\"", &open, &["192.0.2.53".parse().unwrap()]);
        assert!(!rules.contains("dport 53") && !rules.contains("iifname \"br0\" reject"), "{rules}");
    }

    #[test]
    fn the_host_is_read_from_proc_in_its_byte_order() {
        let fib = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n     +-- 192.0.2.0/24 2 0 2\n        |-- 192.0.2.2\n           /32 host LOCAL\n        |-- 192.0.2.255\n           /32 link BROADCAST\n";
        assert_eq!(local_v4(fib), vec!["192.0.2.2".parse::<IpAddr>().unwrap()]);
        let v6 = "fe800000000000000000000000000001 02 40 20 80     eth0\n";
        assert_eq!(local_v6(v6), vec!["fe80::1".parse::<IpAddr>().unwrap()]);
        let route = "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n\
                     eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\n\
                     podman1\t0003590A\t00000000\t0001\t0\t0\t0\t00FFFFFF\n";
        let routes = bridge_routes(route);
        assert_eq!(routes.len(), 1);
        assert_eq!((routes[0].0.as_str(), routes[0].1.to_string().as_str()), ("podman1", "10.89.3.0/24"));
    }

    #[test]
    fn the_host_and_other_bridges_are_refused_but_the_own_subnet_is_not() {
        let host = HostView {
            addresses: vec!["192.0.2.2".parse().unwrap()],
            bridge_nets: vec![
                crate::policy::Net::parse("10.4.1.0/24").unwrap(),
                crate::policy::Net::parse("10.89.3.0/24").unwrap(),
            ],
        };
        let rules = host_rules("\"br0\"", &bridge(), &host);
        assert!(rules.contains("ip daddr 192.0.2.2 reject"), "{rules}");
        assert!(rules.contains("ip daddr 10.89.3.0/24 reject"), "{rules}");
        assert!(!rules.contains("10.4.1.0/24"), "the sandbox's own subnet: {rules}");
    }

    #[test]
    fn uplinks_come_from_default_routes() {
        // Whatever this host has, every uplink is a plain interface name.
        assert!(uplinks().iter().all(|u| quoted(u).is_some()));
    }
}
