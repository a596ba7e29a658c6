//! The crate's shape, checked: no source file passes 800 lines; no two
//! files import each other, directly or around a circle (a module may use
//! its parents: that is not a circle); outside the systems' folders only
//! the registry (`systems/mod.rs`) names a system, by module or by name
//! (inside them one system may build on another's: KSM's `split = "punch"`,
//! `systems/ksm/host/punch.rs`, makes host huge pages perforated with the
//! perforated system's page-table bits).
//! Test code (`tests.rs`, `*_tests.rs`, `testutil.rs`, everything after a
//! `#[cfg(test)]` line) is left out of the last two.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{code_lines, is_test_file, source_files, src_dir, Crate};

const MAX_LINES: usize = 800;

#[test]
fn no_source_file_passes_800_lines() {
    let src = src_dir();
    let long: Vec<String> = source_files(&src)
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > MAX_LINES).then(|| format!("{}: {n} lines", f.strip_prefix(&src).unwrap().display()))
        })
        .collect();
    assert!(long.is_empty(), "files over {MAX_LINES} lines (split them by what they do):\n{}", long.join("\n"));
}

/// The paths `code` names: `use` trees, expanded, and the `crate::`,
/// `super::` and `self::` paths written in the code.
fn named_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = find_use(rest) {
        let after = &rest[i..];
        let end = after.find(';').unwrap_or(after.len());
        expand_tree(&[], after["use ".len()..end].trim(), &mut out);
        rest = &after[end..];
    }
    for start in ["crate::", "super::", "self::"] {
        let mut rest = code;
        while let Some(i) = rest.find(start) {
            let before = rest[..i].chars().last();
            let path: String =
                rest[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':').collect();
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                out.push(path.split("::").filter(|s| !s.is_empty()).map(String::from).collect());
            }
            rest = &rest[i + start.len()..];
        }
    }
    out
}

/// Where the next `use` statement begins.
fn find_use(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find("use ") {
        let at = from + i;
        let before = text[..at].trim_end();
        if at == 0 || before.ends_with(';') || before.ends_with('}') || before.ends_with(')') || before.ends_with("pub")
        {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

/// `a::{b, c::{d, e}}` under `prefix`, as paths.
fn expand_tree(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head: Vec<String> =
            tree[..open].split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        let mut base = prefix.to_vec();
        base.extend(head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        for part in split_top(inner) {
            expand_tree(&base, part, out);
        }
        return;
    }
    let path = tree.split(" as ").next().unwrap_or(tree);
    let mut full = prefix.to_vec();
    full.extend(
        path.split("::").map(str::trim).filter(|s| !s.is_empty() && *s != "self" && *s != "*").map(String::from),
    );
    out.push(full);
}

/// `inner` split at its top-level commas.
fn split_top(inner: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// The absolute module path `path` (written in module `module`) names, if
/// it is the crate's.
fn absolute(krate: &Crate, module: &[String], path: &[String]) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut at: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        _ => {
            let mut child = module.to_vec();
            child.push(first.clone());
            if !krate.is_module(&child) {
                return None;
            }
            module.to_vec()
        }
    };
    let mut rest = &path[usize::from(matches!(first.as_str(), "crate" | "self" | "super"))..];
    while rest.first().is_some_and(|s| s == "super") {
        at.pop();
        rest = &rest[1..];
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

/// File -> the files its code uses that are not its own module's
/// ancestors.
fn imports(krate: &Crate) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut graph = BTreeMap::new();
    for (rel, module) in &krate.files {
        if is_test_file(rel) || rel == Path::new("lib.rs") {
            continue;
        }
        let text = std::fs::read_to_string(krate.src.join(rel)).unwrap();
        let code: String = code_lines(&text).into_iter().map(|(_, l)| l + "\n").collect();
        let mut targets = BTreeSet::new();
        for path in named_paths(&code) {
            let Some(abs) = absolute(krate, module, &path) else { continue };
            let Some(file) = krate.file_of(&abs) else { continue };
            let target = &krate.files[file];
            if file != rel && !module.starts_with(target) && !is_test_file(file) {
                targets.insert(file.clone());
            }
        }
        graph.insert(rel.clone(), targets);
    }
    graph
}

/// The strongly connected components of more than one file (Tarjan's).
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct State<'g> {
        graph: &'g BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'g PathBuf, usize>,
        low: BTreeMap<&'g PathBuf, usize>,
        stack: Vec<&'g PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g PathBuf) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        for w in s.graph.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), out: Vec::new() };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_two_files_import_each_other() {
    let krate = Crate::read();
    let found: Vec<String> = circles(&imports(&krate))
        .iter()
        .map(|c| c.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(" <-> "))
        .collect();
    assert!(found.is_empty(), "import circles between files:\n{}", found.join("\n"));
}

#[test]
fn the_circle_finder_sees_a_circle_and_reads_use_trees() {
    let mut paths = Vec::new();
    expand_tree(&[], "super::{a, b::{c, self}, d as e}", &mut paths);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(paths, vec![s(&["super", "a"]), s(&["super", "b", "c"]), s(&["super", "b"]), s(&["super", "d"])]);
    let f = |n: &str| PathBuf::from(n);
    let graph = BTreeMap::from([
        (f("a.rs"), BTreeSet::from([f("b.rs")])),
        (f("b.rs"), BTreeSet::from([f("c.rs")])),
        (f("c.rs"), BTreeSet::from([f("a.rs")])),
        (f("d.rs"), BTreeSet::from([f("a.rs")])),
    ]);
    assert_eq!(circles(&graph), vec![vec![f("a.rs"), f("b.rs"), f("c.rs")]]);
}

/// A system's folder (or its one file) under `systems/`: what may name it.
fn own_folder(rel: &Path, module: &str) -> bool {
    rel.starts_with(Path::new("systems").join(module)) || rel == Path::new("systems").join(format!("{module}.rs"))
}

/// Names of systems written outside their folders for a reason the
/// registry cannot take: (file, name, why).
const KEPT: &[(&str, &str, &str)] = &[
    ("workload/config.rs", "chp", "the workload key `workload.chp` (a process's opt-out), kept for compatibility"),
    ("fuzzing.rs", "elastic", "the readers' fuzz entry points reach each reader where it lives: Leshy's hint files"),
];

#[test]
fn outside_the_systems_folders_only_the_registry_names_a_system() {
    let krate = Crate::read();
    let registry = std::fs::read_to_string(krate.src.join("systems/mod.rs")).unwrap();
    // The systems' modules, as the registry's lines name them.
    let modules: BTreeSet<String> = registry
        .lines()
        .filter_map(|l| ["system ", "host ", "table "].iter().find_map(|p| l.trim().strip_prefix(p)))
        .filter_map(|l| l.split('=').nth(1)?.trim().split("::").next().map(String::from))
        .collect();
    assert!(modules.contains("chp") && modules.contains("perforated"), "the registry's lines were not read");
    let names: BTreeSet<&str> = pagelab_core::systems::REGISTRY
        .iter()
        .flat_map(|r| std::iter::once(r.name).chain(r.policies.iter().map(|p| p.name)))
        .collect();
    let mut found = Vec::new();
    for rel in krate.files.keys() {
        let inside = modules.iter().any(|m| own_folder(rel, m)) || rel == Path::new("systems/mod.rs");
        if inside || is_test_file(rel) {
            continue;
        }
        let text = std::fs::read_to_string(krate.src.join(rel)).unwrap();
        for (n, line) in code_lines(&text) {
            for m in &modules {
                let named = line.contains(&format!("systems::{m}::")) || line.contains(&format!("systems::{m};"));
                if named && !KEPT.iter().any(|&(f, k, _)| Path::new(f) == rel && k == m) {
                    found.push(format!("{}:{n}: names the module systems::{m}", rel.display()));
                }
            }
            for name in line.split('"').skip(1).step_by(2).filter(|s| names.contains(s)) {
                let kept = KEPT.iter().any(|&(f, k, _)| Path::new(f) == rel && k == name);
                if !kept {
                    found.push(format!("{}:{n}: the system name \"{name}\"", rel.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "systems named outside their folders and the registry:\n{}", found.join("\n"));
}
