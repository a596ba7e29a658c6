//! The `os` table. Its parts sit beside the code that reads them: the
//! kernel's keys in `os::config`, each system's table in its folder under
//! `systems/`, all of them assembled by the registry (`systems::OsConfig`).
//! Re-exported here, where the configuration tree is put together.

pub use crate::os::{AutoVma, FaultCosts, FragPattern, FragPlacement, FragmentationConfig};
pub use crate::systems::OsConfig;
