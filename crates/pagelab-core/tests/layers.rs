//! The layer rule, checked: a module of the core crate uses only modules
//! of its own layer or of the layers before it (ARCHITECTURE.md, "Layers").
//! A system's folder spans layers, so its hardware module (`tlb.rs`) is
//! held to the hardware layer and its page-table and walk steps
//! (`pagetable.rs`, `walk.rs`, `translate.rs`, `leaf.rs`, and `walk2d.rs`,
//! `translate2d.rs` in a guest) to the paging layer; its policy of the
//! hypervisor (`host.rs`, `host/`) may use the hypervisor's layer.
//! Test code (`tests.rs`, `testutil.rs`, everything after a
//! `#[cfg(test)]` line) may use anything: scenario tests drive the engine.

mod common;

use std::path::Path;

use common::{code_lines, is_test_file, source_files, src_dir};

/// Top-level modules, by layer (index = layer - 1).
const LAYERS: &[&[&str]] = &[
    &["units", "stat", "error", "hostmem", "outfile"],
    &["phys"],
    &["hw"],
    &["paging"],
    &["os"],
    &["systems"],
    &["virt"],
    &["workload"],
    &["trace"],
    &["config"],
    &["engine", "fuzzing"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The layer a file may reach: its top-level module's, or tighter for a
/// system's hardware module (`tlb.rs`) and its page-table, walk and
/// translation steps and the hardware extension that names them
/// (`pagetable.rs`, `walk.rs`, `walk2d.rs`, `translate.rs`,
/// `translate2d.rs`, `leaf.rs`), or the hypervisor's for a system's policy
/// of the host (`host.rs`, `host/`) and for the registry
/// (`systems/mod.rs`), which joins every layer a system spans.
fn allowed_layer(rel: &Path) -> Option<usize> {
    let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
    let top = layer_of(&parts[0])?;
    if rel == Path::new("systems/mod.rs")
        || rel == Path::new("systems/registry.rs")
        || (parts[0] == "systems" && parts.len() >= 3 && parts[2] == "host")
    {
        return layer_of("virt");
    }
    if parts[0] == "systems" && parts.len() >= 3 {
        match parts.last().map(String::as_str) {
            Some("tlb") => return layer_of("hw"),
            Some("pagetable" | "walk" | "walk2d" | "translate" | "translate2d" | "leaf") => return layer_of("paging"),
            _ => {}
        }
    }
    Some(top)
}

/// `crate::MODULE` paths in the code before the first `#[cfg(test)]`,
/// comments left out.
fn crate_uses(text: &str) -> Vec<(usize, String)> {
    let mut uses = Vec::new();
    for (n, code) in code_lines(text) {
        let mut rest = code.as_str();
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + 7..];
            let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            uses.push((n, name));
            rest = after;
        }
    }
    uses
}

#[test]
fn every_module_uses_only_its_own_layer_and_those_before_it() {
    let src = src_dir();
    let mut violations = Vec::new();
    for path in &source_files(&src) {
        let rel = path.strip_prefix(&src).unwrap();
        if is_test_file(rel) || rel == Path::new("lib.rs") {
            continue;
        }
        let Some(allowed) = allowed_layer(rel) else {
            violations
                .push(format!("{}: its module is in no layer (add it to LAYERS and ARCHITECTURE.md)", rel.display()));
            continue;
        };
        for (line, module) in crate_uses(&std::fs::read_to_string(path).unwrap()) {
            match layer_of(&module) {
                Some(l) if l <= allowed => {}
                Some(l) => violations.push(format!(
                    "{}:{line}: uses crate::{module} (layer {}) from layer {}",
                    rel.display(),
                    l + 1,
                    allowed + 1
                )),
                None if module == "Error" || module == "Result" => {}
                None => {
                    violations.push(format!("{}:{line}: uses crate::{module}, which is in no layer", rel.display()))
                }
            }
        }
    }
    assert!(violations.is_empty(), "layer violations:\n{}", violations.join("\n"));
}

#[test]
fn the_checker_sees_a_violation() {
    // A use of the engine from the hardware layer must be caught.
    let uses =
        crate_uses("use crate::engine::Simulation;\n// crate::config in a comment\n#[cfg(test)]\nuse crate::config;");
    assert_eq!(uses, vec![(1, "engine".to_string())]);
    assert!(layer_of("engine") > allowed_layer(Path::new("hw/tlb/l2.rs")));
    assert_eq!(allowed_layer(Path::new("systems/chp/tlb.rs")), layer_of("hw"));
    assert_eq!(allowed_layer(Path::new("systems/chp/walk2d.rs")), layer_of("paging"));
    assert_eq!(allowed_layer(Path::new("systems/perforated/leaf.rs")), layer_of("paging"));
    assert_eq!(allowed_layer(Path::new("systems/ksm/host/scan.rs")), layer_of("virt"));
    assert_eq!(allowed_layer(Path::new("systems/balloon/host.rs")), layer_of("virt"));
    assert_eq!(allowed_layer(Path::new("systems/ksm/mod.rs")), layer_of("systems"));
}
