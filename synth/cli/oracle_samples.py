"""A deterministic mix of standalone Rust candidates, passing and failing: `synth demo` shows the
batched oracle on them, and the oracle's differential test and benchmark use them. Each template names the verdict it is written to produce, so a
test can also confirm the oracle says what the compiler really says about it."""
from __future__ import annotations

import random

# (expected error code or None for a clean candidate, template). {k} makes names and values unique.
PASSING = [
    "/// Adds {k}.\npub fn add_{k}(x: i32) -> i32 {{\n    x + {k}\n}}\n",
    "pub struct Counter{k} {{\n    n: u32,\n}}\n\nimpl Counter{k} {{\n    pub fn new() -> Self {{\n        Counter{k} {{ n: {k} }}\n    }}\n\n"
    "    pub fn bump(&mut self) -> u32 {{\n        self.n += 1;\n        self.n\n    }}\n}}\n",
    "use std::collections::HashMap;\n\npub fn count_words_{k}(text: &str) -> HashMap<String, usize> {{\n"
    "    let mut m = HashMap::new();\n    for w in text.split_whitespace() {{\n        *m.entry(w.to_string()).or_insert(0) += 1;\n    }}\n    m\n}}\n",
    "pub enum Shape{k} {{\n    Circle(f64),\n    Square(f64),\n}}\n\npub fn area_{k}(s: &Shape{k}) -> f64 {{\n    match s {{\n"
    "        Shape{k}::Circle(r) => 3.14 * r * r,\n        Shape{k}::Square(a) => a * a,\n    }}\n}}\n",
    "pub trait Named{k} {{\n    fn name(&self) -> String;\n}}\n\npub struct Dog{k};\n\nimpl Named{k} for Dog{k} {{\n"
    "    fn name(&self) -> String {{\n        \"dog{k}\".to_string()\n    }}\n}}\n",
    "pub fn parse_{k}(s: &str) -> Result<i64, std::num::ParseIntError> {{\n    let v: i64 = s.trim().parse()?;\n    Ok(v * {k})\n}}\n",
    "macro_rules! twice_{k} {{\n    ($e:expr) => {{ $e * 2 }};\n}}\n\npub fn use_macro_{k}() -> i32 {{\n    twice_{k}!({k})\n}}\n",
    "pub fn largest_{k}<T: PartialOrd + Copy>(xs: &[T]) -> Option<T> {{\n    let mut it = xs.iter();\n"
    "    let mut best = *it.next()?;\n    for &x in it {{\n        if x > best {{\n            best = x;\n        }}\n    }}\n    Some(best)\n}}\n",
    "fn helper_{k}() -> u8 {{\n    {k_mod}\n}}\n",  # warning: dead_code
    "pub fn unused_var_{k}() {{\n    let value = {k};\n}}\n",  # warning: unused_variables
    "#[derive(Debug, Clone, PartialEq)]\npub struct Point{k} {{\n    pub x: i32,\n    pub y: i32,\n}}\n\n"
    "#[cfg(test)]\nmod tests {{\n    use super::*;\n\n    #[test]\n    fn eq() {{\n        assert_eq!(Point{k} {{ x: 1, y: 2 }}, Point{k} {{ x: 1, y: 2 }});\n    }}\n}}\n",
    "pub type Result<T> = std::result::Result<T, String>;\n\npub fn checked_{k}(x: u32) -> Result<u32> {{\n"
    "    x.checked_add({k}).ok_or_else(|| \"overflow\".to_string())\n}}\n",
    "pub fn run_{k}() -> usize {{\n    let v: Vec<u32> = (0..{k}).collect();\n    v.len()\n}}\n",
]

FAILING = [
    ("E0308", "pub fn wrong_ret_{k}() -> i32 {{\n    \"{k}\"\n}}\n"),
    ("E0308", "fn takes_{k}(x: u8) -> u8 {{ x }}\n\npub fn call_{k}() -> u8 {{\n    takes_{k}(\"no\")\n}}\n"),
    ("E0425", "pub fn unresolved_{k}() -> i32 {{\n    missing_value_{k} + 1\n}}\n"),
    ("E0382", "pub fn moved_{k}() -> usize {{\n    let v = vec![{k}];\n    let w = v;\n    v.len() + w.len()\n}}\n"),
    ("E0061", "fn two_{k}(a: i32, b: i32) -> i32 {{ a + b }}\n\npub fn call_two_{k}() -> i32 {{\n    two_{k}({k})\n}}\n"),
    ("E0599", "pub fn no_method_{k}() -> usize {{\n    let s = String::from(\"{k}\");\n    s.no_such_method_{k}()\n}}\n"),
    # A closure's type names its place (`{{closure@FILE:LINE:COL}}`): the batch's line must not leak.
    ("E0599", "use std::collections::BTreeMap;\npub struct Stock{k} {{ items: BTreeMap<String, u32> }}\n"
              "impl Stock{k} {{\n    pub fn units(&self) -> u64 {{\n"
              "        self.items.values().map(|&n| n as u64).total()\n    }}\n}}\n"),
    ("E0384", "pub fn immut_{k}() -> i32 {{\n    let x = {k};\n    x = x + 1;\n    x\n}}\n"),
    ("E0502", "pub fn borrow_{k}() {{\n    let mut v = vec![{k}];\n    let first = &v[0];\n    v.push(1);\n    println!(\"{{}}\", first);\n}}\n"),
    ("E0277", "pub fn add_str_{k}() -> i32 {{\n    {k} + \"x\"\n}}\n"),
    ("E0560", "pub struct S{k} {{\n    pub a: i32,\n}}\n\npub fn make_{k}() -> S{k} {{\n    S{k} {{ a: 1, b: {k} }}\n}}\n"),
    ("E0046", "pub trait T{k} {{\n    fn needed(&self);\n}}\n\npub struct U{k};\n\nimpl T{k} for U{k} {{}}\n"),
    ("E0433", "pub fn path_{k}() {{\n    nowhere_{k}::call();\n}}\n"),
    ("parse", "pub fn broken_{k}(x: i32) -> i32 {{\n    let y = x +;\n    y\n}}\n"),
    ("unclosed", "pub fn unclosed_{k}() -> i32 {{\n    if true {{\n        {k}\n}}\n"),
    ("E0428", "pub fn dup_{k}() {{}}\npub fn dup_{k}() {{}}\n"),
]

# Candidates that must be checked alone (crate-level items) or that collide by name across the batch.
SPECIAL = [
    (None, "#![allow(dead_code)]\nfn quiet_{k}() {{}}\n"),
    (None, "fn main() {{\n    println!(\"{k}\");\n}}\n"),
    ("E0308", "fn main() {{\n    let x: i32 = \"{k}\";\n}}\n"),
    (None, "extern crate core;\npub fn ext_{k}() -> u8 {{ core::cmp::max(1, {k_mod}) }}\n"),
    (None, "#[macro_export]\nmacro_rules! exported_{k} {{\n    () => {{ {k} }};\n}}\n"),
    (None, "pub fn shared_name() -> i32 {{\n    {k}\n}}\n"),  # the same name in many candidates
    ("E0425", "pub fn uses_shared_{k}() -> i32 {{\n    shared_name()\n}}\n"),  # would be offered another's
    (None, "pub mod inner_{k} {{\n    pub fn f() -> u32 {{ {k} }}\n}}\n\npub fn g_{k}() -> u32 {{\n    crate::inner_{k}::f()\n}}\n"),
    ("E0277", "pub fn not_main_{k}() {{}}\nfn main() -> i32 {{ {k} }}\n"),
    ("E0308", "pub struct Same;\n\npub fn same_{k}() -> Same {{\n    0\n}}\n"),  # `Same` is in many candidates
    ("E0308", "pub mod nest {{\n    pub struct Deep;\n}}\n\npub fn deep_{k}() -> nest::Deep {{\n    0\n}}\n"),
    ("include", "pub mod reads_{k} {{\n    include!(\"missing_{k}.rs\");\n}}\n"),  # aborts rustc early
    # Members of a type that many candidates define: the batch says `__synth_c3::Kind::A`, alone `Kind::A`.
    ("E0559", "pub enum Kind {{\n    A {{ x: u32 }},\n}}\n\npub fn make_{k}() -> Kind {{\n    Kind::A {{ y: {k} }}\n}}\n"),
    ("E0599", "pub struct Same;\n\nimpl Same {{\n    pub fn new() -> Self {{ Same }}\n}}\n\n"
              "pub fn call_{k}() -> Same {{\n    Same::nope()\n}}\n"),
    # ...but a type in a nested module reads `Deep` alone and `__synth_c3::nest::Deep` in the batch.
    ("E0599", "pub mod nest {{\n    pub struct Deep;\n}}\n\npub fn deep_call_{k}() {{\n    nest::Deep::nope();\n}}\n"),
    ("E0308", "pub fn bytes_{k}() -> i32 {{\n    let _ = b\"\u00e9\";\n    \"x\"\n}}\n"),  # lexer error, then E0308
]


# Failures a compiler rejects after parsing (what AST mutants aim at); the rest are syntax errors.
TYPED_FAILING = [(e, t) for e, t in FAILING if e not in ("parse", "unclosed")]


def rust_candidates(n: int, seed: int = 0, failing_share: float = 0.4, special_share: float = 0.08,
                    typed_only: bool = False) -> list[tuple[str | None, str]]:
    """`n` (expected, text) pairs; same arguments give the same list. `typed_only` leaves out
    syntax errors, the stream the extraction and mutation steps produce."""
    rng = random.Random(seed)
    failing = TYPED_FAILING if typed_only else FAILING
    out = []
    for k in range(n):
        roll = rng.random()
        if roll < special_share:
            expected, template = SPECIAL[rng.randrange(len(SPECIAL))]
        elif roll < special_share + failing_share:
            expected, template = failing[rng.randrange(len(failing))]
        else:
            expected, template = None, PASSING[rng.randrange(len(PASSING))]
        out.append((expected, template.format(k=k, k_mod=k % 200)))
    return out


def covering_candidates() -> list[tuple[str | None, str]]:
    """Every template at least twice (so duplicate names meet across candidates)."""
    out = []
    for k in range(2):
        out += [(None, t.format(k=k, k_mod=k)) for t in PASSING]
        out += [(e, t.format(k=k, k_mod=k)) for e, t in FAILING]
        out += [(e, t.format(k=k, k_mod=k)) for e, t in SPECIAL]
    return out
