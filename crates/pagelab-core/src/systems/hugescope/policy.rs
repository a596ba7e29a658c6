//! HugeScope's default page-size policy (its paper, section 3.4): which hot
//! huge pages to split and which split regions to coalesce, from the hot
//! page pressure and each huge page's skew.
//!
//! PSR = 1 - Nb / 512 (Nb: the huge page's 4 KiB regions accessed in the
//! fine phase). The hot page pressure HP starts at N_hot - N_line (the hot
//! bytes the backend counted against its waterline, e.g. the fast tier's
//! size); splitting huge page i lowers it by PSR_i x 2 MiB (its cold part
//! stops counting as hot), coalescing region i raises it by as much. While
//! HP > 0 the policy splits, PSR high to low; while HP < 0 it coalesces,
//! PSR low to high.
//!
//! Two readings the paper leaves open, taken here: a huge page with PSR 0
//! (every region accessed) is never split, since its split lowers HP by
//! nothing and only costs TLB reach; and the last coalesce may take HP
//! above 0 (the paper's rule stops only once HP >= 0). Ties in PSR go by
//! guest frame, so a plan is deterministic.

/// Bytes of a 2 MiB page.
const HUGE: f64 = (2u64 << 20) as f64;

/// 4 KiB regions of a 2 MiB page.
pub const REGIONS: u32 = 512;

/// A huge page (or a split region) as the policy sees it: its first guest
/// frame and how many of its 512 regions the fine phase saw accessed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Skew {
    pub gfn: u64,
    pub accessed_regions: u32,
}

impl Skew {
    /// 1 - Nb / 512.
    pub fn psr(&self) -> f64 {
        1.0 - f64::from(self.accessed_regions.min(REGIONS)) / f64::from(REGIONS)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decision {
    Split(u64),
    Coalesce(u64),
}

/// The plan for one round: `huge` are the hot huge pages (mapped huge now),
/// `split` the regions split earlier; `hot_bytes` and `waterline` give
/// HP's start. Returns the decisions in order and HP after them.
pub fn plan(hot_bytes: u64, waterline: u64, huge: &[Skew], split: &[Skew]) -> (Vec<Decision>, f64) {
    let mut hp = hot_bytes as f64 - waterline as f64;
    let mut decisions = Vec::new();
    if hp > 0.0 {
        for s in by_psr(huge, true).into_iter().take_while(|s| s.psr() > 0.0) {
            if hp <= 0.0 {
                break;
            }
            hp -= s.psr() * HUGE;
            decisions.push(Decision::Split(s.gfn));
        }
    } else if hp < 0.0 {
        for s in by_psr(split, false) {
            if hp >= 0.0 {
                break;
            }
            hp += s.psr() * HUGE;
            decisions.push(Decision::Coalesce(s.gfn));
        }
    }
    (decisions, hp)
}

/// `pages` by PSR, high to low (`descending`) or low to high, ties by
/// guest frame.
fn by_psr(pages: &[Skew], descending: bool) -> Vec<Skew> {
    let mut v = pages.to_vec();
    v.sort_by(|a, b| {
        let order = a.psr().total_cmp(&b.psr());
        (if descending { order.reverse() } else { order }).then(a.gfn.cmp(&b.gfn))
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn skew(gfn: u64, accessed_regions: u32) -> Skew {
        Skew { gfn, accessed_regions }
    }

    #[test]
    fn psr_is_the_share_of_regions_not_accessed() {
        assert_eq!(skew(0, 0).psr(), 1.0);
        assert_eq!(skew(0, 128).psr(), 0.75);
        assert_eq!(skew(0, 512).psr(), 0.0);
    }

    #[test]
    fn under_pressure_it_splits_the_most_skewed_first_until_hp_is_gone() {
        // Hot 10 MiB against a 7 MiB waterline: HP = 3 MiB. PSRs: page 512
        // 0.75 (128 regions), 1024 0.5, 1536 0.25, 2048 0 (all accessed),
        // 2560 0.75 (ties 512, after it by frame).
        let huge = [skew(1024, 256), skew(512, 128), skew(2048, 512), skew(1536, 384), skew(2560, 128)];
        let (d, hp) = plan(10 * MIB, 7 * MIB, &huge, &[]);
        // 3 MiB - 0.75 x 2 (512) - 0.75 x 2 (2560) = 0: two splits.
        assert_eq!(d, vec![Decision::Split(512), Decision::Split(2560)]);
        assert_eq!(hp, 0.0);
        // 4 MiB of pressure: 4 - 1.5 - 1.5 - 1.0 (1024) = 0; at 5 MiB the
        // 0.25 page goes too and the PSR-0 page never does.
        assert_eq!(plan(11 * MIB, 7 * MIB, &huge, &[]).0.len(), 3);
        let (d, hp) = plan(20 * MIB, 7 * MIB, &huge, &[]);
        assert_eq!(d.len(), 4);
        assert!(!d.contains(&Decision::Split(2048)));
        assert_eq!(hp, (13.0 - 1.5 - 1.5 - 1.0 - 0.5) * MIB as f64, "pressure left: nothing more to gain");
    }

    #[test]
    fn with_room_it_coalesces_the_least_skewed_first_and_may_pass_zero() {
        // Hot 6 MiB against 7: HP = -1 MiB. Split regions' PSRs: 0.5
        // (frame 0), 0.125 (frame 512), 0.875 (frame 1024).
        let split = [skew(0, 256), skew(512, 448), skew(1024, 64)];
        let (d, hp) = plan(6 * MIB, 7 * MIB, &[], &split);
        // -1 + 0.25 (512) = -0.75; + 1.0 (0) = +0.25: stop.
        assert_eq!(d, vec![Decision::Coalesce(512), Decision::Coalesce(0)]);
        assert_eq!(hp, 0.25 * MIB as f64);
    }

    #[test]
    fn at_the_waterline_nothing_changes() {
        let pages = [skew(0, 1)];
        assert_eq!(plan(7 * MIB, 7 * MIB, &pages, &pages), (vec![], 0.0));
    }
}
