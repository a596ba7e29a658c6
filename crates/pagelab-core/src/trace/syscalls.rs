//! Valgrind's `--trace-syscalls=yes` lines in lackey output: the program's
//! mmap, munmap, mprotect, mremap and brk calls become mapping events.
//!
//! Valgrind prints one line per system call, in program order with the
//! lackey lines (one log, one buffer; a system call ends a superblock, so
//! the accesses before it are printed before it):
//!
//! ```text
//! SYSCALL[pid,tid](9) sys_mmap ( 0x0, 4096, 3, 34, -1, 0 ) --> [pre-success] Success(0x4025000)
//! SYSCALL[pid,tid](10) sys_mprotect ( 0x4a14000, 16384, 1 )[sync] --> Success(0x0)
//! SYSCALL[pid,tid](0) sys_read ( 4, 0x1ffeffee28, 832 ) --> [async] ...
//! SYSCALL[pid,tid](0) ... [async] --> Success(0x340)
//! SYSCALL[pid,tid](334) unimplemented (by the kernel) syscall: 334! (ni_syscall)
//!  --> [pre-fail] Failure(0x26)
//! ```
//!
//! A call that blocks finishes on a later `... [async] -->` line of its
//! thread; its events are emitted there. Failed calls map nothing. Other
//! system calls, and ` --> ` continuation lines, are skipped. A line of
//! one of the five calls that cannot be parsed is an error (the caller
//! names the line): a mapping silently lost would make VMAs wrong.
//!
//! What each successful call becomes (lengths rounded up to 4 KiB pages):
//!
//! - `mmap(addr, len, prot, flags, ..) = r`: munmap [r, r + len) first when
//!   `MAP_FIXED` replaces a mapping this trace recorded (an automatic VMA
//!   in the way is replaced by the kernel itself), then mmap [r, r + len),
//!   writable if `PROT_WRITE`, named `anon` (`MAP_ANONYMOUS`) or `file`;
//! - `munmap(addr, len)`, `mprotect(addr, len, prot)`: the same event;
//! - `brk(x) = r`: the first call gives the initial break (exec made the
//!   heap empty); growth from break b to r maps [b, r), named `brk`, and
//!   shrinking unmaps [r, b) (page-rounded);
//! - `mremap(old, old_len, new_len, flags[, new_addr]) = r`: in place
//!   (r = old), growth maps the tail and shrinking unmaps it; moved, it
//!   unmaps the old range (unless `MREMAP_DONTUNMAP`) and maps [r, r +
//!   new_len) with the old mapping's permission and name. Linux moves the
//!   page tables; here the moved pages fault again at their new place.

use crate::paging::{Vma, VmaTree};
use crate::units::VirtAddr;
use crate::workload::MapEvent;

const PAGE: u64 = 4096;
const PROT_WRITE: u64 = 0x2;
const MAP_FIXED: u64 = 0x10;
const MAP_ANONYMOUS: u64 = 0x20;
const MREMAP_DONTUNMAP: u64 = 0x4;

/// One call of interest, with its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Mmap { len: u64, prot: u64, flags: u64 },
    Munmap { addr: u64, len: u64 },
    Mprotect { addr: u64, len: u64, prot: u64 },
    Brk,
    Mremap { old: u64, old_len: u64, new_len: u64, flags: u64 },
}

/// The state of a trace's system calls: calls waiting for their result,
/// the program break, and what the recorded events mapped (for mremap).
#[derive(Debug, Default)]
pub(crate) struct Syscalls {
    /// (tid, syscall number, call) of calls that blocked (`[async]`).
    pending: Vec<(u64, u64, Call)>,
    brk: Option<u64>,
    maps: VmaTree,
}

fn page_up(x: u64) -> u64 {
    x.saturating_add(PAGE - 1) & !(PAGE - 1)
}

/// `0x1f`, `31` or `-1` (as two's complement).
fn number(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if let Some(neg) = s.strip_prefix('-') {
        neg.parse::<u64>().ok().map(|v| v.wrapping_neg())
    } else {
        s.parse().ok()
    }
}

/// The result after `-->`: Some(Ok(value)) success, Some(Err(())) failure,
/// None not known yet (`[async] ...`).
fn outcome(s: &str) -> Result<Option<Result<u64, ()>>, String> {
    let mut s = s.trim();
    if let Some(rest) = s.strip_prefix('[') {
        s = rest.split_once(']').map(|(_, r)| r.trim()).ok_or("unclosed [ in the result")?;
    }
    if s.starts_with("...") {
        return Ok(None);
    }
    let inner = |prefix: &str| s.strip_prefix(prefix).and_then(|r| r.split_once(')')).map(|(v, _)| v);
    if let Some(v) = inner("Success(") {
        return number(v).map(|v| Some(Ok(v))).ok_or_else(|| format!("bad result `{v}`"));
    }
    if inner("Failure(").is_some() {
        return Ok(Some(Err(())));
    }
    Err(format!("unknown result `{s}`"))
}

impl Syscalls {
    /// One `SYSCALL[...]` line (without its newline): appends the mapping
    /// events it completes to `out`. The error is a message; the caller
    /// adds the file and line.
    pub(crate) fn line(&mut self, line: &str, out: &mut Vec<MapEvent>) -> Result<(), String> {
        let bad = || format!("a malformed system-call line: `{line}`");
        let rest = line.strip_prefix("SYSCALL[").ok_or_else(bad)?;
        let (ids, rest) = rest.split_once("](").ok_or_else(bad)?;
        let tid = ids.split_once(',').and_then(|(_, t)| number(t)).ok_or_else(bad)?;
        let (nr, body) = rest.split_once(')').ok_or_else(bad)?;
        let nr = number(nr).ok_or_else(bad)?;
        let body = body.trim_start();
        if let Some(result) = body.strip_prefix("... [async] -->") {
            let Some(i) = self.pending.iter().position(|p| p.0 == tid && p.1 == nr) else {
                return Ok(()); // A call of no interest finished.
            };
            let (_, _, call) = self.pending.remove(i);
            return match outcome(result).map_err(|m| format!("{m} in `{line}`"))? {
                Some(Ok(r)) => {
                    self.complete(call, r, out);
                    Ok(())
                }
                Some(Err(())) => Ok(()),
                None => Err(format!("an [async] completion without a result: `{line}`")),
            };
        }
        let Some((name, args)) = body.split_once(" (") else { return Ok(()) };
        if !matches!(name, "sys_mmap" | "sys_munmap" | "sys_mprotect" | "sys_brk" | "sys_mremap") {
            return Ok(());
        }
        let (args, tail) = args.split_once(')').ok_or_else(bad)?;
        let args: Vec<u64> = args.split(',').map(number).collect::<Option<_>>().ok_or_else(bad)?;
        let want = |n: &[usize]| {
            if n.contains(&args.len()) {
                Ok(())
            } else {
                Err(format!("{name} with {} arguments: `{line}`", args.len()))
            }
        };
        let call = match name {
            "sys_mmap" => {
                want(&[6])?;
                Call::Mmap { len: args[1], prot: args[2], flags: args[3] }
            }
            "sys_munmap" => {
                want(&[2])?;
                Call::Munmap { addr: args[0], len: args[1] }
            }
            "sys_mprotect" => {
                want(&[3])?;
                Call::Mprotect { addr: args[0], len: args[1], prot: args[2] }
            }
            "sys_brk" => {
                want(&[1])?;
                Call::Brk
            }
            _ => {
                want(&[4, 5])?;
                Call::Mremap { old: args[0], old_len: args[1], new_len: args[2], flags: args[3] }
            }
        };
        let (_, result) = tail.split_once("-->").ok_or_else(|| format!("{name} without its result: `{line}`"))?;
        match outcome(result).map_err(|m| format!("{m} in `{line}`"))? {
            Some(Ok(r)) => self.complete(call, r, out),
            Some(Err(())) => {}
            None => {
                self.pending.retain(|p| p.0 != tid);
                self.pending.push((tid, nr, call));
            }
        }
        Ok(())
    }

    /// The events of a call that returned `r`.
    fn complete(&mut self, call: Call, r: u64, out: &mut Vec<MapEvent>) {
        let mut emit = |maps: &mut VmaTree, e: MapEvent| {
            let (MapEvent::Mmap { start, len, .. }
            | MapEvent::Munmap { start, len }
            | MapEvent::Mprotect { start, len, .. }) = &e;
            if start.raw().checked_add(*len).is_none() {
                return; // No kernel returns success for a range that wraps.
            }
            match &e {
                MapEvent::Mmap { start, len, writable, name } => {
                    let end = start.add(*len);
                    maps.remove(*start, end);
                    maps.insert(Vma { start: *start, end, writable: *writable, name: name.as_str().into() });
                }
                MapEvent::Munmap { start, len } => maps.remove(*start, start.add(*len)),
                MapEvent::Mprotect { start, len, writable } => maps.protect(*start, start.add(*len), *writable),
            }
            out.push(e);
        };
        let maps = &mut self.maps;
        let va = VirtAddr::new;
        match call {
            Call::Mmap { len, prot, flags } => {
                let len = page_up(len);
                if len == 0 || r.checked_add(len).is_none() {
                    return;
                }
                if flags & MAP_FIXED != 0 && maps.overlaps(va(r), va(r + len)) {
                    emit(maps, MapEvent::Munmap { start: va(r), len });
                }
                let name = if flags & MAP_ANONYMOUS != 0 { "anon" } else { "file" };
                emit(maps, MapEvent::Mmap { start: va(r), len, writable: prot & PROT_WRITE != 0, name: name.into() });
            }
            Call::Munmap { addr, len } => {
                if page_up(len) != 0 {
                    emit(maps, MapEvent::Munmap { start: va(addr), len: page_up(len) });
                }
            }
            Call::Mprotect { addr, len, prot } => {
                if page_up(len) != 0 {
                    emit(
                        maps,
                        MapEvent::Mprotect { start: va(addr), len: page_up(len), writable: prot & PROT_WRITE != 0 },
                    );
                }
            }
            Call::Brk => {
                if let Some(old) = self.brk {
                    let (old_end, new_end) = (page_up(old), page_up(r));
                    if new_end > old_end {
                        emit(
                            maps,
                            MapEvent::Mmap {
                                start: va(old_end),
                                len: new_end - old_end,
                                writable: true,
                                name: "brk".into(),
                            },
                        );
                    } else if new_end < old_end {
                        emit(maps, MapEvent::Munmap { start: va(new_end), len: old_end - new_end });
                    }
                }
                self.brk = Some(r);
            }
            Call::Mremap { old, old_len, new_len, flags } => {
                let (old_len, new_len) = (page_up(old_len), page_up(new_len));
                let (writable, name) =
                    maps.find(va(old)).map_or((true, "anon".to_string()), |v| (v.writable, v.name.to_string()));
                if old.checked_add(old_len.max(new_len)).is_none() {
                    return;
                }
                if r == old {
                    if new_len > old_len {
                        emit(maps, MapEvent::Mmap { start: va(old + old_len), len: new_len - old_len, writable, name });
                    } else if new_len < old_len {
                        emit(maps, MapEvent::Munmap { start: va(old + new_len), len: old_len - new_len });
                    }
                } else if new_len != 0 && r.checked_add(new_len).is_some() {
                    if old_len != 0 && flags & MREMAP_DONTUNMAP == 0 {
                        emit(maps, MapEvent::Munmap { start: va(old), len: old_len });
                    }
                    if maps.overlaps(va(r), va(r + new_len)) {
                        // MREMAP_FIXED over a recorded mapping.
                        emit(maps, MapEvent::Munmap { start: va(r), len: new_len });
                    }
                    emit(maps, MapEvent::Mmap { start: va(r), len: new_len, writable, name });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &[&str]) -> Vec<MapEvent> {
        let mut s = Syscalls::default();
        let mut out = Vec::new();
        for l in lines {
            s.line(l, &mut out).unwrap_or_else(|e| panic!("{e}"));
        }
        out
    }

    fn mmap(start: u64, len: u64, writable: bool, name: &str) -> MapEvent {
        MapEvent::Mmap { start: VirtAddr::new(start), len, writable, name: name.into() }
    }
    fn munmap(start: u64, len: u64) -> MapEvent {
        MapEvent::Munmap { start: VirtAddr::new(start), len }
    }

    // The lines below are copied from valgrind 3.19's output on this
    // machine (a small C program; `trace capture` runs the same command).
    #[test]
    fn real_valgrind_lines_become_events() {
        let ev = run(&[
            "SYSCALL[18021,1](12) sys_brk ( 0x0 ) --> [pre-success] Success(0x4035000) ",
            "SYSCALL[18021,1](9) sys_mmap ( 0x0, 8388608, 3, 34, 4294967295, 0 ) --> [pre-success] Success(0x4a2a000) ",
            "SYSCALL[18021,1](11) sys_munmap ( 0x4a2a000, 8388608 )[sync] --> Success(0x0) ",
            "SYSCALL[18021,1](9) sys_mmap ( 0x0, 4194304, 3, 34, 4294967295, 0 ) --> [pre-success] Success(0x4a2a000) ",
            "SYSCALL[18021,1](25) sys_mremap ( 0x4a2a000, 4194304, 8388608, 0x1 ) --> [pre-success] Success(0x4a2a000) ",
            "SYSCALL[18021,1](10) sys_mprotect ( 0x4a2a000, 4096, 1 )[sync] --> Success(0x0) ",
            "SYSCALL[18021,1](12) sys_brk ( 0x4135000 ) --> [pre-success] Success(0x4135000) ",
            "SYSCALL[18021,1](12) sys_brk ( 0x40b5000 ) --> [pre-success] Success(0x40b5000) ",
            "SYSCALL[18021,1](25) sys_mremap ( 0x4a2a000, 4194304, 8388608, 0x1 ) --> [pre-fail] Failure(0x16) ",
            "SYSCALL[17989,1](257) sys_openat ( 4294967196, 0x4034bb0(/usr/libexec/valgrind/vgpreload_core-amd64-linux.so), 524288 ) --> [async] ... ",
            "SYSCALL[17989,1](257) ... [async] --> Success(0x4) ",
            "SYSCALL[18021,1](334) unimplemented (by the kernel) syscall: 334! (ni_syscall)",
            "SYSCALL[18021,1](231) exit_group( 0 ) --> [pre-success] Success(0x0) ",
        ]);
        assert_eq!(
            ev,
            [
                mmap(0x4a2a000, 8 << 20, true, "anon"),
                munmap(0x4a2a000, 8 << 20),
                mmap(0x4a2a000, 4 << 20, true, "anon"),
                mmap(0x4a2a000 + (4 << 20), 4 << 20, true, "anon"),
                MapEvent::Mprotect { start: VirtAddr::new(0x4a2a000), len: 4096, writable: false },
                mmap(0x4035000, 1 << 20, true, "brk"),
                munmap(0x40b5000, 0x80000),
            ]
        );
    }

    #[test]
    fn map_fixed_over_a_recorded_mapping_unmaps_it_first() {
        // ld.so maps a library whole, then its segments over it.
        let ev = run(&[
            "SYSCALL[1,1](9) sys_mmap ( 0x0, 1974096, 1, 2050, 4, 0 ) --> [pre-success] Success(0x4845000) ",
            "SYSCALL[1,1](9) sys_mmap ( 0x486b000, 1400832, 5, 2066, 4, 155648 ) --> [pre-success] Success(0x486b000) ",
            "SYSCALL[1,1](9) sys_mmap ( 0x4a1a000, 53072, 3, 50, 4294967295, 0 ) --> [pre-success] Success(0x4a1a000) ",
            "SYSCALL[1,1](9) sys_mmap ( 0x5000000, 4096, 3, 50, 4294967295, 0 ) --> [pre-success] Success(0x5000000) ",
        ]);
        assert_eq!(
            ev,
            [
                mmap(0x4845000, 1974272, false, "file"),
                munmap(0x486b000, 1400832),
                mmap(0x486b000, 1400832, false, "file"),
                // The .bss, MAP_FIXED|MAP_ANONYMOUS inside the first mapping.
                munmap(0x4a1a000, 53248),
                mmap(0x4a1a000, 53248, true, "anon"),
                // MAP_FIXED where nothing was recorded: no munmap.
                mmap(0x5000000, 4096, true, "anon"),
            ]
        );
    }

    #[test]
    fn async_results_complete_on_their_thread_and_moves_keep_permissions() {
        let ev = run(&[
            "SYSCALL[1,2](9) sys_mmap ( 0x0, 8192, 1, 34, -1, 0 ) --> [async] ... ",
            "SYSCALL[1,3](11) sys_munmap ( 0x7000, 4096 ) --> [async] ... ",
            "SYSCALL[1,3](11) ... [async] --> Failure(0x16) ",
            "SYSCALL[1,2](9) ... [async] --> Success(0x10000) ",
            "SYSCALL[1,2](25) sys_mremap ( 0x10000, 8192, 4096, 0x3, 0x40000 ) --> [pre-success] Success(0x40000) ",
        ]);
        assert_eq!(ev, [mmap(0x10000, 8192, false, "anon"), munmap(0x10000, 8192), mmap(0x40000, 4096, false, "anon")]);
    }

    #[test]
    fn ranges_that_wrap_are_dropped_not_a_panic() {
        let ev = run(&[
            "SYSCALL[1,1](11) sys_munmap ( 0xfffffffffffff000, 8192 )[sync] --> Success(0x0) ",
            "SYSCALL[1,1](25) sys_mremap ( 0xfffffffffffff000, 4096, 8192, 0x0 ) --> [pre-success] Success(0xfffffffffffff000) ",
            "SYSCALL[1,1](9) sys_mmap ( 0x0, 18446744073709551615, 3, 34, -1, 0 ) --> [pre-success] Success(0x1000) ",
        ]);
        assert!(ev.is_empty(), "{ev:?}");
    }

    #[test]
    fn malformed_lines_of_mapping_calls_are_errors() {
        let mut s = Syscalls::default();
        let mut out = Vec::new();
        for bad in [
            "SYSCALL[1,1](9) sys_mmap ( 0x0, 8192, 3 ) --> [pre-success] Success(0x1000) ",
            "SYSCALL[1,1](11) sys_munmap ( 0x1000, zz ) --> [pre-success] Success(0x0) ",
            "SYSCALL[1,1](11) sys_munmap ( 0x1000, 4096 )",
            "SYSCALL[1,1](11) sys_munmap ( 0x1000, 4096 ) --> Maybe(0x0)",
            "SYSCALL[1,1 sys_munmap",
        ] {
            assert!(s.line(bad, &mut out).is_err(), "{bad}");
        }
        assert!(out.is_empty());
    }
}
