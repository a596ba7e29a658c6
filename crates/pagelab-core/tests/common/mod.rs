//! What the structure tests (`layers.rs`, `structure.rs`) read of the
//! crate's sources: its files, their code without tests and comments, the
//! module each file is, and the file a path names.

#![allow(dead_code)] // each test uses what it needs

use std::path::{Path, PathBuf};

/// The crate's `src/`.
pub fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
pub fn source_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(dir, &mut out);
    out.sort();
    out
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `rel` (relative to `src/`) is test code as a whole.
pub fn is_test_file(rel: &Path) -> bool {
    let name = rel.file_name().unwrap().to_string_lossy();
    name == "tests.rs" || name == "testutil.rs" || name.ends_with("_tests.rs")
}

/// The code of `text` before its first `#[cfg(test)]` line (after it come
/// tests), one entry per line with its number, comments left out.
pub fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        if line.starts_with("//") {
            continue;
        }
        out.push((n + 1, line.split("//").next().unwrap_or("").to_string()));
    }
    out
}

/// The module path of each file (relative to `src/`), as [`module_of`]
/// gives it, but for files a `#[path = "FILE"]` attribute declares: those
/// are the declaring module's child (`engine/walk2d_ext.rs` is
/// `engine::walk2d::ext`).
pub fn modules(src: &Path) -> std::collections::BTreeMap<PathBuf, Vec<String>> {
    let files = source_files(src);
    let mut out: std::collections::BTreeMap<PathBuf, Vec<String>> =
        files.iter().map(|f| (f.strip_prefix(src).unwrap().to_path_buf(), Vec::new())).collect();
    for (rel, module) in out.iter_mut() {
        *module = module_of(rel);
    }
    for f in &files {
        let rel = f.strip_prefix(src).unwrap();
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(path) = line.strip_prefix("#[path = \"").and_then(|r| r.strip_suffix("\"]")) else { continue };
            let Some(name) = lines[i + 1..].iter().find_map(|l| {
                // (`pub mod`, `pub(super) mod`, `mod`.)
                let l = if l.starts_with("pub") { l.split_once(' ').map_or(*l, |(_, rest)| rest) } else { l };
                l.strip_prefix("mod ").map(|n| n.trim_end_matches(';').to_string())
            }) else {
                continue;
            };
            let declared = rel.parent().unwrap().join(path);
            let mut module = module_of(rel);
            module.push(name);
            out.insert(declared, module);
        }
    }
    out
}

/// The module path of file `rel` (relative to `src/`): `systems/chp/tlb.rs`
/// is `["systems", "chp", "tlb"]`, `systems/chp/mod.rs` `["systems", "chp"]`,
/// `lib.rs` the crate (`[]`).
pub fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The crate's files and modules, both ways.
pub struct Crate {
    pub src: PathBuf,
    /// Each file's module.
    pub files: std::collections::BTreeMap<PathBuf, Vec<String>>,
    by_module: std::collections::BTreeMap<Vec<String>, PathBuf>,
}

impl Crate {
    pub fn read() -> Crate {
        let src = src_dir();
        let files = modules(&src);
        let by_module = files.iter().map(|(f, m)| (m.clone(), f.clone())).collect();
        Crate { src, files, by_module }
    }

    /// The file that holds module `module`, or the closest ancestor module
    /// that has a file (an item's path names the file of its module).
    pub fn file_of(&self, module: &[String]) -> Option<&PathBuf> {
        (0..=module.len()).rev().find_map(|len| self.by_module.get(&module[..len]))
    }

    /// Whether `module` is a module of the crate (has its own file).
    pub fn is_module(&self, module: &[String]) -> bool {
        self.by_module.contains_key(module)
    }
}
