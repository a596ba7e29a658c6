//! `coloring`: PALLOC-style page coloring. A page's color is the
//! concatenation of chosen physical-address bits (`hw::cache::ColorMap`);
//! frames come from the kernel's color pool (`os::ColorPool`). Among the
//! allowed colors that have pages, one is picked round-robin (PALLOC's
//! per-CPU counter modulo the number found). `bin-hopping` is the same
//! system with another choice of color (`bin_hopping.rs`). Neither ever
//! declines a fault, so either can end a chain.

use serde::{Deserialize, Serialize};

use super::{Build, Caps, Hooks, Policy, Registration, SystemTable};
use crate::error::{Error, Result};
use crate::os::{Fault, FaultOutcome, Kernel, System};
use crate::phys::FrameOwner;
use crate::stat::{Section, StatDecl, StatTable};
use crate::units::{Asid, PageSize, Pfn};

/// The colored fault kind, `coloring`'s and `bin-hopping`'s.
pub(super) const STATS: &[StatTable] = &[StatTable {
    section: Section::Faults,
    stats: &[StatDecl::count(
        "os.faults.colored",
        "faults `coloring` or `bin-hopping` backed with a 4 KiB page of \
        an allowed color",
    )
    .os()],
}];

pub const REGISTRATION: Registration = Registration {
    name: "coloring",
    policies: &[Policy { name: "coloring", chain: &["coloring"], doc: "PALLOC-style page coloring of 4 KiB pages." }],
    fault_kinds: &["colored"],
    terminal: true,
    caps: Caps::NONE,
    hooks: Hooks::NONE,
    stats: STATS,
    idle_stats: |_| {},
    build,
};

fn build(_: &Build, k: &mut Kernel) -> Result<()> {
    k.plug(Box::new(Coloring { name: "coloring", choose: round_robin }));
    Ok(())
}

/// PALLOC-style coloring.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ColoringConfig {
    /// Physical-address bits whose concatenation is a page's color (PALLOC's
    /// mask). Empty = `machine.color_bits`.
    pub bits: Vec<u32>,
}

/// How a coloring system picks among the colors that have free pages
/// (`candidates`): the process's allowed colors (`allowed`, all when
/// empty) of the machine's `nr_colors`, and its cursor, which it advances.
pub type ChooseColor = fn(candidates: &[u32], allowed: &[u32], nr_colors: u32, cursor: &mut usize) -> u32;

/// 4 KiB pages of allowed colors, each from the color `choose` picks:
/// round-robin among those with free pages (`coloring`, PALLOC's per-CPU
/// counter modulo the number found), or another choice (`bin-hopping`'s).
#[derive(Debug)]
pub struct Coloring {
    pub(super) name: &'static str,
    pub(super) choose: ChooseColor,
}

/// PALLOC's choice: the cursor modulo the colors found with free pages.
fn round_robin(candidates: &[u32], _allowed: &[u32], _nr_colors: u32, cursor: &mut usize) -> u32 {
    let c = candidates[*cursor % candidates.len()];
    *cursor = cursor.wrapping_add(1);
    c
}

impl System for Coloring {
    fn name(&self) -> &'static str {
        self.name
    }

    fn fault(&mut self, k: &mut Kernel, f: &Fault) -> Result<Option<FaultOutcome>> {
        let (asid, vaddr) = (f.asid, f.vaddr);
        let page = vaddr.align_down(4096);
        let frame = self.pick_frame(k, asid, || format!("{vaddr}"))?;
        k.mem.set_owner(frame, FrameOwner::User { asid, vpn: page.vpn() });
        k.map_user(asid, page, frame, PageSize::Size4K, f.vma.writable)?;
        Ok(Some(FaultOutcome { kind: "colored", size: PageSize::Size4K, cycles: k.costs.colored }))
    }

    /// A page-cache page gets its color as the process's next 4 KiB fault
    /// would: the same cursor moves (Linux's page allocator serves both).
    fn alloc_page(&mut self, k: &mut Kernel, asid: Asid, owner: FrameOwner) -> Result<Option<Pfn>> {
        let frame = self.pick_frame(k, asid, || "a page-cache page".to_string())?;
        k.mem.set_owner(frame, owner);
        Ok(Some(frame))
    }
}

impl Coloring {
    /// A free frame of one of the process's allowed colors, chosen
    /// by its `choose`; its cursor advances. `what` names the
    /// page in the out-of-memory message (built only then: faults are many).
    fn pick_frame(&self, k: &mut Kernel, asid: Asid, what: impl FnOnce() -> String) -> Result<Pfn> {
        let allowed = k.proc(asid).colors.clone();
        let mut cursor = k.proc(asid).color_cursor;
        let nr_colors = k.color_map().nr_colors();
        let choose = self.choose;
        let frame =
            k.color_pool.alloc(&mut k.mem, &allowed, |candidates| choose(candidates, &allowed, nr_colors, &mut cursor));
        k.proc_mut(asid).color_cursor = cursor;
        frame.ok_or_else(|| {
            let share = if allowed.is_empty() {
                String::new()
            } else {
                format!(" ({} of {nr_colors} colors allowed by workload.colors)", allowed.len())
            };
            Error::OutOfMemory(format!("no frame of an allowed color for {}{share}", what()))
        })
    }
}

impl SystemTable for ColoringConfig {}
