//! Reading a configuration: TOML text, then `--set KEY=VALUE` overrides,
//! then the machine preset underneath, then typed deserialization (unknown
//! keys rejected, every error naming its dotted key), then validation.

use super::{presets::preset_table, SimConfig};
use crate::error::{cap_value, Error, Result};

/// Parses and validates a configuration. `source` names the file in errors.
pub fn parse_config(text: &str, source: &str, overrides: &[String]) -> Result<SimConfig> {
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| toml_error(text, source, &e))?;
    for item in overrides {
        apply_override(&mut table, item)?;
    }
    merge_preset(&mut table)?;
    let cfg: SimConfig = serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let path = e.path().to_string();
        // The message alone: the toml crate's Display appends an "in `key`"
        // line, and a value's own newline must not cut the message short
        // (Error::config escapes it).
        let inner = e.into_inner().message().trim().to_string();
        let inner = name_the_range(&inner);
        // serde may report an unknown field at its parent's path; name the
        // key once.
        let key = match unknown_field(&inner) {
            Some(field) if path == "." || path.is_empty() => field.to_string(),
            Some(field) if !path.ends_with(&format!(".{field}")) && path != field => format!("{path}.{field}"),
            _ => path,
        };
        // A key the file spells can be any length: cap it as a value.
        Error::config(cap_value(&key), inner)
    })?;
    let mut cfg = cfg;
    cfg.fill_machine_defaults();
    cfg.validate()?;
    Ok(cfg)
}

/// A TOML syntax error in one line: `file:LINE:COL: message`.
fn toml_error(text: &str, source: &str, e: &toml::de::Error) -> Error {
    let msg = e.message().lines().next().unwrap_or("invalid TOML").trim().to_string();
    let Some(span) = e.span() else {
        return Error::config(source, format!("not valid TOML: {msg}"));
    };
    let before = &text[..span.start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    Error::config(format!("{source}:{line}:{col}"), format!("not valid TOML: {msg}"))
}

/// serde names a number's Rust type (`expected u64`); a user needs the
/// range it allows.
fn name_the_range(msg: &str) -> String {
    const RANGES: [(&str, &str); 8] = [
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected u16", "expected a whole number from 0 to 65535"),
        ("expected u32", "expected a whole number from 0 to 4294967295"),
        ("expected u64", "expected a whole number from 0 to 18446744073709551615"),
        ("expected usize", "expected a whole number from 0 to 18446744073709551615"),
        ("expected i32", "expected a whole number from -2147483648 to 2147483647"),
        ("expected i64", "expected a whole number from -9223372036854775808 to 9223372036854775807"),
        ("expected f64", "expected a number"),
    ];
    let mut out = msg.to_string();
    for (rust, words) in RANGES {
        // Whole words only: `expected u64` but not a longer name.
        if let Some(at) = out.find(rust) {
            let end = at + rust.len();
            if !out[end..].starts_with(|c: char| c.is_alphanumeric() || c == '_') {
                out.replace_range(at..end, words);
            }
        }
    }
    out
}

fn unknown_field(msg: &str) -> Option<&str> {
    let rest = msg.strip_prefix("unknown field `")?;
    rest.split('`').next()
}

/// Applies `a.b.c=VALUE`. VALUE is read as a TOML value (`4`, `true`,
/// `"lru"`, `[1, 2]`), or as a bare string when it is not one (`lru`). A
/// part `name[N]` steps into the N-th table of an array of tables
/// (`workloads[1].footprint=...`, `vms[0].workloads[1].kind=...`), which
/// the file must already have. Errors name the key as typed, capped
/// ([`cap_value`]): it can be any length.
pub fn apply_override(table: &mut toml::Table, item: &str) -> Result<()> {
    let (key, raw) = item.split_once('=').ok_or_else(|| Error::config(cap_value(item), "an override is KEY=VALUE"))?;
    let key = key.trim();
    let value = parse_value(raw.trim());
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(Error::config(cap_value(key), "not a dotted key (KEY=VALUE, like machine.tlb.l2_ways=1536)"));
    }
    let mut node = table;
    for (i, part) in parts[..parts.len() - 1].iter().enumerate() {
        let here = || cap_value(&parts[..=i].join("."));
        node = match split_index(part).map_err(|why| Error::config(here(), why))? {
            (name, None) => {
                match node.entry(name.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new())) {
                    toml::Value::Table(t) => t,
                    _ => return Err(Error::config(here(), "is a value, not a table")),
                }
            }
            (name, Some(n)) => array_table(node, name, n).map_err(|why| Error::config(here(), why))?,
        };
    }
    let last = parts[parts.len() - 1];
    match split_index(last) {
        Ok((name, None)) => {
            node.insert(name.to_string(), value);
            Ok(())
        }
        Ok(_) => Err(Error::config(cap_value(key), "names a table of an array: set a key inside it")),
        Err(why) => Err(Error::config(cap_value(key), why)),
    }
}

/// `name[N]` as (name, Some(N)); a plain part as (part, None).
fn split_index(part: &str) -> std::result::Result<(&str, Option<usize>), String> {
    let Some((name, rest)) = part.split_once('[') else {
        return Ok((part, None));
    };
    let digits = rest.strip_suffix(']').ok_or("an index is written name[N]")?;
    let n = digits.parse().map_err(|_| format!("`{digits}` is not an index (0, 1, ...)"))?;
    if name.is_empty() {
        return Err("an index follows a key: name[N]".into());
    }
    Ok((name, Some(n)))
}

/// The `n`-th table of the array of tables `name` in `node`.
fn array_table<'a>(
    node: &'a mut toml::Table,
    name: &str,
    n: usize,
) -> std::result::Result<&'a mut toml::Table, String> {
    let Some(toml::Value::Array(items)) = node.get_mut(name) else {
        return Err(format!("the configuration has no array of tables [[{name}]]"));
    };
    let len = items.len();
    match items.get_mut(n) {
        Some(toml::Value::Table(t)) => Ok(t),
        Some(_) => Err(format!("{name}[{n}] is not a table")),
        None => Err(format!("index {n} out of range: [[{name}]] has {len}")),
    }
}

fn parse_value(raw: &str) -> toml::Value {
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| toml::Value::String(raw.into())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

/// Puts the preset named by `machine.preset` underneath the user's keys.
fn merge_preset(table: &mut toml::Table) -> Result<()> {
    let machine = table.entry("machine").or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let toml::Value::Table(machine) = machine else {
        return Err(Error::config("machine", "must be a table"));
    };
    let name = match machine.get("preset") {
        None => "skylake".to_string(),
        Some(toml::Value::String(s)) => s.clone(),
        Some(_) => return Err(Error::config("machine.preset", "must be a string")),
    };
    let mut merged = preset_table(&name)?;
    deep_merge(&mut merged, std::mem::take(machine));
    merged.insert("preset".into(), toml::Value::String(name));
    *machine = merged;
    Ok(())
}

fn deep_merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => deep_merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "[workload]\nkind = \"gups\"\nfootprint = \"64MiB\"\n";

    #[test]
    fn preset_fills_machine_and_user_keys_win() {
        let text = format!("[machine]\npreset = \"i7-10700\"\n[machine.tlb]\nl2_ways = 12\n{MINIMAL}");
        let cfg = parse_config(&text, "t.toml", &[]).unwrap();
        assert_eq!(cfg.machine.tlb.l2_ways, 12);
        assert_eq!(cfg.machine.tlb.l2_entries, 1536);
        assert_eq!(cfg.machine.cache.llc.size.bytes(), 16 << 20);
    }

    #[test]
    fn leshys_budget_defaults_to_the_machines_l2_tlb_in_every_os() {
        // i7-10700: 1536 entries; the key, where given, wins.
        let text = format!("[machine]\npreset = \"i7-10700\"\n[virt.host.elastic]\nleshy_budget = 7\n{MINIMAL}");
        let cfg = parse_config(&text, "t.toml", &[]).unwrap();
        assert_eq!(cfg.os.elastic.leshy_budget, Some(1536));
        assert_eq!(cfg.virt.host.elastic.leshy_budget, Some(7));
        let o = vec!["machine.tlb.l2_entries=48".to_string()];
        assert_eq!(parse_config(MINIMAL, "t.toml", &o).unwrap().os.elastic.leshy_budget, Some(48));
    }

    #[test]
    fn declared_contents_are_refused_under_a_guests_perforated_pages() {
        let text = "[virt]\nenabled = true\nguest_mem = \"64MiB\"\n[workload]\nkind = \"gups\"\nfootprint = \"1MiB\"\ncontents = \"shared\"\n";
        let with = |policy: &str| parse_config(text, "t.toml", &[format!("os.policy={policy}")]);
        let err = with("perforated").unwrap_err().to_string();
        assert!(err.contains("workload.contents") && err.contains("perforated pages"), "{err}");
        assert!(with("thp").is_ok(), "other guest policies follow contents");
    }

    #[test]
    fn overrides_reach_into_arrays_of_tables_by_index() {
        let text = "[[workloads]]\nkind = \"gups\"\nfootprint = \"64MiB\"\n[[workloads]]\nkind = \"stream\"\nfootprint = \"1MiB\"\n";
        let mut t: toml::Table = text.parse().unwrap();
        apply_override(&mut t, "workloads[1].footprint=\"2MiB\"").unwrap();
        let ws = t["workloads"].as_array().unwrap();
        assert_eq!(ws[1]["footprint"].as_str(), Some("2MiB"));
        assert_eq!(ws[0]["footprint"].as_str(), Some("64MiB"), "the other table is untouched");
        let err = |item: &str| apply_override(&mut t.clone(), item).unwrap_err().to_string();
        assert!(
            err("workloads[2].kind=gups").contains("index 2 out of range: [[workloads]] has 2"),
            "{}",
            err("workloads[2].kind=gups")
        );
        assert!(err("vms[0].guest_mem=1").contains("no array of tables [[vms]]"));
        assert!(err("workloads[x].kind=gups").contains("`x` is not an index"));
        assert!(err("workloads[1]=3").contains("set a key inside it"));
        assert!(err("workloads[1.kind=3").contains("name[N]"));
        let mut v: toml::Table =
            "[[vms]]\n[[vms.workloads]]\nkind = \"gups\"\n[[vms.workloads]]\nkind = \"bfs\"\n".parse().unwrap();
        apply_override(&mut v, "vms[0].workloads[1].kind=stream").unwrap();
        assert_eq!(v["vms"][0]["workloads"][1]["kind"].as_str(), Some("stream"));
    }

    #[test]
    fn overrides_are_typed_and_dotted() {
        let o = vec!["machine.tlb.l2_entries=3072".to_string(), "os.policy=thp".to_string()];
        let cfg = parse_config(MINIMAL, "t.toml", &o).unwrap();
        assert_eq!(cfg.machine.tlb.l2_entries, 3072);
        assert_eq!(cfg.os.policy, "thp");
    }

    #[test]
    fn unknown_key_is_named() {
        let o = vec!["machine.tlb.l2_entriez=4".to_string()];
        let err = parse_config(MINIMAL, "t.toml", &o).unwrap_err().to_string();
        assert!(err.contains("`machine.tlb.l2_entriez`"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }

    #[test]
    fn ill_typed_key_is_named() {
        let o = vec!["machine.tlb.l2_ways=\"many\"".to_string()];
        let err = parse_config(MINIMAL, "t.toml", &o).unwrap_err().to_string();
        assert!(err.contains("machine.tlb.l2_ways"), "{err}");
    }

    #[test]
    fn impossible_sizes_are_refused() {
        let o = vec!["machine.phys_mem=\"3MiB\"".to_string()];
        let err = parse_config(MINIMAL, "t.toml", &o).unwrap_err().to_string();
        assert!(err.contains("machine.phys_mem"), "{err}");
        let bad_toml = parse_config("# ok\n[workload\n", "broken.toml", &[]).unwrap_err().to_string();
        assert!(bad_toml.contains("broken.toml:2:"), "{bad_toml}");
        assert_eq!(bad_toml.lines().count(), 1, "{bad_toml}");
    }

    #[test]
    fn resolved_config_round_trips() {
        let cfg = parse_config(MINIMAL, "t.toml", &[]).unwrap();
        let again = parse_config(&cfg.to_toml(), "resolved.toml", &[]).unwrap();
        assert_eq!(cfg.to_toml(), again.to_toml());
    }
}
