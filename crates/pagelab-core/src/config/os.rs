//! The `os` table. Its parts sit beside the code that reads them: the
//! kernel's keys in `os::config`, the chain and each system's table in
//! `systems` (`systems::OsConfig` assembles them). Re-exported here, where
//! the configuration tree is put together.

pub use crate::os::{AutoVma, FaultCosts, FragPattern, FragPlacement, FragmentationConfig};
pub use crate::systems::chp::{ChpConfig, ChpScheme};
pub use crate::systems::coloring::ColoringConfig;
pub use crate::systems::hugetlb::HugetlbConfig;
pub use crate::systems::thp::ThpConfig;
pub use crate::systems::{OsConfig, PolicyKind};
