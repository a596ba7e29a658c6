//! Programs in sequence on one core (`workload.after`): exit, a fresh
//! address space, frames handed back by the buddy allocator, statistics
//! adding up, natively and in a VM.

use super::testutil::*;
use super::*;
use crate::config::parse_config;
use crate::os::ProcessSpec;
use crate::units::{Asid, Pfn, VirtAddr};

fn frame_of(sim: &Simulation, asid: Asid, vaddr: VirtAddr) -> Pfn {
    let pt = &sim.kernel.proc(asid).aspace.pt;
    pt.lookup(vaddr).unwrap_or_else(|| panic!("{vaddr} of asid {asid} not mapped")).frame
}

/// Faults the 4 KiB page at `vaddr` of `asid` in (a store).
fn touch(sim: &mut Simulation, asid: Asid, vaddr: VirtAddr) {
    sim.kernel.handle_fault(asid, vaddr, true).unwrap();
}

#[test]
fn a_new_process_gets_the_frames_an_exited_one_freed_lowest_first() {
    // Processes 1 and 2 fault pages in turn under `base`: the buddy
    // allocator splits the lowest movable block and hands out its frames
    // lowest first, so with F the first one, 1's pages are F, F+2, F+4,
    // F+6 and 2's F+1, F+3, F+5, F+7 (page-table pages are unmovable:
    // another pageblock). Process 1 exits: its four frames come back as
    // order-0 blocks (their buddies are 2's, so nothing merges), and
    // process 3's faults take the smallest, lowest free blocks first: F,
    // F+2, F+4, F+6; its fifth page comes from the order-3 block at F+8
    // the first split left.
    let cfg = config(&["os.policy=\"base\""]);
    let mut sim = simulate(cfg, vec![]).unwrap();
    let (a, b) = (BASE, BASE.add(64 << 20));
    let spawn = |sim: &mut Simulation| sim.kernel.spawn(ProcessSpec::default()).unwrap();
    let p1 = spawn(&mut sim);
    let p2 = spawn(&mut sim);
    for asid in [p1, p2] {
        let at = if asid == p1 { a } else { b };
        sim.kernel.mmap(asid, at, 8 << 12, true, "heap").unwrap();
    }
    for i in 0..4 {
        touch(&mut sim, p1, a.add(i << 12));
        touch(&mut sim, p2, b.add(i << 12));
    }
    let f = frame_of(&sim, p1, a).raw();
    for i in 0..4 {
        assert_eq!(frame_of(&sim, p1, a.add(i << 12)).raw(), f + 2 * i);
        assert_eq!(frame_of(&sim, p2, b.add(i << 12)).raw(), f + 2 * i + 1);
    }
    sim.kernel.drain_shootdowns().for_each(drop);
    sim.kernel.exit(p1).unwrap();
    let shot: Vec<_> = sim.kernel.drain_shootdowns().collect();
    assert_eq!(shot.len(), 1, "one range: the heap");
    assert_eq!((shot[0].asid, shot[0].start, shot[0].end), (p1, a.vpn(), a.add(8 << 12).vpn()));
    assert!(sim.kernel.proc(p1).exited);
    assert_eq!(sim.kernel.proc(p1).aspace.pt.table_pages(), 0);
    for i in 0..4 {
        assert!(sim.kernel.mem.is_free(Pfn::new(f + 2 * i)));
    }
    let p3 = spawn(&mut sim);
    assert_eq!(p3, p2 + 1, "a new asid, never the exited one again");
    sim.kernel.mmap(p3, a, 8 << 12, true, "heap").unwrap();
    let got: Vec<u64> = (0..5)
        .map(|i| {
            touch(&mut sim, p3, a.add(i << 12));
            frame_of(&sim, p3, a.add(i << 12)).raw()
        })
        .collect();
    assert_eq!(got, [f, f + 2, f + 4, f + 6, f + 8]);
}

const TWO_PROGRAMS: &str = r#"
[machine]
phys_mem = "256MiB"
[run]
check_translations = true
[[workloads]]
kind = "gups"
footprint = "64KiB"
accesses = 2000
[[workloads]]
kind = "stream"
footprint = "48KiB"
accesses = 3000
after = "previous"
"#;

fn run_text(text: &str) -> Simulation {
    run_toml(text, &[])
}

/// The same text with only its `which`th `[[workloads]]` table, without
/// `after` (that program alone).
fn alone(text: &str, which: usize) -> String {
    let parts: Vec<&str> = text.split("[[workloads]]").collect();
    format!("{}[[workloads]]{}", parts[0], parts[1 + which].replace("after = \"previous\"", ""))
}

#[test]
fn the_second_program_starts_on_the_first_ones_frames_and_statistics_add_up() {
    let seq = run_text(TWO_PROGRAMS);
    let first = run_text(&alone(TWO_PROGRAMS, 0));
    let second = run_text(&alone(TWO_PROGRAMS, 1));
    assert_eq!(seq.cores.len(), 1, "one core runs both");
    assert_eq!(seq.cores[0].asid, 2);
    assert!(seq.kernel.proc(1).exited);
    assert_eq!(seq.kernel.proc(1).aspace.mapped_bytes(crate::units::PageSize::Size4K), 0);
    // Program 1 alone maps 16 pages from F (its whole footprint) and, in
    // sequence, frees them all: they merge back, and program 2's 12 pages
    // (three arrays of 16 KiB, initialised in turn) start at the same F.
    let f1: Vec<Pfn> = (0..16).map(|i| frame_of(&first, 1, first_array(&first, 1).add(i << 12))).collect();
    assert!(f1.windows(2).all(|w| w[1].raw() == w[0].raw() + 1), "{f1:?}");
    let lowest = |sim: &Simulation, asid| {
        let pt = &sim.kernel.proc(asid).aspace.pt;
        let leaves = pt.leaves_in(VirtAddr::new(0), VirtAddr::new(crate::workload::LAYOUT_TOP));
        leaves.iter().map(|(_, m)| m.frame.raw()).min().unwrap()
    };
    assert_eq!(lowest(&seq, 2), f1[0].raw());
    assert_eq!(lowest(&second, 1), f1[0].raw(), "alone, it starts there too: a fresh machine");
    let s = seq.stats();
    let sum = |name: &str| stat(&first, name) + stat(&second, name);
    for name in ["core0.instructions", "core0.loads", "core0.stores", "faults"] {
        assert_eq!(s.get(name).unwrap().as_f64(), sum(name), "{name}");
    }
}

fn first_array(sim: &Simulation, asid: Asid) -> VirtAddr {
    sim.kernel.proc(asid).aspace.vmas.iter().map(|v| v.start).min().unwrap()
}

#[test]
fn programs_run_in_sequence_in_a_vm() {
    let text = r#"
[machine]
phys_mem = "512MiB"
[run]
check_translations = true
[virt]
enabled = true
[[vms]]
guest_mem = "128MiB"
[[vms.workloads]]
kind = "gups"
footprint = "64KiB"
accesses = 2000
[[vms.workloads]]
kind = "stream"
footprint = "48KiB"
accesses = 3000
after = "previous"
"#;
    let sim = run_text(text);
    assert_eq!(sim.cores.len(), 1);
    assert_eq!(sim.cores[0].asid, 2);
    assert_eq!(sim.virt.as_ref().unwrap().guest_asids[0], [1, 2]);
    // Program 2 runs on guest frames program 1 freed, already backed:
    // no EPT violation for its data pages beyond those of program 1's.
    assert!(stat(&sim, "core0.instructions") > 0.0);
}

#[test]
fn after_needs_a_program_before_it_and_knows_one_value() {
    let bad = |text: &str| match parse_config(text, "t.toml", &[]) {
        Err(e) => e.to_string(),
        Ok(cfg) => Simulation::new(cfg).unwrap_err().to_string(),
    };
    let first = TWO_PROGRAMS.replacen("accesses = 2000", "accesses = 2000\nafter = \"previous\"", 1);
    assert!(bad(&first).contains("workloads[0].after"), "{}", bad(&first));
    let next = TWO_PROGRAMS.replace("\"previous\"", "\"next\"");
    let msg = parse_config(&next, "t.toml", &[]).unwrap_err().to_string();
    assert!(msg.contains("workloads[1].after") || msg.contains("after"), "{msg}");
    let cores = parse_config(TWO_PROGRAMS, "t.toml", &["machine.cores=2".into()]).and_then(|c| c.validate());
    let msg = cores.expect_err("two programs in sequence are one core").to_string();
    assert!(msg.contains("machine.cores"), "{msg}");
}
