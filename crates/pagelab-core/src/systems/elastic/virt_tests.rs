//! Elastic Translations in the hypervisor, as the artifact's virtualized
//! runs (`scripts/run-fig10-virt.sh`) set it up: greedy ET in the host
//! (CoalaPaging placing EPT faults for 32 MiB contiguity, no Leshy) with
//! CoalaKhugepaged's asynchronous greedy 32 MiB promotion
//! (`os.elastic.greedy_32m`, the artifact's `khuge_etheap_async`); and
//! what the guest's TLB reach becomes over it.

use std::sync::{Arc, Mutex};

use super::hints::HintTable;
use super::khugepaged::CoalaKhugepaged;
use crate::config::SimConfig;
use crate::engine::testutil::{batch, config, mmap, simulate, stat, BASE};
use crate::engine::Simulation;
use crate::paging::pte::CONTIGUOUS;
use crate::units::{PageSize, VirtAddr};
use crate::workload::Access;

const MIB2: u64 = 2 << 20;
const MIB32: u64 = 32 << 20;

fn every(start: VirtAddr, step: u64, n: u64) -> Vec<Access> {
    (0..n).map(|i| Access::store(start.add(i * step), 8, 1)).collect()
}

fn contiguous_2m(sim: &Simulation, va: VirtAddr) -> bool {
    let m = sim.kernel.proc(1).aspace.pt.lookup(va);
    m.is_some_and(|m| m.size == PageSize::Size2M && m.pte.raw() & CONTIGUOUS != 0)
}

#[test]
fn greedy_promotion_hints_each_aligned_32m_range_of_a_large_vma_once_and_promotes_one_per_wakeup() {
    // An 80 MiB VMA from BASE + 16 MiB: two aligned 32 MiB ranges inside
    // (BASE + 32 MiB and + 64 MiB), the first 16 MiB none. One 4 KiB page
    // per 2 MiB (faults without 32 MiB contiguity: the fault threshold is
    // above the VMA).
    let cfg = config(&[
        "machine.preset=\"ampere-altra\"",
        "machine.phys_mem=\"256MiB\"",
        "os.policy=\"elastic\"",
        "os.elastic.leshy=\"off\"",
        "os.elastic.vma_threshold_32m=\"1GiB\"",
    ]);
    let events = vec![mmap(BASE.add(16 << 20), 80 << 20)];
    let mut sim = simulate(cfg.clone(), vec![batch(events, every(BASE.add(16 << 20), MIB2, 40))]).unwrap();
    let hints = Arc::new(Mutex::new(HintTable::default()));
    // 4096 pages to scan a wake-up: one 32 MiB range (8192 pages) each.
    let mut daemon = CoalaKhugepaged::new(hints.clone(), &cfg.os.thp, 3.0).greedy_32m(MIB32);
    daemon.scan(&mut sim.kernel);
    let pending: Vec<u64> = super::hints::lock(&hints).by_asid[&1].pending().map(|(b, _)| b).collect();
    assert_eq!(pending, vec![BASE.add(MIB32 * 2).raw()], "two ranges hinted, the first promoted");
    assert_eq!(daemon.promotions(), [0, 0, 1]);
    assert!(contiguous_2m(&sim, BASE.add(MIB32)) && !contiguous_2m(&sim, BASE.add(2 * MIB32)));
    daemon.scan(&mut sim.kernel);
    assert_eq!(daemon.promotions(), [0, 0, 2]);
    assert!(contiguous_2m(&sim, BASE.add(2 * MIB32 + MIB32 - 4096)));
    daemon.scan(&mut sim.kernel);
    assert_eq!(daemon.promotions(), [0, 0, 2], "nothing left: the VMA is not hinted again");
    assert!(super::hints::lock(&hints).by_asid[&1].pending().next().is_none());
    // The 16 MiB below the first aligned range stay 4 KiB pages.
    assert_eq!(sim.kernel.proc(1).aspace.pt.lookup(BASE.add(16 << 20)).unwrap().size, PageSize::Size4K);
}

#[test]
fn greedy_promotion_without_coala_khugepaged_is_refused_naming_the_key() {
    let text = "[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\n";
    let over: Vec<String> = ["os.policy=\"elastic\"", "os.elastic.greedy_32m=true", "os.elastic.khugepaged=false"]
        .map(String::from)
        .to_vec();
    let err = crate::config::parse_config(text, "t.toml", &over).unwrap_err().to_string();
    assert!(err.contains("os.elastic.greedy_32m"), "{err}");
}

/// A VM of 128 MiB on the N1 (512 MiB), guest `guest` over host `host`
/// (policies and their keys), every TLB hit checked: stores to each 4 KiB
/// page of a 64 MiB VMA, then 2,048 loads, each in another 2 MiB page than the last.
fn vm_run(guest: &[&str], host: &[&str]) -> Simulation {
    let mut all = vec![
        "machine.preset=\"ampere-altra\"",
        "machine.phys_mem=\"512MiB\"",
        "virt.enabled=true",
        "virt.guest_mem=\"128MiB\"",
        "run.check_translations=true",
        // TLBs far smaller than the N1's, so that 32 2 MiB entries do not
        // fit and 2 32 MiB ones do: an L2 of 10 entries, L1s of 4.
        "machine.tlb.l2_entries=10",
        "machine.tlb.l2_ways=5",
        "machine.tlb.l1_4k_entries=4",
        "machine.tlb.l1_4k_ways=4",
        "machine.tlb.l1_64k_entries=4",
        "machine.tlb.l1_64k_ways=4",
        "machine.tlb.l1_2m_entries=4",
        "machine.tlb.l1_2m_ways=4",
    ];
    all.extend_from_slice(guest);
    all.extend_from_slice(host);
    let cfg: SimConfig = config(&all);
    // Load i goes to 2 MiB page i % 32, 64 KiB slot i / 32 of it.
    let at = |i: u64| BASE.add((i % 32) * MIB2 + (i / 32 % 32) * (64 << 10));
    let loads: Vec<Access> = (0..2048).map(|i| Access::load(at(i), 8, 1)).collect();
    let batches = vec![batch(vec![mmap(BASE, 64 << 20)], every(BASE, 4096, 16384)), batch(vec![], loads)];
    simulate(cfg, batches).unwrap()
}

const GUEST_ET: [&str; 2] = ["os.policy=\"elastic\"", "os.elastic.leshy=\"off\""];
const HOST_ET: [&str; 4] = [
    "virt.host.policy=\"elastic\"",
    "virt.host.elastic.leshy=\"off\"",
    "virt.host.elastic.greedy_32m=true",
    "virt.host.thp.scan_sleep_ms=1",
];

#[test]
fn et_in_guest_and_host_gives_32m_combined_entries_where_thp_gives_2m_ones() {
    let et = vm_run(&GUEST_ET, &HOST_ET);
    // The host's guest memory: 2 MiB EPT leaves in 32 MiB contiguous
    // ranges (placed so at the EPT faults, or promoted).
    assert!(stat(&et, "host.mem.mapped.32m") >= 64.0 * (1 << 20) as f64, "the guest's 64 MiB at least");
    assert!(stat(&et, "mem.mapped.32m") == 64.0 * (1 << 20) as f64, "the guest's VMA in two 32 MiB ranges");
    let thp = vm_run(&["os.policy=\"thp\""], &["virt.host.policy=\"thp\""]);
    // 2,048 loads cycling over 64 MiB: THP's 32 2 MiB entries do not fit
    // in 14, so every load misses the L2; ET's two 32 MiB entries fit.
    let (et_misses, thp_misses) = (stat(&et, "dtlb.l2.misses"), stat(&thp, "dtlb.l2.misses"));
    assert!(thp_misses >= 2048.0, "THP {thp_misses}");
    assert!(et_misses * 10.0 < thp_misses, "ET {et_misses} L2 TLB misses, THP {thp_misses}");
}
