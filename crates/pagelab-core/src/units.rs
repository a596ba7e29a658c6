//! Units and addresses: layer 1.
//!
//! One newtype per address space and granularity, so that a virtual page
//! number can never be used where a physical frame number is expected (and a
//! guest-physical address never where a host-physical one is). The inner
//! integer is private; `raw()` reads it and `new()` builds one. There are no
//! `+`/`-` operators: callers say what they mean (`add`, which panics in debug
//! builds on overflow, or `checked_add`).

use std::fmt;

/// log2 of the base page size (4 KiB).
pub const PAGE_SHIFT: u32 = 12;
/// Bytes in a base page.
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;
/// Bytes in a cache line, the granularity of the physical reference stream.
pub const LINE_SHIFT: u32 = 6;
/// Order of a 2 MiB block, also the pageblock order on x86-64.
pub const PMD_ORDER: u8 = 9;
/// Order of a 1 GiB block.
pub const PUD_ORDER: u8 = 18;
/// Entries in one page-table page (x86-64, 8-byte entries).
pub const PTRS_PER_TABLE: usize = 512;

macro_rules! address_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(u64);

        impl $name {
            #[inline]
            pub const fn new(raw: u64) -> Self {
                Self(raw)
            }
            #[inline]
            pub const fn raw(self) -> u64 {
                self.0
            }
            /// `self + n`; overflow is a bug (debug-asserted, wraps in release).
            /// A method, not `+`: callers choose between this, `checked_add`
            /// and `offset_from` (vm-memory's rule).
            #[inline]
            #[allow(clippy::should_implement_trait)]
            pub fn add(self, n: u64) -> Self {
                debug_assert!(self.0.checked_add(n).is_some(), "{} overflow", stringify!($name));
                Self(self.0.wrapping_add(n))
            }
            /// `self + n`, or `None` on overflow.
            #[inline]
            pub fn checked_add(self, n: u64) -> Option<Self> {
                self.0.checked_add(n).map(Self)
            }
            /// Distance from `base` to `self`; `self < base` is a bug.
            #[inline]
            pub fn offset_from(self, base: Self) -> u64 {
                debug_assert!(self.0 >= base.0);
                self.0.wrapping_sub(base.0)
            }
            /// Rounded down to a multiple of `align` (a power of two).
            #[inline]
            pub fn align_down(self, align: u64) -> Self {
                debug_assert!(align.is_power_of_two());
                Self(self.0 & !(align - 1))
            }
            #[inline]
            pub fn is_aligned(self, align: u64) -> bool {
                self.0 & (align - 1) == 0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:#x})", stringify!($name), self.0)
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:#x}", self.0)
            }
        }
    };
}

address_type!(
    /// A virtual address (guest-virtual under virtualization).
    VirtAddr
);
address_type!(
    /// A host-physical address: what the caches and memory see.
    PhysAddr
);
address_type!(
    /// A guest-physical address: what a guest's page tables map to, and what
    /// the EPT translates (`virt`).
    GuestPhysAddr
);
address_type!(
    /// A virtual page number (virtual address >> 12).
    Vpn
);
address_type!(
    /// A host physical frame number (physical address >> 12).
    Pfn
);
address_type!(
    /// A guest frame number (guest-physical address >> 12).
    Gfn
);

impl VirtAddr {
    #[inline]
    pub const fn vpn(self) -> Vpn {
        Vpn(self.0 >> PAGE_SHIFT)
    }
    #[inline]
    pub const fn page_offset(self) -> u64 {
        self.0 & (PAGE_SIZE - 1)
    }
}

impl Vpn {
    #[inline]
    pub const fn addr(self) -> VirtAddr {
        VirtAddr(self.0 << PAGE_SHIFT)
    }
}

impl PhysAddr {
    #[inline]
    pub const fn pfn(self) -> Pfn {
        Pfn(self.0 >> PAGE_SHIFT)
    }
    /// The cache-line number of this address.
    #[inline]
    pub const fn line(self) -> u64 {
        self.0 >> LINE_SHIFT
    }
}

impl Pfn {
    #[inline]
    pub const fn addr(self) -> PhysAddr {
        PhysAddr(self.0 << PAGE_SHIFT)
    }
}

impl Gfn {
    #[inline]
    pub const fn addr(self) -> GuestPhysAddr {
        GuestPhysAddr(self.0 << PAGE_SHIFT)
    }

    /// The guest frame a guest kernel's frame number names. The OS layer is
    /// the same code in a guest as on a native machine, so inside a guest
    /// its `Pfn`s (frames of its `PhysMem`, page-table frames, leaves'
    /// frames) number guest-physical frames; this is the one place where
    /// such a number becomes a `Gfn`.
    #[inline]
    pub const fn of_guest_kernel(pfn: Pfn) -> Gfn {
        Gfn(pfn.0)
    }
}

impl GuestPhysAddr {
    #[inline]
    pub const fn gfn(self) -> Gfn {
        Gfn(self.0 >> PAGE_SHIFT)
    }

    /// The address of this guest-physical byte in the hypervisor's VM
    /// process, whose one VMA maps guest memory from 0 (QEMU's guest-memory
    /// mapping under KVM, placed at 0): the host kernel's page table of
    /// that process is the EPT, so its "virtual" addresses are
    /// guest-physical ones. The one conversion between the two spaces.
    #[inline]
    pub const fn as_host_virt(self) -> VirtAddr {
        VirtAddr(self.0)
    }
}

/// A buddy-allocator order: a block of `2^order` base pages.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Order(u8);

impl Order {
    pub const BASE: Order = Order(0);
    pub const PMD: Order = Order(PMD_ORDER);
    pub const PUD: Order = Order(PUD_ORDER);

    #[inline]
    pub const fn new(order: u8) -> Self {
        Order(order)
    }
    #[inline]
    pub const fn get(self) -> u8 {
        self.0
    }
    /// Base pages in a block of this order.
    #[inline]
    pub const fn nr_pages(self) -> u64 {
        1 << self.0
    }
    #[inline]
    pub const fn bytes(self) -> u64 {
        PAGE_SIZE << self.0
    }
}

/// The page sizes a leaf translation can have on x86-64.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum PageSize {
    Size4K,
    Size2M,
    Size1G,
}

impl PageSize {
    pub const ALL: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];

    #[inline]
    pub const fn shift(self) -> u32 {
        match self {
            PageSize::Size4K => 12,
            PageSize::Size2M => 21,
            PageSize::Size1G => 30,
        }
    }
    #[inline]
    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }
    #[inline]
    pub const fn order(self) -> Order {
        Order((self.shift() - PAGE_SHIFT) as u8)
    }
    /// Base pages covered by one page of this size.
    #[inline]
    pub const fn nr_pages(self) -> u64 {
        1 << (self.shift() - PAGE_SHIFT)
    }
    /// Page-table level whose entry maps a page of this size (1 = PTE).
    #[inline]
    pub const fn leaf_level(self) -> u8 {
        match self {
            PageSize::Size4K => 1,
            PageSize::Size2M => 2,
            PageSize::Size1G => 3,
        }
    }
    pub const fn name(self) -> &'static str {
        match self {
            PageSize::Size4K => "4k",
            PageSize::Size2M => "2m",
            PageSize::Size1G => "1g",
        }
    }
}

/// An address-space identifier (one per simulated process).
pub type Asid = u16;

/// What a size may be written as, for errors.
const SIZE_FORMS: &str =
    "a number of bytes from 0, or one with a unit B, KiB, MiB, GiB or TiB: 4096, \"2MiB\", \"1.5GiB\"";

/// A size in bytes as written in configuration files: an integer, or a
/// string with a binary suffix (`"32KiB"`, `"16GiB"`, `"2MiB"`; `K`, `KB`,
/// `k` are read as KiB too, since nobody means 1000 in this field).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub const fn bytes(self) -> u64 {
        self.0
    }

    /// Parses `"16GiB"`, `"512 MiB"`, `"4096"`, `"1.5GiB"`.
    pub fn parse(text: &str) -> std::result::Result<ByteSize, String> {
        let t = text.trim();
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let value: f64 = num.parse().map_err(|_| format!("`{text}` is not a size ({SIZE_FORMS})"))?;
        let shift = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kb" | "kib" => 10,
            "m" | "mb" | "mib" => 20,
            "g" | "gb" | "gib" => 30,
            "t" | "tb" | "tib" => 40,
            other => return Err(format!("unknown size unit `{other}` in `{text}` ({SIZE_FORMS})")),
        };
        let bytes = value * (1u64 << shift) as f64;
        if !(bytes.is_finite() && bytes >= 0.0 && bytes < 2f64.powi(63)) || bytes.fract() != 0.0 {
            return Err(format!("`{text}` is not a whole number of bytes from 0 to 2^63 - 1"));
        }
        Ok(ByteSize(bytes as u64))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if b >= 1 << shift && b.is_multiple_of(1 << shift) {
                return write!(f, "{}{}", b >> shift, unit);
            }
        }
        write!(f, "{b}")
    }
}

impl<'de> serde::Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size: a number of bytes or a string like \"16GiB\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom(format!("{v} is negative: a size is a number of bytes")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<ByteSize, E> {
                ByteSize::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl serde::Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vpn_and_pfn_round_trip() {
        let va = VirtAddr::new(0x7fff_1234_5678);
        assert_eq!(va.vpn().raw(), 0x7_fff1_2345);
        assert_eq!(va.vpn().addr().raw(), 0x7fff_1234_5000);
        assert_eq!(va.page_offset(), 0x678);
        assert_eq!(Pfn::new(3).addr().raw(), 0x3000);
        assert_eq!(PhysAddr::new(0x3040).line(), 0xc1);
    }

    #[test]
    fn page_sizes_and_orders() {
        assert_eq!(PageSize::Size2M.order(), Order::PMD);
        assert_eq!(PageSize::Size1G.order(), Order::PUD);
        assert_eq!(PageSize::Size2M.nr_pages(), 512);
        assert_eq!(Order::new(10).bytes(), 4 << 20);
        assert_eq!(Pfn::new(0x1234).align_down(512).raw(), 0x1200);
    }

    #[test]
    fn byte_sizes_parse_and_print() {
        assert_eq!(ByteSize::parse("16GiB").unwrap().bytes(), 16 << 30);
        assert_eq!(ByteSize::parse("32 KiB").unwrap().bytes(), 32 << 10);
        assert_eq!(ByteSize::parse("1.5GiB").unwrap().bytes(), 3 << 29);
        assert_eq!(ByteSize::parse("4096").unwrap().bytes(), 4096);
        assert!(ByteSize::parse("12 parsecs").is_err());
        assert!(ByteSize::parse("0.3").is_err());
        assert_eq!(ByteSize(16 << 30).to_string(), "16GiB");
    }
}
