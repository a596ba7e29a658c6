//! Configuration of the data-cache hierarchy (`machine.cache`).
//!
//! Three structs because the levels take different keys and unknown keys are
//! rejected: [`CacheConfig`] for `l1d` and `l2`, [`L1iConfig`] (the same plus
//! `enabled`) for `l1i`, [`LlcConfig`] (the same plus slices, inclusion, fill
//! and way masks) for `llc`. Each turns into a [`Geometry`], the validated shape a
//! [`Cache`](super::Cache) is built from.
//!
//! Defaults describe a Skylake-like core: 32 KiB 8-way L1D (4 cycles), 256 KiB
//! 4-way L2 (12 cycles), 16 MiB 16-way LLC (42 cycles), 64-byte lines, LRU.

use super::replacement::ReplacementKind;
use super::slice::{SliceHash, INTEL_MAX_SLICES};
use super::standin::{self, StandIn};
use crate::error::{Error, Result};
use crate::units::{ByteSize, PAGE_SHIFT};

/// Most ways a level may have: way masks are `u64` and LRU ranks are bytes.
pub const MAX_WAYS: u32 = 64;

/// One private level: `machine.cache.l1d`, `machine.cache.l2`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// Capacity; must equal ways * line * sets with sets a power of two.
    pub size: ByteSize,
    pub ways: u32,
    /// Line size in bytes (a power of two >= 8; the same at every level).
    pub line: u32,
    /// Load-to-use latency of a hit in this level, in cycles.
    pub latency: u32,
    pub policy: ReplacementKind,
}

/// The instruction cache: `machine.cache.l1i`. Off by default: most traces
/// carry no instruction fetches, and with it off the engine treats fetches as
/// L1 hits.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct L1iConfig {
    pub enabled: bool,
    pub size: ByteSize,
    pub ways: u32,
    pub line: u32,
    pub latency: u32,
    pub policy: ReplacementKind,
}

/// The shared last-level cache: `machine.cache.llc`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlcConfig {
    pub size: ByteSize,
    pub ways: u32,
    pub line: u32,
    pub latency: u32,
    pub policy: ReplacementKind,
    /// Inclusive of every core's L1 and L2: an LLC eviction back-invalidates
    /// the line above. Off = non-inclusive, as pycachesim.
    pub inclusive: bool,
    /// Number of slices; each slice holds size / slices bytes in a power of
    /// two of sets. Any count under the stand-in hash, a power of two under
    /// the others.
    pub slices: u32,
    pub slice_hash: SliceHash,
    /// Varies the stand-in hash's made-up parts (`super::standin`); 0 is the
    /// stand-in the presets use. Only the stand-in reads it.
    pub slice_seed: u64,
    /// What fills the LLC: demand misses (`miss`) or the L2's evictions
    /// (`victim`, as Skylake-SP's; non-inclusive).
    pub fill: LlcFill,
    /// Per core, the LLC ways that core may fill (like Intel CAT); hits are
    /// allowed in any way. Empty = every core fills every way; otherwise one
    /// mask per core.
    pub way_masks: Vec<u64>,
}

/// What fills the LLC (`machine.cache.llc.fill`; `hierarchy` and
/// `hierarchy/victim.rs` say what each does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LlcFill {
    /// A line that misses the LLC is filled into it on the way up.
    #[default]
    Miss,
    /// A victim cache: demand misses bypass it, lines evicted from an L2
    /// (clean or dirty) are inserted, and a hit moves the line to the L2.
    Victim,
}

/// The whole hierarchy: `machine.cache`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheHierarchyConfig {
    /// Off = no data caches are simulated: every reference goes to memory.
    pub enabled: bool,
    pub l1d: CacheConfig,
    pub l1i: L1iConfig,
    pub l2: CacheConfig,
    pub llc: LlcConfig,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig::l1d()
    }
}

impl CacheConfig {
    /// Skylake L1D: 32 KiB, 8 ways, 4 cycles.
    pub fn l1d() -> Self {
        CacheConfig { size: ByteSize(32 << 10), ways: 8, line: 64, latency: 4, policy: ReplacementKind::Lru }
    }

    /// Skylake client L2: 256 KiB, 4 ways, 12 cycles.
    pub fn l2() -> Self {
        CacheConfig { size: ByteSize(256 << 10), ways: 4, line: 64, latency: 12, policy: ReplacementKind::Lru }
    }

    pub fn geometry(&self) -> Geometry {
        Geometry::unsliced(self.size.bytes(), self.ways, self.line)
    }

    pub fn validate(&self, prefix: &str) -> Result<()> {
        validate_shape(prefix, self.size, self.ways, self.line).map(|_| ())
    }
}

impl Default for L1iConfig {
    fn default() -> Self {
        let l1 = CacheConfig::l1d();
        L1iConfig {
            enabled: false,
            size: l1.size,
            ways: l1.ways,
            line: l1.line,
            latency: l1.latency,
            policy: l1.policy,
        }
    }
}

impl L1iConfig {
    pub fn geometry(&self) -> Geometry {
        Geometry::unsliced(self.size.bytes(), self.ways, self.line)
    }

    pub fn validate(&self, prefix: &str) -> Result<()> {
        validate_shape(prefix, self.size, self.ways, self.line).map(|_| ())
    }
}

impl Default for LlcConfig {
    fn default() -> Self {
        LlcConfig {
            size: ByteSize(16 << 20),
            ways: 16,
            line: 64,
            latency: 42,
            policy: ReplacementKind::Lru,
            inclusive: false,
            slices: 1,
            slice_hash: SliceHash::Modulo,
            slice_seed: 0,
            fill: LlcFill::Miss,
            way_masks: Vec::new(),
        }
    }
}

impl LlcConfig {
    pub fn geometry(&self) -> Geometry {
        let sets = self.size.bytes() / (u64::from(self.ways) * u64::from(self.line));
        Geometry {
            sets_per_slice: (sets / u64::from(self.slices)) as u32,
            slices: self.slices,
            ways: self.ways,
            line: self.line,
            slice_hash: self.slice_hash,
            slice_seed: self.slice_seed,
        }
    }

    pub fn validate(&self, prefix: &str) -> Result<()> {
        self.validate_slices(prefix)?;
        if self.fill == LlcFill::Victim && self.inclusive {
            return Err(Error::config(
                format!("{prefix}.inclusive"),
                "true with fill = \"victim\": a victim-filled LLC is non-inclusive; set inclusive = false or fill = \"miss\"",
            ));
        }
        let all = super::replacement::full_mask(self.ways as usize);
        for (core, &mask) in self.way_masks.iter().enumerate() {
            if mask == 0 || mask & !all != 0 {
                return Err(Error::config(
                    format!("{prefix}.way_masks[{core}]"),
                    format!("{mask:#x}: must be non-zero and within the {} ways", self.ways),
                ));
            }
        }
        Ok(())
    }

    /// The shape: ways x line x slices x a power of two of sets per slice,
    /// and a slice count and seed the hash takes.
    fn validate_slices(&self, prefix: &str) -> Result<()> {
        let key = |name: &str| format!("{prefix}.{name}");
        let max_slices = if self.slice_hash == SliceHash::StandIn { standin::MAX_SLICES } else { 1 << 16 };
        if self.slices == 0 || self.slices > max_slices {
            return Err(Error::config(key("slices"), format!("{}: must be 1..={max_slices}", self.slices)));
        }
        match self.slice_hash {
            SliceHash::Modulo if !self.slices.is_power_of_two() => {
                return Err(Error::config(
                    key("slices"),
                    format!("{}: the modulo hash takes a power of two; the stand-in hash any count", self.slices),
                ))
            }
            SliceHash::Intel if !self.slices.is_power_of_two() || self.slices > INTEL_MAX_SLICES => {
                return Err(Error::config(
                    key("slice_hash"),
                    format!(
                        "the intel hash is known for 1, 2, 4 or 8 slices, not {}; the stand-in hash takes any count",
                        self.slices
                    ),
                ))
            }
            hash if hash != SliceHash::StandIn && self.slice_seed != 0 => {
                return Err(Error::config(
                    key("slice_seed"),
                    format!(
                        "{}: the {} hash reads no seed; leave it at 0 or use the stand-in hash",
                        self.slice_seed,
                        hash.name()
                    ),
                ))
            }
            _ => {}
        }
        validate_line_and_ways(prefix, self.ways, self.line)?;
        let way_bytes = u64::from(self.ways) * u64::from(self.line);
        let size = self.size.bytes();
        if size >= way_bytes && size / way_bytes < u64::from(self.slices) {
            let sets = size / way_bytes;
            return Err(Error::config(key("slices"), format!("{}: more than the {sets} sets", self.slices)));
        }
        let slice_bytes = way_bytes * u64::from(self.slices);
        let sets = size / slice_bytes;
        if size == 0 || !size.is_multiple_of(slice_bytes) || !sets.is_power_of_two() || sets > u64::from(u32::MAX) {
            return Err(Error::config(
                key("size"),
                format!(
                    "{size} bytes is not {} slices x {} ways x {} bytes x a power-of-two number of sets",
                    self.slices, self.ways, self.line
                ),
            ));
        }
        Ok(())
    }

    /// The fill mask of each of `cores` cores, or an error naming the key
    /// when masks are given but not one per core.
    pub fn fill_masks(&self, prefix: &str, cores: usize) -> Result<Vec<u64>> {
        if self.way_masks.is_empty() {
            return Ok(vec![super::replacement::full_mask(self.ways as usize); cores]);
        }
        if self.way_masks.len() != cores {
            return Err(Error::config(
                format!("{prefix}.way_masks"),
                format!("{} masks for {cores} cores: give one per core or none", self.way_masks.len()),
            ));
        }
        Ok(self.way_masks.clone())
    }
}

impl Default for CacheHierarchyConfig {
    fn default() -> Self {
        CacheHierarchyConfig {
            enabled: true,
            l1d: CacheConfig::l1d(),
            l1i: L1iConfig::default(),
            l2: CacheConfig::l2(),
            llc: LlcConfig::default(),
        }
    }
}

impl CacheHierarchyConfig {
    /// Validates every level (`prefix` is normally `machine.cache`).
    pub fn validate(&self, prefix: &str) -> Result<()> {
        self.l1d.validate(&format!("{prefix}.l1d"))?;
        self.l1i.validate(&format!("{prefix}.l1i"))?;
        self.l2.validate(&format!("{prefix}.l2"))?;
        self.llc.validate(&format!("{prefix}.llc"))?;
        // One line size throughout: a writeback or back-invalidation moves
        // exactly one line between levels.
        let line = self.l1d.line;
        let others =
            [("l1i", self.l1i.line, self.l1i.enabled), ("l2", self.l2.line, true), ("llc", self.llc.line, true)];
        for (name, other, used) in others {
            if used && other != line {
                return Err(Error::config(
                    format!("{prefix}.{name}.line"),
                    format!("{other} bytes: every level must use the l1d line size ({line})"),
                ));
            }
        }
        Ok(())
    }
}

/// Checks the line size (a power of two >= 8) and the ways (1..=64).
fn validate_line_and_ways(prefix: &str, ways: u32, line: u32) -> Result<()> {
    if !line.is_power_of_two() || line < 8 {
        return Err(Error::config(format!("{prefix}.line"), format!("{line}: must be a power of two >= 8")));
    }
    if ways == 0 || ways > MAX_WAYS {
        return Err(Error::config(format!("{prefix}.ways"), format!("{ways}: must be 1..={MAX_WAYS}")));
    }
    Ok(())
}

/// Checks size = ways * line * sets (sets a power of two) and returns sets.
fn validate_shape(prefix: &str, size: ByteSize, ways: u32, line: u32) -> Result<u64> {
    validate_line_and_ways(prefix, ways, line)?;
    let way_bytes = u64::from(ways) * u64::from(line);
    let size = size.bytes();
    let sets = size / way_bytes;
    if size == 0 || !size.is_multiple_of(way_bytes) || !sets.is_power_of_two() {
        return Err(Error::config(
            format!("{prefix}.size"),
            format!("{size} bytes is not {ways} ways x {line} bytes x a power-of-two number of sets"),
        ));
    }
    if sets > u64::from(u32::MAX) {
        return Err(Error::config(format!("{prefix}.size"), format!("{sets} sets; at most {} sets", u32::MAX)));
    }
    Ok(sets)
}

/// The validated shape of one cache: what [`Cache::new`](super::Cache::new)
/// builds. Slice count 1 means unsliced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub sets_per_slice: u32,
    pub slices: u32,
    pub ways: u32,
    /// Line size in bytes.
    pub line: u32,
    pub slice_hash: SliceHash,
    /// The stand-in hash's seed (0 under the other hashes).
    pub slice_seed: u64,
}

impl Geometry {
    /// An unsliced cache of `size` bytes (valid shape assumed).
    pub fn unsliced(size: u64, ways: u32, line: u32) -> Geometry {
        let sets = size / (u64::from(ways) * u64::from(line));
        Geometry { sets_per_slice: sets as u32, slices: 1, ways, line, slice_hash: SliceHash::Modulo, slice_seed: 0 }
    }

    /// `sets` sets of `ways` ways of `line` bytes: handy for tests.
    pub fn sets(sets: u32, ways: u32, line: u32) -> Geometry {
        Geometry { sets_per_slice: sets, slices: 1, ways, line, slice_hash: SliceHash::Modulo, slice_seed: 0 }
    }

    /// The same sets split into `slices` slices (a power of two; see
    /// [`Geometry::stand_in`] for other counts).
    pub fn with_slices(self, slices: u32, slice_hash: SliceHash) -> Geometry {
        Geometry { sets_per_slice: self.sets_per_slice / slices, slices, slice_hash, ..self }
    }

    /// `slices` slices of `sets_per_slice` sets each, by the stand-in hash
    /// with `seed`.
    pub fn stand_in(self, slices: u32, sets_per_slice: u32, seed: u64) -> Geometry {
        Geometry { sets_per_slice, slices, slice_hash: SliceHash::StandIn, slice_seed: seed, ..self }
    }

    pub fn nr_sets(&self) -> usize {
        self.sets_per_slice as usize * self.slices as usize
    }

    pub fn size(&self) -> u64 {
        self.nr_sets() as u64 * u64::from(self.ways) * u64::from(self.line)
    }

    pub fn line_shift(&self) -> u32 {
        self.line.trailing_zeros()
    }

    /// Whether the shape is one [`Cache`](super::Cache) can be built from.
    pub fn is_valid(&self) -> bool {
        let slices_ok = match self.slice_hash {
            SliceHash::Modulo => self.slices.is_power_of_two(),
            SliceHash::Intel => self.slices.is_power_of_two() && self.slices <= INTEL_MAX_SLICES,
            SliceHash::StandIn => (1..=standin::MAX_SLICES).contains(&self.slices),
        };
        self.sets_per_slice.is_power_of_two()
            && slices_ok
            && (1..=MAX_WAYS).contains(&self.ways)
            && self.line.is_power_of_two()
            && self.line >= 8
    }

    /// The physical-address bits that index a set within a slice, lowest
    /// first. With the modulo hash the lowest line bits choose the slice, so
    /// the set bits start above them.
    pub fn set_index_bits(&self) -> std::ops::Range<u32> {
        let skip = match self.slice_hash {
            SliceHash::Modulo => self.slices.trailing_zeros(),
            SliceHash::Intel | SliceHash::StandIn => 0,
        };
        let low = self.line_shift() + skip;
        low..low + self.sets_per_slice.trailing_zeros()
    }

    /// The physical-address bits at or above bit 12 that the slice hash
    /// reads, lowest first: the page-level bits that choose among slices
    /// (COPLACE's "slice-select bits"; its host colors take the lowest few).
    /// Empty when lines, not pages, choose the slice (the modulo hash with at
    /// most 64 slices) or when the cache is unsliced. The stand-in hash reads
    /// the bits from the top of the set index within a slice upwards (17 to
    /// 60 on xeon-gold-6138).
    pub fn slice_select_page_bits(&self) -> Vec<u32> {
        if self.slices <= 1 {
            return Vec::new();
        }
        let mask = match self.slice_hash {
            SliceHash::Modulo => (u64::from(self.slices) - 1) << self.line_shift(),
            SliceHash::Intel => super::slice::intel_mask(self.slices),
            SliceHash::StandIn => return StandIn::page_bits(self.sets_per_slice, self.line_shift()).collect(),
        };
        (PAGE_SHIFT..64).filter(|&b| mask >> b & 1 == 1).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_select_page_bits_by_hash() {
        let g = Geometry::sets(8192, 16, 64);
        assert!(g.slice_select_page_bits().is_empty(), "unsliced");
        assert!(g.with_slices(16, SliceHash::Modulo).slice_select_page_bits().is_empty(), "lines 6-9 choose");
        // o0 = 0x1b_5f57_5440: bits 6, 10, 12, 14, 16, 17, 18, 20, ... so with
        // two slices the lowest page-level slice-select bits are 12 and 14.
        let two = g.with_slices(2, SliceHash::Intel).slice_select_page_bits();
        assert_eq!(&two[..4], &[12, 14, 16, 17]);
        // o1 = 0x2e_b5fa_a880 adds bits 13 and 15 with four slices.
        let four = g.with_slices(4, SliceHash::Intel).slice_select_page_bits();
        assert_eq!(&four[..4], &[12, 13, 14, 15]);
    }

    fn err_key(r: Result<()>) -> String {
        match r {
            Err(Error::Config { key, .. }) => key,
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_skylake_like_and_valid() {
        let cfg = CacheHierarchyConfig::default();
        cfg.validate("machine.cache").unwrap();
        assert_eq!(cfg.l1d.geometry().nr_sets(), 64);
        assert_eq!(cfg.l2.geometry().nr_sets(), 1024);
        assert_eq!(cfg.llc.geometry().nr_sets(), 16384);
        assert_eq!(cfg.llc.latency, 42);
        assert!(!cfg.l1i.enabled);
    }

    #[test]
    fn parses_from_toml_with_sizes_and_names() {
        let text = r#"
            enabled = true
            [l1d]
            size = "48KiB"
            ways = 12
            [llc]
            size = "8MiB"
            slices = 4
            slice_hash = "intel"
            policy = "srrip"
            way_masks = [3, 12]
        "#;
        let cfg: CacheHierarchyConfig = toml::from_str(text).unwrap();
        cfg.validate("machine.cache").unwrap();
        assert_eq!(cfg.l1d.size.bytes(), 48 << 10);
        assert_eq!(cfg.l1d.latency, 4, "unset keys keep their default");
        assert_eq!(cfg.llc.policy, ReplacementKind::Srrip);
        let g = cfg.llc.geometry();
        assert_eq!((g.slices, g.sets_per_slice), (4, 2048));
        assert_eq!(cfg.llc.fill_masks("machine.cache.llc", 2).unwrap(), vec![3, 12]);
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let text = "[l2]\nslices = 2\n";
        assert!(toml::from_str::<CacheHierarchyConfig>(text).is_err(), "slices is an llc key");
        assert!(toml::from_str::<CacheHierarchyConfig>("[l1d]\nenabled = true\n").is_err());
        assert!(toml::from_str::<CacheHierarchyConfig>("[llc]\nslice_hash = \"crc\"\n").is_err());
    }

    #[test]
    fn bad_shapes_name_their_key() {
        let mut l1 = CacheConfig::l1d();
        l1.size = ByteSize(48 << 10); // 96 sets of 8 ways: not a power of two
        assert_eq!(err_key(l1.validate("machine.cache.l1d")), "machine.cache.l1d.size");
        l1 = CacheConfig { line: 48, ..CacheConfig::l1d() };
        assert_eq!(err_key(l1.validate("m.l1d")), "m.l1d.line");
        l1 = CacheConfig { line: 4, ..CacheConfig::l1d() };
        assert_eq!(err_key(l1.validate("m.l1d")), "m.l1d.line");
        l1 = CacheConfig { ways: 0, ..CacheConfig::l1d() };
        assert_eq!(err_key(l1.validate("m.l1d")), "m.l1d.ways");
        l1 = CacheConfig { size: ByteSize(0), ..CacheConfig::l1d() };
        assert_eq!(err_key(l1.validate("m.l1d")), "m.l1d.size");
    }

    #[test]
    fn any_slice_count_under_the_stand_in_hash() {
        // xeon-gold-6138's LLC: 27.5 MiB, 11 ways, 20 slices of 2,048 sets.
        let gold = LlcConfig {
            size: ByteSize(55 << 19),
            ways: 11,
            slices: 20,
            slice_hash: SliceHash::StandIn,
            ..LlcConfig::default()
        };
        assert_eq!(gold.size.bytes(), 28_835_840);
        gold.validate("machine.cache.llc").unwrap();
        let g = gold.geometry();
        assert_eq!((g.slices, g.sets_per_slice, g.size()), (20, 2048, 28_835_840));
        assert!(g.is_valid());
        assert_eq!(g.set_index_bits(), 6..17, "the set within a slice from the line's low bits");
        assert_eq!(g.slice_select_page_bits(), (17..61).collect::<Vec<u32>>());
        let bad = |f: fn(&mut LlcConfig)| {
            let mut c = gold.clone();
            f(&mut c);
            err_key(c.validate("machine.cache.llc"))
        };
        assert_eq!(bad(|c| c.slices = 21), "machine.cache.llc.size", "21 x 11 x 64 does not divide it");
        assert_eq!(bad(|c| c.size = ByteSize(20 * 11 * 64 * 3000)), "machine.cache.llc.size", "3000 sets a slice");
        assert_eq!(bad(|c| c.slice_hash = SliceHash::Modulo), "machine.cache.llc.slices");
        assert_eq!(bad(|c| c.slice_hash = SliceHash::Intel), "machine.cache.llc.slice_hash");
        assert_eq!(bad(|c| c.slices = 0), "machine.cache.llc.slices");
        assert_eq!(bad(|c| c.slices = standin::MAX_SLICES + 1), "machine.cache.llc.slices");
        let mut seeded = gold.clone();
        seeded.slice_seed = 9;
        seeded.validate("machine.cache.llc").unwrap();
        assert_eq!(seeded.geometry().slice_seed, 9);
        seeded.slice_hash = SliceHash::Modulo;
        seeded.slices = 16;
        seeded.size = ByteSize(22 << 20);
        assert_eq!(err_key(seeded.validate("machine.cache.llc")), "machine.cache.llc.slice_seed");
    }

    #[test]
    fn victim_fill_is_non_inclusive() {
        let mut llc = LlcConfig { fill: LlcFill::Victim, ..LlcConfig::default() };
        llc.validate("machine.cache.llc").unwrap();
        llc.inclusive = true;
        assert_eq!(err_key(llc.validate("machine.cache.llc")), "machine.cache.llc.inclusive");
        let parsed: LlcConfig =
            toml::from_str("fill = \"victim\"\nslice_hash = \"stand-in\"\nslice_seed = 3\n").unwrap();
        assert_eq!((parsed.fill, parsed.slice_hash, parsed.slice_seed), (LlcFill::Victim, SliceHash::StandIn, 3));
        assert!(toml::from_str::<LlcConfig>("fill = \"exclusive\"\n").is_err());
    }

    #[test]
    fn llc_slices_hash_and_masks_are_checked() {
        let llc = |f: fn(&mut LlcConfig)| {
            let mut c = LlcConfig::default();
            f(&mut c);
            c.validate("machine.cache.llc")
        };
        assert_eq!(err_key(llc(|c| c.slices = 3)), "machine.cache.llc.slices");
        assert_eq!(err_key(llc(|c| c.slices = 32768)), "machine.cache.llc.slices", "more slices than sets");
        llc(|c| c.slices = 16).unwrap();
        assert_eq!(
            err_key(llc(|c| {
                c.slices = 16;
                c.slice_hash = SliceHash::Intel
            })),
            "machine.cache.llc.slice_hash"
        );
        assert_eq!(err_key(llc(|c| c.way_masks = vec![0xff, 0])), "machine.cache.llc.way_masks[1]");
        assert_eq!(err_key(llc(|c| c.way_masks = vec![0x1_0000])), "machine.cache.llc.way_masks[0]");
        llc(|c| c.way_masks = vec![0xffff]).unwrap();
        let masks = LlcConfig { way_masks: vec![1, 2, 4], ..LlcConfig::default() };
        assert!(masks.fill_masks("k", 2).is_err());
        assert_eq!(LlcConfig::default().fill_masks("k", 2).unwrap(), vec![0xffff; 2]);
    }

    #[test]
    fn line_sizes_must_agree() {
        let mut cfg = CacheHierarchyConfig::default();
        cfg.llc.line = 128;
        cfg.llc.size = ByteSize(32 << 20);
        assert_eq!(err_key(cfg.validate("machine.cache")), "machine.cache.llc.line");
        let mut cfg = CacheHierarchyConfig::default();
        cfg.l1i.line = 32; // ignored while the L1I is off
        cfg.validate("machine.cache").unwrap();
        cfg.l1i.enabled = true;
        assert_eq!(err_key(cfg.validate("machine.cache")), "machine.cache.l1i.line");
    }

    #[test]
    fn set_index_bits_follow_the_slice_hash() {
        let llc = LlcConfig::default().geometry(); // 16384 sets of 64 B lines
        assert_eq!(llc.set_index_bits(), 6..20);
        let intel = llc.with_slices(8, SliceHash::Intel);
        assert_eq!(intel.set_index_bits(), 6..17);
        let modulo = llc.with_slices(8, SliceHash::Modulo);
        assert_eq!(modulo.set_index_bits(), 9..20);
        assert_eq!(modulo.size(), 16 << 20);
    }
}
