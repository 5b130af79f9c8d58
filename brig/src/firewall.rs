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

use std::net::IpAddr;
use std::path::PathBuf;

use crate::environment::Environment;
use crate::process::Command;

/// How long `nft` may take: it talks to the kernel only.
const NFT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

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

/// The whole transaction: (re)create the sandbox's table with its rules.
pub fn ruleset(
    sandbox: &str,
    bridge: &Bridge,
    uplinks: &[String],
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
         {egress}\
         \x20 }}\n\
         }}\n",
        egress = egress.map(|e| egress_rules(&iface, e, &host_nameservers())).unwrap_or_default(),
    ))
}

fn nft(env: &Environment) -> Option<PathBuf> {
    env.find_on_path("nft").or_else(|| {
        ["/usr/sbin/nft", "/sbin/nft"].into_iter().map(PathBuf::from).find(|p| crate::environment::is_executable(p))
    })
}

/// The `nft` brig would write rules with, or why it cannot.
pub fn capable(env: &Environment) -> Result<PathBuf, String> {
    if !rustix::process::geteuid().is_root() {
        return Err("the host's firewall takes rules from root only, and brig runs as another user".into());
    }
    nft(env).ok_or_else(|| "there is no `nft` on PATH or in /usr/sbin".into())
}

/// Write the sandbox's table, replacing any before it, with the egress
/// policy's rules when it has one.
pub fn apply(
    env: &Environment,
    sandbox: &str,
    bridge: &Bridge,
    egress: Option<&crate::policy::Resolved>,
) -> Result<(), Error> {
    let nft = capable(env).map_err(|why| Error::Unenforceable { sandbox: sandbox.to_owned(), why })?;
    load(&nft, sandbox, ruleset(sandbox, bridge, &uplinks(), egress)?)
}

/// Remove the sandbox's table; one that is not there is already gone.
pub fn remove(env: &Environment, sandbox: &str) -> Result<(), Error> {
    let Ok(nft) = capable(env) else { return Ok(()) };
    let table = table(sandbox);
    // `add` first makes the delete succeed whether or not the table was there.
    load(&nft, sandbox, format!("add table inet {table}\ndelete table inet {table}\n"))
}

/// One `nft -f -` transaction: all of it or none.
fn load(nft: &std::path::Path, sandbox: &str, script: String) -> Result<(), Error> {
    Command::new(nft).args(["-f", "-"]).stdin(script.into_bytes()).timeout(NFT_TIMEOUT).output().map(drop).map_err(
        |e| Error::Refused {
            sandbox: sandbox.to_owned(),
            said: e.stderr().map(crate::process::first_lines).unwrap_or_else(|| e.to_string()),
        },
    )
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
        let rules = ruleset("brig-a", &bridge(), &["eth0".into()], None).unwrap();
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
            assert!(matches!(ruleset("brig-a", &b, &[], None), Err(Error::NoBridge { .. })), "{bad:?}");
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
    fn uplinks_come_from_default_routes() {
        // Whatever this host has, every uplink is a plain interface name.
        assert!(uplinks().iter().all(|u| quoted(u).is_some()));
    }
}
