//! The one error type of the core. Every fallible public function returns
//! [`Result`]; the Python bindings convert each variant to one exception
//! class in one place (`crates/pagelab-py`).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration key is unknown, ill-typed or out of range. `key` is the
    /// dotted path (`machine.tlb.l2_ways`).
    #[error("configuration error at `{key}`: {msg}")]
    Config { key: String, msg: String },

    /// A trace or input file is corrupt or truncated. `offset` is a byte
    /// offset (or a line number, as `msg` says).
    #[error("{}: at {offset}: {msg}", path.display())]
    Trace { path: PathBuf, offset: u64, msg: String },

    /// The simulated machine ran out of physical memory.
    #[error("simulated machine out of memory: {0} (raise machine.phys_mem or lower workload.footprint)")]
    OutOfMemory(String),

    /// A workload did something the simulated OS refuses (an access outside
    /// every VMA with automatic VMAs off, an overlapping mmap...).
    #[error("workload error: {0}")]
    Workload(String),

    #[error("I/O error on {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A configuration error. Values the message quotes (between backticks
    /// or double quotes) are capped by [`cap_quoted`], so a 10,000-character
    /// string under a key still makes a one-line error that shows the rest
    /// of the message (the allowed values); every caller gets this here.
    pub fn config(key: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Config { key: key.into(), msg: cap_quoted(&msg.into()) }
    }
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

/// The most characters of a user's value an error message quotes; a longer
/// one shows its beginning, an ellipsis and its length. 60 is enough to
/// recognize a value and keeps the line readable in a terminal.
pub const MAX_QUOTED_CHARS: usize = 60;

/// The most characters of a whole configuration message: a backstop for a
/// value with an unpaired quote inside, which [`cap_quoted`] cannot delimit.
/// The longest honest message, serde's list of a table's known keys, is
/// about 1,000 (`workload`'s).
const MAX_MESSAGE_CHARS: usize = 2000;

/// `value` whole when it has at most [`MAX_QUOTED_CHARS`] characters, else
/// its first ones, `…` and its length (`gggg… (10000 characters)`), for a
/// key the user typed. Control characters are escaped (`\n`) so the
/// message stays one line.
pub fn cap_value(value: &str) -> String {
    let (shown, len) = shorten(value);
    match len {
        Some(len) => format!("{shown}… ({len} characters)"),
        None => shown,
    }
}

/// `msg` with each span between backticks or double quotes longer than
/// [`MAX_QUOTED_CHARS`] cut as [`cap_value`] cuts a value, the length after
/// the closing quote (`` `gggg…` (10000 characters) ``), and control
/// characters escaped anywhere. Inside double quotes a backslash escapes
/// the next character (Rust's `{:?}`, which serde uses for strings).
pub fn cap_quoted(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len().min(MAX_MESSAGE_CHARS));
    let mut rest = msg;
    while let Some(open) = rest.find(['`', '"']) {
        let quote = rest[open..].chars().next().unwrap_or('"');
        out.extend(rest[..open].chars().map(escape_control));
        let body = &rest[open + 1..];
        let Some(close) = closing_quote(body, quote) else {
            rest = &rest[open..];
            break;
        };
        let (shown, len) = shorten(&body[..close]);
        out.push(quote);
        out.push_str(&shown);
        if let Some(len) = len {
            out.push('…');
            out.push(quote);
            out.push_str(&format!(" ({len} characters)"));
        } else {
            out.push(quote);
        }
        rest = &body[close + 1..];
    }
    out.extend(rest.chars().map(escape_control));
    let len = out.chars().count();
    if len > MAX_MESSAGE_CHARS {
        out = out.chars().take(MAX_MESSAGE_CHARS).collect::<String>() + &format!("… ({len} characters)");
    }
    out
}

/// The byte offset in `body` of the quote that closes a span opened by
/// `quote`, if any.
fn closing_quote(body: &str, quote: char) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quote == '"' => escaped = true,
            c if c == quote => return Some(i),
            _ => {}
        }
    }
    None
}

/// `value` with control characters escaped, cut to [`MAX_QUOTED_CHARS`]
/// characters, and its length in characters when it was cut.
fn shorten(value: &str) -> (String, Option<usize>) {
    let len = value.chars().count();
    let shown = value.chars().take(MAX_QUOTED_CHARS).map(escape_control).collect();
    (shown, (len > MAX_QUOTED_CHARS).then_some(len))
}

fn escape_control(c: char) -> String {
    if c.is_control() {
        c.escape_default().collect()
    } else {
        c.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_quoted_value_is_cut_to_its_start_and_length_and_the_rest_kept() {
        let value = "g".repeat(10_000);
        let msg = format!("unknown variant `{value}`, expected one of `gups`, `stream`");
        let err = Error::config("workload.kind", msg).to_string();
        let shown = "g".repeat(MAX_QUOTED_CHARS);
        assert_eq!(
            err,
            format!(
                "configuration error at `workload.kind`: unknown variant `{shown}…` (10000 characters), \
                 expected one of `gups`, `stream`"
            )
        );
    }

    #[test]
    fn short_values_and_unquoted_text_are_left_whole() {
        let msg = "`lru` is not one of `lru`, `random`; at most 64 ways";
        assert_eq!(cap_quoted(msg), msg);
        let exact = format!("\"{}\"", "x".repeat(MAX_QUOTED_CHARS));
        assert_eq!(cap_quoted(&exact), exact, "a value of exactly the cap is whole");
    }

    #[test]
    fn a_debug_quoted_string_with_escaped_quotes_is_one_span() {
        // `{:?}` of `a"b` + 100 c's: the escaped quote does not end the span.
        let value = format!("a\"b{}", "c".repeat(100));
        let msg = format!("invalid type: string {value:?}, expected u64");
        let capped = cap_quoted(&msg);
        assert!(capped.ends_with(" (104 characters), expected u64"), "{capped}");
        assert!(capped.starts_with("invalid type: string \"a\\\"bccc"), "{capped}");
    }

    #[test]
    fn a_newline_in_a_value_is_escaped_so_the_message_is_one_line() {
        let capped = cap_quoted("unknown system `a\nb` (known: base)");
        assert_eq!(capped, "unknown system `a\\nb` (known: base)");
        assert_eq!(cap_value("k\ney"), "k\\ney");
    }

    #[test]
    fn a_value_with_a_quote_inside_still_gives_a_short_message() {
        // The value's backtick closes the span early and the rest of the
        // value reads as the message's own text: the backstop bounds it.
        let msg = format!("unknown variant `a`{}`, expected one of `gups`", "g".repeat(10_000));
        assert!(cap_quoted(&msg).chars().count() < MAX_MESSAGE_CHARS + 30);
        let long_text = "word ".repeat(1000);
        let capped = cap_quoted(&long_text);
        assert_eq!(capped.chars().count(), MAX_MESSAGE_CHARS + "… (5000 characters)".chars().count());
    }

    #[test]
    fn a_long_key_is_cut_with_its_length() {
        let key = format!("workload.{}", "k".repeat(200));
        assert_eq!(cap_value(&key), format!("workload.{}… (209 characters)", "k".repeat(51)));
    }
}
