//! The KVM probe behind `brig doctor`'s hypervisor line: open `/dev/kvm`, ask
//! its API version, and run a guest of five bytes of real-mode code that
//! writes one byte to an I/O port and halts.
//!
//! A guest that halts proves the kernel creates a VM and runs a vCPU on this
//! host. It does not prove that a Linux guest boots: on a nested host the
//! vCPU runs these five bytes and still stops on an instruction the outer
//! hypervisor will not emulate (measured: a kernel dies on `lock cmpxchg16b`
//! with "KVM internal error"). So the probe is necessary, not sufficient, and
//! doctor says so and points at `brig doctor --boot`.
//!
//! This is the one module of the library that needs `unsafe`: the KVM API is
//! ioctls on raw file descriptors and a run page shared with the kernel.

#![allow(unsafe_code)]

use std::ffi::c_void;
use std::fs::OpenOptions;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::ioctl::{Ioctl, IoctlOutput, Opcode, opcode};
use rustix::mm::{MapFlags, ProtFlags};

/// The device the probe opens.
pub const DEVICE: &str = "/dev/kvm";

/// The only KVM API version Linux has ever shipped; anything else is not KVM
/// as brig knows it.
pub const API_VERSION: i32 = 12;

/// The guest: `mov al, 0x42; out 0x10, al; hlt`, at the x86 reset vector.
const GUEST_CODE: [u8; 5] = [0xb0, 0x42, 0xe6, 0x10, 0xf4];
pub const GUEST_PORT: u16 = 0x10;
pub const GUEST_BYTE: u8 = 0x42;
/// The page holding the reset vector (`0xffff_fff0`, where a vCPU starts: CS
/// base `0xffff_0000`, IP `0xfff0`), so no register needs setting.
const GUEST_PAGE: u64 = 0xffff_f000;
const RESET_OFFSET: usize = 0xff0;
const PAGE: usize = 0x1000;
/// Where qemu puts the three pages Intel's real-mode support needs; far from
/// the guest page.
const TSS_ADDR: usize = 0xfeff_d000;

const KVMIO: u8 = 0xae;
const GET_API_VERSION: Opcode = opcode::none(KVMIO, 0x00);
const CREATE_VM: Opcode = opcode::none(KVMIO, 0x01);
const GET_VCPU_MMAP_SIZE: Opcode = opcode::none(KVMIO, 0x04);
const CREATE_VCPU: Opcode = opcode::none(KVMIO, 0x41);
const SET_USER_MEMORY_REGION: Opcode = opcode::write::<MemoryRegion>(KVMIO, 0x46);
const SET_TSS_ADDR: Opcode = opcode::none(KVMIO, 0x47);
const RUN: Opcode = opcode::none(KVMIO, 0x80);

/// `struct kvm_userspace_memory_region`.
#[repr(C)]
#[derive(Debug)]
struct MemoryRegion {
    slot: u32,
    flags: u32,
    guest_phys_addr: u64,
    memory_size: u64,
    userspace_addr: u64,
}

/// Offsets into `struct kvm_run` (the vCPU's shared page): `exit_reason`,
/// then the exit union, whose `io` member is `direction: u8, size: u8,
/// port: u16, count: u32, data_offset: u64`.
const RUN_EXIT_REASON: usize = 8;
const RUN_EXIT_UNION: usize = 32;
const IO_DIRECTION_OUT: u8 = 1;

pub const EXIT_IO: u32 = 2;
pub const EXIT_HLT: u32 = 5;

/// The `KVM_EXIT_*` name of an exit reason, for messages.
pub fn exit_name(reason: u32) -> &'static str {
    match reason {
        0 => "KVM_EXIT_UNKNOWN",
        1 => "KVM_EXIT_EXCEPTION",
        2 => "KVM_EXIT_IO",
        3 => "KVM_EXIT_HYPERCALL",
        4 => "KVM_EXIT_DEBUG",
        5 => "KVM_EXIT_HLT",
        6 => "KVM_EXIT_MMIO",
        8 => "KVM_EXIT_SHUTDOWN",
        9 => "KVM_EXIT_FAIL_ENTRY",
        10 => "KVM_EXIT_INTR",
        17 => "KVM_EXIT_INTERNAL_ERROR",
        _ => "an exit reason brig does not name",
    }
}

/// How far the probe got. `api_version` is set once the device opened;
/// `guest` is the run's outcome, or the step that stopped the probe.
#[derive(Debug)]
pub struct Probe {
    pub api_version: Option<i32>,
    pub guest: Result<Halted, Error>,
}

/// The guest wrote its byte and halted: `KVM_RUN` returned `KVM_EXIT_IO`
/// then `KVM_EXIT_HLT`, `elapsed` after the VM was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Halted {
    pub api_version: i32,
    pub elapsed: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{DEVICE} is absent")]
    Absent,
    #[error("{DEVICE} does not open read-write")]
    Open {
        #[source]
        source: std::io::Error,
    },
    #[error("KVM_GET_API_VERSION answers {found}, not {API_VERSION}")]
    ApiVersion { found: i32 },
    /// This build carries guest code for x86-64 only.
    #[error("no probe guest for this architecture")]
    NoGuest,
    #[error("{call} failed")]
    Call {
        call: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("KVM_RUN ended with {} ({reason}), not {}", exit_name(*reason), exit_name(*wanted))]
    Exit { reason: u32, wanted: u32 },
    #[error(
        "the guest wrote to port {port:#x} ({direction}, {size} byte(s)), not {GUEST_BYTE:#04x} to port {GUEST_PORT:#x}"
    )]
    WrongIo { port: u16, direction: &'static str, size: u8 },
    #[error("the guest wrote {value:#04x} to port {GUEST_PORT:#x}, not {GUEST_BYTE:#04x}")]
    WrongByte { value: u8 },
    #[error("KVM_RUN did not return within {} ms", within.as_millis())]
    NoReturn { within: Duration },
}

/// Run the probe, giving the guest `within` to halt. A vCPU that never
/// returns from `KVM_RUN` is left on its own thread, which ends with the
/// process.
pub fn probe(device: &Path, within: Duration) -> Probe {
    let kvm = match OpenOptions::new().read(true).write(true).open(device) {
        Ok(file) => OwnedFd::from(file),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Probe { api_version: None, guest: Err(Error::Absent) };
        }
        Err(source) => return Probe { api_version: None, guest: Err(Error::Open { source }) },
    };
    // SAFETY: KVM_GET_API_VERSION takes no argument and only answers.
    let version = match unsafe { call(&kvm, "KVM_GET_API_VERSION", GET_API_VERSION, int(0)) } {
        Ok(version) => version,
        Err(err) => return Probe { api_version: None, guest: Err(err) },
    };
    if version != API_VERSION {
        return Probe { api_version: Some(version), guest: Err(Error::ApiVersion { found: version }) };
    }
    if !cfg!(target_arch = "x86_64") {
        return Probe { api_version: Some(version), guest: Err(Error::NoGuest) };
    }
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("kvm-probe".to_owned()).spawn(move || {
        let _ = tx.send(run_guest(&kvm, version));
    });
    let guest = match spawned {
        Err(source) => Err(Error::Call { call: "a thread for the vCPU", source }),
        Ok(_) => rx.recv_timeout(within).unwrap_or(Err(Error::NoReturn { within })),
    };
    Probe { api_version: Some(version), guest }
}

/// One KVM ioctl: an opcode and its argument (an integer, or the address of
/// a struct the kernel reads), answering the call's return value.
struct Call {
    opcode: Opcode,
    arg: *mut c_void,
}

// SAFETY: a `Call` is only built by `call`, whose callers pair each KVM
// opcode with the argument that opcode takes. The return value is passed
// through as it is, and IS_MUTATING is true because KVM_RUN writes memory
// this process maps (the run page and guest memory).
unsafe impl Ioctl for Call {
    type Output = IoctlOutput;
    const IS_MUTATING: bool = true;

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn as_ptr(&mut self) -> *mut c_void {
        self.arg
    }

    unsafe fn output_from_ptr(out: IoctlOutput, _: *mut c_void) -> rustix::io::Result<IoctlOutput> {
        Ok(out)
    }
}

/// # Safety
///
/// `opcode` must be a KVM ioctl valid on `fd`, and `arg` what it takes: an
/// integer, or the address of a live value of the struct it reads.
unsafe fn call(fd: impl AsFd, name: &'static str, opcode: Opcode, arg: *mut c_void) -> Result<i32, Error> {
    // SAFETY: the caller vouches for the opcode and its argument.
    let result = unsafe { rustix::ioctl::ioctl(fd, Call { opcode, arg }) };
    result.map_err(|errno| Error::Call { call: name, source: errno.into() })
}

/// An integer argument, carried where the ioctl API wants a pointer.
fn int(value: usize) -> *mut c_void {
    std::ptr::without_provenance_mut(value)
}

/// Memory this process mapped, unmapped on drop.
#[derive(Debug)]
struct Mapping {
    ptr: *mut c_void,
    len: usize,
}

impl Mapping {
    fn anonymous(len: usize) -> Result<Mapping, Error> {
        // SAFETY: a fresh private anonymous mapping aliases nothing.
        let ptr = unsafe {
            rustix::mm::mmap_anonymous(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::PRIVATE)
        }
        .map_err(|errno| Error::Call { call: "mmap of guest memory", source: errno.into() })?;
        Ok(Mapping { ptr, len })
    }

    /// The vCPU's run page, shared with the kernel.
    fn run_page(vcpu: &OwnedFd, len: usize) -> Result<Mapping, Error> {
        // SAFETY: mapping a vCPU fd at offset 0 for KVM_GET_VCPU_MMAP_SIZE
        // bytes is how the KVM API hands out `struct kvm_run`.
        let ptr = unsafe {
            rustix::mm::mmap(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, vcpu, 0)
        }
        .map_err(|errno| Error::Call { call: "mmap of the vCPU run page", source: errno.into() })?;
        Ok(Mapping { ptr, len })
    }

    /// Read a value of the run page the kernel may have written.
    fn read<T: Copy>(&self, offset: usize) -> Option<T> {
        if offset.checked_add(size_of::<T>())? > self.len {
            return None;
        }
        // SAFETY: in bounds (checked above) of a live mapping; the kernel
        // wrote it before KVM_RUN returned, and volatile keeps the read from
        // being cached across calls. Unaligned reads are fine on x86-64, and
        // every offset used is naturally aligned anyway.
        Some(unsafe { std::ptr::read_volatile(self.ptr.cast::<u8>().add(offset).cast::<T>()) })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: exactly the range mmap returned; nothing refers to it once
        // the mapping is dropped (the VM holding guest memory is closed first).
        let _ = unsafe { rustix::mm::munmap(self.ptr, self.len) };
    }
}

/// Create a VM with one page at the reset vector, one vCPU, and run it.
fn run_guest(kvm: &OwnedFd, api_version: i32) -> Result<Halted, Error> {
    let memory = Mapping::anonymous(PAGE)?;
    // SAFETY: `memory` is a live, private, writable mapping of PAGE bytes.
    let bytes = unsafe { std::slice::from_raw_parts_mut(memory.ptr.cast::<u8>(), PAGE) };
    bytes.fill(0xf4);
    bytes[RESET_OFFSET..RESET_OFFSET + GUEST_CODE.len()].copy_from_slice(&GUEST_CODE);

    let started = Instant::now();
    // SAFETY: KVM_CREATE_VM takes the machine type, 0 for the default.
    let vm = unsafe { call(kvm, "KVM_CREATE_VM", CREATE_VM, int(0)) }?;
    // SAFETY: KVM_CREATE_VM answered a new descriptor that nothing else owns.
    let vm = unsafe { OwnedFd::from_raw_fd(vm) };
    // SAFETY: KVM_SET_TSS_ADDR takes a guest physical address, here outside
    // every memory slot.
    unsafe { call(&vm, "KVM_SET_TSS_ADDR", SET_TSS_ADDR, int(TSS_ADDR)) }?;
    let region = MemoryRegion {
        slot: 0,
        flags: 0,
        guest_phys_addr: GUEST_PAGE,
        memory_size: PAGE as u64,
        userspace_addr: memory.ptr.addr() as u64,
    };
    // SAFETY: the argument is the address of a live kvm_userspace_memory_region
    // naming `memory`, which outlives the VM (it is dropped after `vm`).
    unsafe { call(&vm, "KVM_SET_USER_MEMORY_REGION", SET_USER_MEMORY_REGION, (&raw const region).cast_mut().cast()) }?;
    // SAFETY: KVM_CREATE_VCPU takes the vCPU id.
    let vcpu = unsafe { call(&vm, "KVM_CREATE_VCPU", CREATE_VCPU, int(0)) }?;
    // SAFETY: KVM_CREATE_VCPU answered a new descriptor that nothing else owns.
    let vcpu = unsafe { OwnedFd::from_raw_fd(vcpu) };
    // SAFETY: KVM_GET_VCPU_MMAP_SIZE takes no argument and only answers.
    let size = unsafe { call(kvm, "KVM_GET_VCPU_MMAP_SIZE", GET_VCPU_MMAP_SIZE, int(0)) }?;
    let run = Mapping::run_page(&vcpu, usize::try_from(size).unwrap_or(0).max(PAGE))?;

    let reason = run_once(&vcpu, &run)?;
    if reason != EXIT_IO {
        return Err(Error::Exit { reason, wanted: EXIT_IO });
    }
    let direction: u8 = run.read(RUN_EXIT_UNION).unwrap_or_default();
    let size: u8 = run.read(RUN_EXIT_UNION + 1).unwrap_or_default();
    let port: u16 = run.read(RUN_EXIT_UNION + 2).unwrap_or_default();
    let data_offset: u64 = run.read(RUN_EXIT_UNION + 8).unwrap_or_default();
    if direction != IO_DIRECTION_OUT || size != 1 || port != GUEST_PORT {
        let direction = if direction == IO_DIRECTION_OUT { "out" } else { "in" };
        return Err(Error::WrongIo { port, direction, size });
    }
    let value: u8 = usize::try_from(data_offset).ok().and_then(|at| run.read(at)).unwrap_or_default();
    if value != GUEST_BYTE {
        return Err(Error::WrongByte { value });
    }
    let reason = run_once(&vcpu, &run)?;
    if reason != EXIT_HLT {
        return Err(Error::Exit { reason, wanted: EXIT_HLT });
    }
    let elapsed = started.elapsed();
    drop(run);
    drop(vcpu);
    drop(vm);
    drop(memory);
    Ok(Halted { api_version, elapsed })
}

/// One KVM_RUN, retried when a signal interrupts it; the exit reason.
fn run_once(vcpu: &OwnedFd, run: &Mapping) -> Result<u32, Error> {
    loop {
        // SAFETY: KVM_RUN takes no argument; it writes the run page, which
        // `run` maps for as long as the vCPU is used.
        match unsafe { call(vcpu, "KVM_RUN", RUN, int(0)) } {
            Err(Error::Call { source, .. }) if source.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
            Ok(_) => return Ok(run.read(RUN_EXIT_REASON).unwrap_or_default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_match_the_kernel_headers() {
        // The values <linux/kvm.h> defines on x86-64.
        assert_eq!(GET_API_VERSION as u64, 0xae00);
        assert_eq!(CREATE_VM as u64, 0xae01);
        assert_eq!(GET_VCPU_MMAP_SIZE as u64, 0xae04);
        assert_eq!(CREATE_VCPU as u64, 0xae41);
        assert_eq!(SET_USER_MEMORY_REGION as u64, 0x4020_ae46);
        assert_eq!(SET_TSS_ADDR as u64, 0xae47);
        assert_eq!(RUN as u64, 0xae80);
        assert_eq!(size_of::<MemoryRegion>(), 32);
    }

    #[test]
    fn a_missing_device_is_absent_and_asks_nothing() {
        let probe = probe(Path::new("/nonexistent/kvm"), Duration::from_secs(1));
        assert_eq!(probe.api_version, None);
        assert!(matches!(probe.guest, Err(Error::Absent)), "{:?}", probe.guest);
    }

    #[test]
    fn a_device_that_is_not_kvm_fails_at_the_version() {
        // /dev/null opens read-write and answers no KVM ioctl.
        let probe = probe(Path::new("/dev/null"), Duration::from_secs(1));
        assert_eq!(probe.api_version, None);
        match probe.guest {
            Err(Error::Call { call, .. }) => assert_eq!(call, "KVM_GET_API_VERSION"),
            other => panic!("{other:?}"),
        }
    }
}
