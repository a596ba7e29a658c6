//! Machine presets: data tables (TOML files beside this one), not code.

use crate::error::{Error, Result};

const PRESETS: &[(&str, &str)] = &[
    ("skylake", include_str!("presets/skylake.toml")),
    ("i7-10700", include_str!("presets/i7-10700.toml")),
    ("gem5-skylake", include_str!("presets/gem5-skylake.toml")),
    ("xeon-gold-6138", include_str!("presets/xeon-gold-6138.toml")),
    ("ampere-altra", include_str!("presets/ampere-altra.toml")),
    ("grace", include_str!("presets/grace.toml")),
];

pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|(name, _)| *name).collect()
}

/// What a preset is, from the first two lines of its file: `# machine: ...`
/// (the machine it models) and `# source: ...` (where its values come
/// from). `pagelab presets` prints them; every preset has both (tested).
pub fn preset_about(name: &str) -> Option<(&'static str, &'static str)> {
    let (_, text) = PRESETS.iter().find(|(n, _)| *n == name)?;
    let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
    Some((field("# machine:")?, field("# source:")?))
}

/// The `machine` table of a preset.
pub fn preset_table(name: &str) -> Result<toml::Table> {
    let (_, text) = PRESETS.iter().find(|(n, _)| *n == name).ok_or_else(|| {
        Error::config("machine.preset", format!("unknown preset `{name}`; known: {}", preset_names().join(", ")))
    })?;
    // A preset that does not parse is a bug in this crate, caught by the
    // test below; still, no panic reaches the user.
    text.parse::<toml::Table>().map_err(|e| Error::config("machine.preset", format!("preset `{name}` is corrupt: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses() {
        for name in preset_names() {
            let t = preset_table(name).unwrap();
            assert!(t.contains_key("phys_mem"), "{name}");
        }
        assert!(preset_table("nonesuch").is_err());
    }

    #[test]
    fn every_preset_says_what_it_models_and_where_from() {
        for name in preset_names() {
            let about = preset_about(name);
            assert!(
                about.is_some_and(|(m, s)| !m.is_empty() && !s.is_empty()),
                "{name}: `# machine:` and `# source:` lines"
            );
        }
        assert_eq!(preset_about("nonesuch"), None);
    }
}
