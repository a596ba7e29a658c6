//! Temporary files and directories removed when a signal ends the process.
//!
//! Unwinding (an error, a panic, Ctrl-C turned into an exception) removes
//! a temporary file through its owner's `Drop`. A signal whose default
//! action ends the process (SIGTERM, SIGHUP, SIGQUIT, an abort...) runs no
//! destructor, so every temporary path is also registered here while it
//! exists, and [`install`] sets a handler that removes the registered
//! files, then the registered directories, and ends the process by the
//! same signal (its status is what the signal's default action gives).
//!
//! The handler may only call async-signal-safe functions (unlink, rmdir,
//! raise) and read memory no lock guards: the paths sit in a fixed table
//! of slots, each claimed and released with an atomic state.

use std::cell::UnsafeCell;
use std::path::Path;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// Temporary paths that may be registered at once (a process has a few:
/// one output, a capture's FIFO and its directory).
const SLOTS: usize = 32;
/// Longest path kept (NUL included); a longer one is not registered (its
/// owner still removes it on every other way out).
const PATH_BYTES: usize = 1024;

const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const FILE: u8 = 2;
const DIR: u8 = 3;

struct Slot {
    state: AtomicU8,
    path: UnsafeCell<[u8; PATH_BYTES]>,
}

// SAFETY: a slot's path is written only by the thread that claimed it
// (state CLAIMED, which the handler skips) and read only when its state
// says FILE or DIR.
unsafe impl Sync for Slot {}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot { state: AtomicU8::new(FREE), path: UnsafeCell::new([0; PATH_BYTES]) };
static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
static REGISTERED: AtomicUsize = AtomicUsize::new(0);

/// A registered temporary path: unregistered when dropped (its owner
/// removes or renames the path itself).
#[derive(Debug)]
pub struct Guard {
    slot: Option<usize>,
}

impl Guard {
    /// Registers a temporary file.
    pub fn file(path: &Path) -> Guard {
        Guard { slot: register(path, FILE) }
    }

    /// Registers a temporary directory (removed after the files, so a
    /// registered file inside it goes first).
    pub fn dir(path: &Path) -> Guard {
        Guard { slot: register(path, DIR) }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            TABLE[i].state.store(FREE, Ordering::Release);
            REGISTERED.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

fn register(path: &Path, kind: u8) -> Option<usize> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= PATH_BYTES || bytes.contains(&0) {
        return None;
    }
    let i = (0..SLOTS)
        .find(|&i| TABLE[i].state.compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed).is_ok())?;
    // SAFETY: this thread claimed slot i; the handler skips CLAIMED slots.
    let buf = unsafe { &mut *TABLE[i].path.get() };
    buf[..bytes.len()].copy_from_slice(bytes);
    buf[bytes.len()] = 0;
    TABLE[i].state.store(kind, Ordering::Release);
    REGISTERED.fetch_add(1, Ordering::Relaxed);
    Some(i)
}

/// Paths registered now (for tests).
pub fn registered() -> usize {
    REGISTERED.load(Ordering::Relaxed)
}

/// Removes every registered path under `prefix` (every one, given an
/// empty prefix): files, then directories. Only async-signal-safe calls.
fn remove_registered(prefix: &[u8]) {
    for kind in [FILE, DIR] {
        for slot in &TABLE {
            if slot.state.load(Ordering::Acquire) == kind {
                // SAFETY: as below.
                if !unsafe { &*slot.path.get() }.starts_with(prefix) {
                    continue;
                }
                let p = slot.path.get() as *const libc::c_char;
                // SAFETY: the slot holds a NUL-terminated path while its
                // state is FILE or DIR.
                unsafe {
                    if kind == FILE {
                        libc::unlink(p);
                    } else {
                        libc::rmdir(p);
                    }
                }
            }
        }
    }
}

/// The signals whose default action ends the process and which can be
/// caught: the handler cleans up, then the signal's default action runs.
/// SIGINT is not here: Python turns it into KeyboardInterrupt, which
/// unwinds through every owner. SIGPIPE and SIGXFSZ are not either: Python
/// ignores them, so a write fails with an error that unwinds.
const SIGNALS: [libc::c_int; 12] = [
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGXCPU,
    libc::SIGABRT,
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
];

/// What the handler does, outside a handler: a command abandoning calls
/// still in flight (Ctrl-C) removes what they registered.
pub fn remove_all() {
    remove_registered(b"");
}

/// What the handler does, for the paths under `dir` only (the tests run
/// in parallel, each with its own outputs).
#[cfg(test)]
pub(crate) fn remove_registered_under(dir: &Path) {
    use std::os::unix::ffi::OsStrExt;
    remove_registered(dir.as_os_str().as_bytes());
}

extern "C" fn on_signal(sig: libc::c_int) {
    remove_registered(b"");
    // SA_RESETHAND restored the default action; the signal, blocked while
    // this handler runs, is delivered again when it returns (a fault
    // re-executes its instruction and faults again).
    // SAFETY: raise is async-signal-safe.
    unsafe {
        libc::raise(sig);
    }
}

/// Sets the cleanup handler on each signal of [`SIGNALS`] whose action is
/// still the default (a handler someone else set is left alone).
pub fn install() {
    for sig in SIGNALS {
        // SAFETY: sigaction with a zeroed struct reads the current action;
        // the new one is a plain function handler with an empty mask.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 || old.sa_sigaction != libc::SIG_DFL {
                continue;
            }
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            new.sa_flags = libc::SA_RESETHAND | libc::SA_ONSTACK;
            libc::sigemptyset(&mut new.sa_mask);
            libc::sigaction(sig, &new, std::ptr::null_mut());
        }
    }
}
