//! HugeScope (Lu et al., USENIX ATC '24): hot-bloat-aware huge pages in the
//! hypervisor. Built so far: its per-page access history (`history`), its
//! page-size policy from the hot page pressure and each huge page's skew
//! (`policy`, the paper's section 3.4) and the artifact's threshold variant
//! (`threshold`), each a pure computation with hand-worked tests. Its
//! mechanism beneath them is the hypervisor's: the EPT A/D scan
//! (`virt::ept_bits`) and the EPT-only split and collapse
//! (`virt::ept_split`). Not built yet (issue 36): the two-phase tracker as a
//! host policy with its registration and `virt.host.hugescope.*` keys, the
//! baseline trackers, HS-TMM and HS-SHARE, and the experiments.

pub mod history;
pub mod policy;
pub mod threshold;
