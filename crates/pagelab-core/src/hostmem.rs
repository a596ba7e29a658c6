//! The simulator's own memory on the host. Its large tables (PTE pages,
//! the frame-owner array, cache tags) are read at random, one probe per
//! simulated access; on 4 KiB host pages nearly every probe also misses the
//! host's TLB. Hosts whose THP mode is `madvise` (the default of many
//! distributions, and of this project's CI machines) back a range with huge
//! pages only when asked: `advise_huge` asks. It is a hint with no effect
//! on results; failures are ignored.

/// Tables smaller than this are left alone (they fit the host TLB anyway).
const MIN_BYTES: usize = 4 << 20;
const HUGE: usize = 2 << 20;

/// Asks the host kernel to back the 2 MiB-aligned part of `data` with
/// transparent huge pages.
pub fn advise_huge<T>(data: &[T]) {
    advise_range(data.as_ptr() as usize, std::mem::size_of_val(data));
}

/// The same for a vector's whole capacity, before it is written: pages
/// touched afterwards come in huge from the start.
fn advise_capacity<T>(v: &Vec<T>) {
    advise_range(v.as_ptr() as usize, v.capacity() * std::mem::size_of::<T>());
}

fn advise_range(addr: usize, bytes: usize) {
    if bytes < MIN_BYTES {
        return;
    }
    let start = addr.next_multiple_of(HUGE);
    let end = (addr + bytes) & !(HUGE - 1);
    if end <= start {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: madvise only changes how the kernel backs pages of a range we
    // own (inside `data`); MADV_HUGEPAGE never changes their contents.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
    }
}

/// A zeroed vector of `n` elements advised as above. Zeroed memory comes
/// from the kernel lazily, so an untouched part costs nothing.
pub fn zeroed_vec<T: Clone + Default>(n: usize) -> Vec<T> {
    let v = vec![T::default(); n];
    advise_huge(&v);
    v
}

/// A vector of `n` copies of `value`, advised before it is written.
pub fn filled_vec<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise_capacity(&v);
    v.resize(n, value);
    v
}

/// Appends `extra` copies of `value`, doubling the capacity when it must
/// grow (and advising the new allocation before writing it).
pub fn grow<T: Clone>(v: &mut Vec<T>, extra: usize, value: T) {
    if v.capacity() - v.len() < extra {
        v.reserve(extra.max(v.len()));
        advise_capacity(v);
    }
    v.resize(v.len() + extra, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advising_keeps_contents() {
        let mut v: Vec<u64> = zeroed_vec(1 << 20);
        v[12345] = 7;
        advise_huge(&v);
        assert_eq!(v[12345], 7);
        assert_eq!(v.iter().sum::<u64>(), 7);
    }
}
