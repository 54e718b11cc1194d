"""A generated corpus for extraction tests and benchmarks: many small crates built from the
bundled example crate (names varied per crate) plus a module of awkward-but-valid Rust (non-ASCII
text, raw strings, nested modules, macros, generics, attributes, metadata comments)."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_SRC = ROOT / "examples" / "rust" / "src"

TRICKY = '''//! Awkward but valid Rust for the extractor: every item here must round-trip byte for byte.

use std::collections::HashMap;

// ANCHOR: greeting
/// Grüße in several scripts: «ünïcödé», 日本語, emoji 🦀.
pub fn greeting_{k}(name: &str) -> String {{
    format!("Grüß dich, {{name}} 🦀")
}}
// ANCHOR_END: greeting

/// A raw string with braces and quotes inside: the parser must not count them.
pub const TEMPLATE_{k}: &str = r#"{{ "not": "a block" }} }}}} "#;

// STABLE: this line is metadata and must never reach an answer
/// Counts characters, not bytes.
pub fn char_len_{k}(s: &str) -> usize {{
    s.chars().count()
}}

pub mod nested_{k} {{
    /// Inside an inline module.
    pub fn inner(x: u32) -> u32 {{
        x.rotate_left(3)
    }}

    pub mod deeper {{
        /// Two levels down.
        pub fn deepest() -> &'static str {{
            "/* not a comment */ // nor this"
        }}
    }}
}}

/// A generic wrapper with a where clause.
#[derive(Debug, Default)]
pub struct Bag{k}<T>
where
    T: Clone,
{{
    items: Vec<T>,
}}

impl<T: Clone> Bag{k}<T> {{
    /// Adds a copy of every item.
    pub fn extend_from(&mut self, more: &[T]) {{
        self.items.extend_from_slice(more);
    }}

    /// How many items.
    pub fn len(&self) -> usize {{
        self.items.len()
    }}

    /// True when empty.
    pub fn is_empty(&self) -> bool {{
        self.items.is_empty()
    }}
}}

macro_rules! square_{k} {{
    ($x:expr) => {{
        $x * $x
    }};
}}

/// Uses a local macro.
pub fn area_{k}(side: i64) -> i64 {{
    square_{k}!(side)
}}

/// Word frequencies.
pub fn frequencies_{k}(text: &str) -> HashMap<&str, usize> {{
    let mut counts = HashMap::new();
    for word in text.split_whitespace() {{
        *counts.entry(word).or_default() += 1;
    }}
    counts
}}

pub type Pair{k} = (i32, i32);

pub static LIMIT_{k}: usize = 64;

/** A block doc comment. */
pub union Bits{k} {{
    pub int: u32,
    pub float: f32,
}}
'''


def write_corpus(dest: Path, target_bytes: int) -> dict:
    """Crates under `dest` until about `target_bytes` of Rust are written. Returns counts."""
    sources = {p.name: p.read_text() for p in sorted(EXAMPLE_SRC.glob("*.rs"))}
    written, crates = 0, 0
    while written < target_bytes:
        crate = dest / f"crate_{crates:05d}"
        (crate / "src").mkdir(parents=True, exist_ok=True)
        (crate / "Cargo.toml").write_text(f'[package]\nname = "gen_{crates}"\nversion = "0.1.0"\nedition = "2021"\n')
        files = dict(sources)
        files["lib.rs"] = sources["lib.rs"].replace("pub mod text;", "pub mod text;\npub mod tricky;")
        files["tricky.rs"] = TRICKY.format(k=crates)
        for name in sorted(files):
            body = files[name]
            (crate / "src" / name).write_text(body)
            written += len(body.encode())
        crates += 1
    return {"crates": crates, "bytes": written}
