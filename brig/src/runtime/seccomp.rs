//! The seccomp profile brig hands every runtime for a sandbox that shares
//! the host's kernel.
//!
//! A runtime's default profile differs between runtimes and versions
//! (podman's allows the kernel keyring calls, through which a guest read a
//! key from the host root's own keyring). brig's profile is the same
//! everywhere and written in the format nerdctl, podman and docker all
//! read. It allows by default and denies, with `EPERM`, the calls through
//! which a guest could reach beyond its sandbox:
//!
//! - the kernel keyring (`keyctl`, `add_key`, `request_key`), where a host
//!   secret store keeps credentials;
//! - new namespaces (`unshare`, `setns`, `clone` with a namespace flag),
//!   which would hand the guest a user namespace's capabilities and the
//!   kernel surface behind them;
//! - mounts, module loading, kexec, BPF, perf, userfaultfd, io_uring,
//!   handle-based opens, clock and swap changes;
//! - setting a setuid or setgid bit (`chmod`, `open … O_CREAT`, `mknod` and
//!   their relatives with `S_ISUID` or `S_ISGID` in the mode): a file the
//!   guest writes into its home lands on the host with the guest's owner,
//!   root for a rootful runtime, and must not become a setuid program there.
//!
//! `clone3` and `openat2` carry their flags in a structure a filter cannot
//! read; they answer `ENOSYS`, and the C library falls back to `clone` and
//! `openat`, which the filter can read.

use serde_json::{Value, json};

/// The file brig writes its profile to, in its state directory.
pub const FILE_NAME: &str = "seccomp.json";

const EPERM: u32 = 1;
const ENOSYS: u32 = 38;

/// Calls denied whatever their arguments.
const DENIED: &[&str] = &[
    // The kernel keyring.
    "keyctl",
    "add_key",
    "request_key",
    // Namespaces.
    "unshare",
    "setns",
    // Mounts, old and new API.
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    // The kernel itself.
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_by_handle_at",
    "name_to_handle_at",
    "lookup_dcookie",
    "fanotify_init",
    "syslog",
    "acct",
    "quotactl",
    "swapon",
    "swapoff",
    "reboot",
    "vhangup",
    "iopl",
    "ioperm",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "uselib",
    "ustat",
    "sysfs",
    "_sysctl",
    "nfsservctl",
];

/// Calls whose flags live where a filter cannot read them.
const UNREADABLE: &[&str] = &["clone3", "openat2"];

/// `clone`'s namespace flags (its first argument on x86-64 and arm64).
const NAMESPACE_FLAGS: &[u64] = &[
    0x0002_0000, // CLONE_NEWNS
    0x0200_0000, // CLONE_NEWCGROUP
    0x0400_0000, // CLONE_NEWUTS
    0x0800_0000, // CLONE_NEWIPC
    0x1000_0000, // CLONE_NEWUSER
    0x2000_0000, // CLONE_NEWPID
    0x4000_0000, // CLONE_NEWNET
];

/// `S_ISUID` and `S_ISGID`.
const SET_ID_BITS: &[u64] = &[0o4000, 0o2000];

/// The calls that take a file mode, with the index of the mode argument.
const MODE_ARGUMENT: &[(&str, u32)] = &[
    ("chmod", 1),
    ("fchmod", 1),
    ("fchmodat", 2),
    ("fchmodat2", 2),
    ("creat", 1),
    ("open", 2),
    ("openat", 3),
    ("mknod", 1),
    ("mknodat", 2),
];

/// The architectures the filter covers: the native one and the ones its
/// processes can also call the kernel as.
fn architectures() -> &'static [&'static str] {
    if cfg!(target_arch = "aarch64") {
        &["SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"]
    } else {
        &["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"]
    }
}

/// A rule denying `name` when argument `index` has every bit of `bits`.
fn when_set(name: &str, index: u32, bits: u64) -> Value {
    json!({
        "names": [name],
        "action": "SCMP_ACT_ERRNO",
        "errnoRet": EPERM,
        "args": [{"index": index, "value": bits, "valueTwo": bits, "op": "SCMP_CMP_MASKED_EQ"}],
    })
}

/// The profile, as the JSON the runtimes read.
pub fn profile() -> Value {
    let mut rules = vec![
        json!({"names": DENIED, "action": "SCMP_ACT_ERRNO", "errnoRet": EPERM}),
        json!({"names": UNREADABLE, "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS}),
    ];
    rules.extend(NAMESPACE_FLAGS.iter().map(|&flag| when_set("clone", 0, flag)));
    for &(name, index) in MODE_ARGUMENT {
        rules.extend(SET_ID_BITS.iter().map(|&bit| when_set(name, index, bit)));
    }
    json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": architectures(),
        "syscalls": rules,
    })
}

/// The profile's bytes, as brig writes them.
pub fn bytes() -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(&profile()).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules_for(name: &str) -> Vec<Value> {
        let profile = profile();
        profile["syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["names"].as_array().unwrap().iter().any(|n| n == name))
            .cloned()
            .collect()
    }

    #[test]
    fn keyring_calls_are_denied_outright() {
        for name in ["keyctl", "add_key", "request_key"] {
            let rules = rules_for(name);
            assert_eq!(rules.len(), 1, "{name}");
            assert_eq!(rules[0]["action"], "SCMP_ACT_ERRNO");
            assert!(rules[0].get("args").is_none(), "{name} is denied whatever its arguments");
        }
    }

    #[test]
    fn chmod_is_denied_only_with_a_set_id_bit() {
        let rules = rules_for("fchmodat");
        let masks: Vec<u64> = rules.iter().map(|r| r["args"][0]["value"].as_u64().unwrap()).collect();
        assert_eq!(masks, vec![0o4000, 0o2000]);
        assert!(rules.iter().all(|r| r["args"][0]["index"] == 2 && r["args"][0]["op"] == "SCMP_CMP_MASKED_EQ"));
    }

    #[test]
    fn clone_is_denied_for_every_namespace_flag() {
        assert_eq!(rules_for("clone").len(), NAMESPACE_FLAGS.len());
        assert_eq!(rules_for("clone3")[0]["errnoRet"], ENOSYS);
    }

    #[test]
    fn every_call_is_named_once_outside_argument_rules() {
        let mut names: Vec<&str> = DENIED.iter().chain(UNREADABLE).copied().collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
        assert_eq!(profile()["defaultAction"], "SCMP_ACT_ALLOW");
    }
}
