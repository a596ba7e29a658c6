//! A small system defined here, in a test module, and registered through
//! the registry alone (its one `#[cfg(test)]` line in `systems/mod.rs`):
//! the worked proof that a system is its code and one line. `toy` backs a
//! fault's whole 2 MiB region with one order-9 block mapped by 512 PTEs,
//! marks the PMD entry with its software bit (55), and its walk step reads
//! the table's first line and caches one L2 entry of its own kind for the
//! whole region; at most `os.toy.pages` regions, then it declines (the
//! chain's `base` backs the rest). It counts its pages (`os.toy.pages`).

use serde::{Deserialize, Serialize};

use super::{Build, Caps, Hooks, Policy, Registration, SystemTable, TableCheck};
use crate::config::parse_config;
use crate::engine::Simulation;
use crate::error::{Error, Result};
use crate::hw::refs::RefKind;
use crate::hw::tlb::{EntryKind, ExtPayload, Holds, ReachSize, TlbEntry};
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::paging::leaf_ext::{LeafExtension, LeafWalk};
use crate::paging::pte::SoftBit;
use crate::phys::{FrameOwner, Migratetype};
use crate::stat::{put_ints, Section, StatDecl, StatTable, Stats};
use crate::units::{Asid, Order, PageSize, Pfn, VirtAddr, PAGE_SHIFT};

const HUGE: u64 = 2 << 20;
/// Its software bit: 55, one of `pte::LEAF_EXT` no other system took.
const TOY: u64 = 1 << 55;

pub const REGISTRATION: Registration = Registration {
    name: "toy",
    policies: &[Policy { name: "toy", chain: &["toy", "base"], doc: "A test's system (systems/toy_tests.rs)." }],
    fault_kinds: &["toy"],
    terminal: false,
    caps: Caps::NONE,
    hooks: Hooks::NONE,
    stats: &[StatTable {
        section: Section::Systems,
        stats: &[
            StatDecl::count("os.faults.toy", "faults that made a toy page").os(),
            StatDecl::count("os.toy.pages", "toy pages made").os(),
        ],
    }],
    idle_stats: |out| put_ints(out, "os.toy.", &[("pages", 0)]),
    build: |b: &Build, k: &mut Kernel| {
        k.plug(Box::new(Toy { max: b.os.toy.pages, made: 0, live: Vec::new() }));
        Ok(())
    },
};

/// `os.toy`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToyConfig {
    /// At most this many 2 MiB regions are toy pages.
    pub pages: u64,
}

impl Default for ToyConfig {
    fn default() -> Self {
        ToyConfig { pages: 4 }
    }
}

impl SystemTable for ToyConfig {
    fn validate(&self, check: &TableCheck) -> Result<()> {
        if self.pages == 0 {
            return Err(Error::config(format!("{}.toy.pages", check.prefix), "must be at least 1"));
        }
        Ok(())
    }

    /// Written out only when changed: the other tests' configurations
    /// stay what they were.
    fn hidden(&self) -> bool {
        *self == ToyConfig::default()
    }
}

#[derive(Debug)]
struct Toy {
    max: u64,
    made: u64,
    /// Its regions, by process and 2 MiB region.
    live: Vec<(Asid, u64)>,
}

impl System for Toy {
    fn name(&self) -> &'static str {
        "toy"
    }

    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let base = f.vaddr.align_down(HUGE);
        if self.made == self.max || !f.vma.covers(base, HUGE) || !k.range_is_empty(f.asid, base, PageSize::Size2M) {
            return Ok(None);
        }
        let owner = FrameOwner::User { asid: f.asid, vpn: base.vpn() };
        let Some(block) = k.mem.alloc(Order::PMD, Migratetype::Movable, owner) else { return Ok(None) };
        for i in 0..512 {
            k.map_user(f.asid, base.add(i << PAGE_SHIFT), block.add(i), PageSize::Size4K, f.vma.writable)?;
        }
        k.page_table_mut(f.asid).set_leaf_ext(base, TOY, true);
        self.made += 1;
        self.live.push((f.asid, base.raw() >> 21));
        Ok(Some(FaultOutcome { kind: "toy", size: PageSize::Size2M, cycles: k.costs.thp }))
    }

    /// A toy page changed in part is 512 plain PTEs again.
    fn before_unmap(&mut self, k: &mut Kernel, asid: Asid, start: VirtAddr, end: VirtAddr) {
        self.demote(k, asid, start, end);
    }

    fn protect(&mut self, k: &mut Kernel, asid: Asid, start: VirtAddr, end: VirtAddr) {
        self.demote(k, asid, start, end);
    }

    fn report(&self, _: &Kernel, out: &mut Stats) {
        put_ints(out, "os.toy.", &[("pages", self.made)]);
    }

    fn reset_stats(&mut self) {
        self.made = 0;
    }
}

impl Toy {
    fn demote(&mut self, k: &mut Kernel, asid: Asid, start: VirtAddr, end: VirtAddr) {
        let (first, last) = (start.raw() >> 21, (end.raw() - 1) >> 21);
        for &(a, r) in self.live.iter().filter(|&&(a, r)| a == asid && (first..=last).contains(&r)) {
            k.page_table_mut(a).set_leaf_ext(VirtAddr::new(r << 21), TOY, false);
        }
        self.live.retain(|&(a, r)| a != asid || !(first..=last).contains(&r));
    }
}

/// Its one L2 entry kind: the region's first frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToyPage {
    pub first: Pfn,
}

impl ExtPayload for ToyPage {
    fn kind(&self) -> u8 {
        0
    }
    fn frame_of(&self, offset: u64) -> Pfn {
        self.first.add(offset >> PAGE_SHIFT)
    }
    fn l1_piece(&self) -> ReachSize {
        ReachSize::Size4K
    }
}

/// Its hardware: the kind and the walk step at a PMD entry with bit 55.
#[derive(Debug)]
pub struct ToyLeaf;

impl LeafExtension for ToyLeaf {
    type Payload = ToyPage;
    type State = ();
    const KINDS: &'static [&'static str] = &["toy"];
    const SOFT_BIT: Option<SoftBit> = Some(SoftBit { name: "toy", mask: TOY, levels: &[2], leaf_ext: true });

    /// One reference, the table's first line; the region's frames are
    /// those of its first PTE on (the fault took one block).
    fn walk<X: Holds<ToyPage, ()>>(w: &mut LeafWalk<'_, X>) -> TlbEntry<ToyPage> {
        w.refs.push(w.pt.node_frame(w.table).addr(), RefKind::Walk);
        w.stats.walk_mem_refs += 1;
        let base = w.vaddr.align_down(HUGE);
        let first = w.pt.lookup(base).expect("a toy page's 512 PTEs are present");
        TlbEntry {
            asid: w.asid,
            vbase: base.vpn(),
            size: ReachSize::Size2M,
            writable: first.pte.writable(),
            dirty: true,
            kind: EntryKind::Ext(ToyPage { first: first.frame }),
        }
    }
}

/// gups over 8 MiB under `os.policy = "toy"` with every TLB hit checked.
fn toy_run(extra: &[&str]) -> Result<Simulation> {
    let mut set = vec![
        "machine.phys_mem=\"256MiB\"",
        "workload.kind=\"gups\"",
        "workload.footprint=\"8MiB\"",
        "workload.accesses=20000",
        "os.policy=\"toy\"",
        "run.check_translations=true",
    ];
    set.extend_from_slice(extra);
    let cfg = parse_config("", "toy.toml", &set.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
    let mut sim = Simulation::new(cfg)?;
    sim.run()?;
    Ok(sim)
}

#[test]
fn a_system_defined_in_a_test_module_runs_through_the_registry_alone() {
    let sim = toy_run(&["os.toy.pages=2"]).unwrap();
    let s = sim.stats();
    // Its configuration key, its fault kind and its statistic.
    assert_eq!(s["os.toy.pages"].as_f64(), 2.0);
    assert_eq!(s["os.faults.toy"].as_f64(), 2.0);
    // The other 4 MiB of the 8: 4 KiB pages from the chain's `base`.
    assert_eq!(s["os.faults.base"].as_f64(), 1024.0);
    // Its TLB kind, numbered by the registry after the others', is in the
    // L2: one entry per toy page.
    let kind = super::ExtKind::Toy(ToyPage::default()).kind();
    assert!(kind > super::ExtKind::Gtsm(Default::default()).kind(), "numbered after the systems before it");
    let kinds: Vec<u8> = sim.cores[0].mmu.tlb.l2_kinds().map(|(k, _)| k).collect();
    assert_eq!(kinds.iter().filter(|&&k| k == kind).count(), 2, "{kinds:?}");
    // Every statistic of every run names it, at zero when it is not in
    // the chain.
    assert_eq!(toy_run(&["os.policy=\"base\""]).unwrap().stats()["os.toy.pages"].as_f64(), 0.0);
}

#[test]
fn its_table_is_checked_by_it_and_unknown_keys_are_refused() {
    let err = |set: &str| toy_run(&[set]).map(|_| ()).unwrap_err().to_string();
    assert!(err("os.toy.pages=0").contains("os.toy.pages"), "{}", err("os.toy.pages=0"));
    assert!(err("os.toy.colour=1").contains("os.toy.colour"), "{}", err("os.toy.colour=1"));
}

/// A policy of the hypervisor defined here and registered through the
/// registry alone (its `#[cfg(test)]` `host` line): every `period_ms` it
/// reads and clears VM 0's EPT accessed bits, keeps the guest frames of
/// the first interval's accessed huge leaves, splits each of them EPT-only
/// at the next interval and collapses it back at the one after (a
/// HugeScope-like tracker's fine phase), and charges VM 0 one exit per
/// interval; it counts its scans' accessed leaves (`toy_host.accessed`).
pub mod host {
    use serde::{Deserialize, Serialize};

    use crate::error::Result;
    use crate::os::WakeClock;
    use crate::stat::{put_ints, Section, StatDecl, StatTable, Stats};
    use crate::units::{Gfn, PageSize};
    use crate::virt::ept_bits::EptClear;
    use crate::virt::hypervisor::{HostBuild, HostCtx, HostPolicy, HostRegistration};

    pub const POLICY: HostRegistration<ToyHostConfig> = HostRegistration {
        name: "toy_host",
        build: |cfg, b: &HostBuild| {
            let clock = WakeClock::every_ms(cfg.period_ms, b.freq_ghz);
            cfg.enabled
                .then(|| Box::new(ToyHost { clock, phase: 0, hot: Vec::new(), accessed: 0 }) as Box<dyn HostPolicy>)
        },
        stats: &[StatTable {
            section: Section::Virtualization,
            stats: &[StatDecl::count("toy_host.accessed", "huge EPT leaves the test's policy found accessed").machine()],
        }],
    };

    /// `virt.host.toy_host`.
    #[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct ToyHostConfig {
        pub enabled: bool,
        pub period_ms: f64,
    }

    impl crate::systems::SystemTable for ToyHostConfig {
        fn hidden(&self) -> bool {
            *self == ToyHostConfig::default()
        }
    }

    #[derive(Debug)]
    struct ToyHost {
        clock: WakeClock,
        phase: u64,
        hot: Vec<Gfn>,
        accessed: u64,
    }

    impl HostPolicy for ToyHost {
        fn name(&self) -> &'static str {
            "toy_host"
        }

        fn run_due(&mut self, ctx: &mut HostCtx<'_, '_>) -> Result<()> {
            while self.clock.due(ctx.now) {
                let frames = ctx.hv.vms[0].guest_frames;
                let leaves = ctx.hv.scan_ept_bits(0, Gfn::new(0), Gfn::new(frames), EptClear::Accessed, true);
                let huge = leaves.iter().filter(|l| l.accessed && l.size == PageSize::Size2M);
                self.accessed += huge.clone().count() as u64;
                match self.phase {
                    0 => self.hot = huge.map(|l| l.gfn).collect(),
                    1 => {
                        for &gfn in &self.hot {
                            ctx.hv.ept_split(0, gfn)?;
                        }
                    }
                    2 => {
                        for &gfn in &self.hot {
                            ctx.hv.ept_collapse(0, gfn, PageSize::Size2M)?;
                        }
                    }
                    _ => {}
                }
                self.phase += 1;
                ctx.charge_exits(0, 1, 1000.0);
            }
            Ok(())
        }

        fn report(&self, out: &mut Stats) {
            put_ints(out, "toy_host.", &[("accessed", self.accessed)]);
        }

        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }
}

#[test]
fn a_policy_of_the_hypervisor_defined_in_a_test_module_runs_through_the_registry_alone() {
    let run = |on: bool| {
        let set: Vec<String> = [
            "machine.phys_mem=\"512MiB\"",
            "virt.enabled=true",
            "virt.guest_mem=\"64MiB\"",
            "virt.host.policy=\"thp\"",
            "virt.host.thp.khugepaged=false",
            "os.policy=\"thp\"",
            "workload.kind=\"gups\"",
            "workload.footprint=\"16MiB\"",
            "workload.accesses=200000",
            "run.check_translations=true",
            "virt.host.toy_host.period_ms=0.05",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(on.then(|| "virt.host.toy_host.enabled=true".to_string()))
        .collect();
        let mut sim = Simulation::new(parse_config("", "toy.toml", &set).unwrap()).unwrap();
        sim.run().unwrap();
        sim.stats()
    };
    let (off, on) = (run(false), run(true));
    // Its scans, its EPT-only splits and collapses of the hot huge leaves,
    // its VM exits, its statistic: all through the hypervisor's services.
    assert!(on["host.ept_scans"].as_f64() >= 3.0, "{}", on["host.ept_scans"].as_f64());
    let splits = on["host.ept_splits"].as_f64();
    assert!(splits > 0.0 && on["host.ept_collapses"].as_f64() == splits, "every split leaf collapsed back");
    assert!(on["toy_host.accessed"].as_f64() > 0.0);
    let exits = on["virt.vm_exits"].as_f64() - off["virt.vm_exits"].as_f64();
    assert_eq!(exits, on["host.ept_scans"].as_f64(), "one exit charged per interval");
    assert!(!off.contains_key("toy_host.accessed"), "a policy that is off reports nothing");
    assert_eq!(off["host.ept_scans"].as_f64(), 0.0);
}
