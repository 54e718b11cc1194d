"""A reply is read one way everywhere: RFT acceptance and the GRPO `compile` reward give the same
answer on tricky replies (both through the real rustc), and `defines` ignores names that only
appear in comments."""
import pytest
from conftest import EXAMPLE_CRATE

from oracles.rustc.oracle import RustOracle
from oracles.settings import OracleSettings
from synth.tasks.completion import answer_code, defines, definition_of, is_one_fenced_block
from synth.extract import extract_paths
from synth.extract.extract import ExtractOptions
from synth.generation.settings import RftSettings
from synth.generation.rft import run_rft
from synth.tasks.task import Task
from synth.tasks.judge import Judge
from training.rewards import CompilerRewards

GCD = "pub fn gcd(a: u64, b: u64) -> u64 {\n    if b == 0 { a } else { gcd(b, a % b) }\n}"
# (reply, accepted): each reply is what the model sent, whole.
TRICKY = [
    (GCD, True),  # no fence: the whole reply is the code
    (f"```rust\n{GCD}\n```", True),
    (f"```\n{GCD}\n```", True),  # a fence without a language tag
    (f"Here it is:\n```rust\n{GCD}\n```\nIt recurses until `b` is 0.", True),  # prose around
    (f"```rust\n{GCD}\n```\nUse it so:\n```rust\nlet g = gcd(4, 6);\n```", True),  # two fences, answer first
    (f"```rust\nfn helper() {{}}\n```\nand then\n```rust\n{GCD}\n```", False),  # two fences: the first is read
    (f"Euclid's algorithm: {GCD}", False),  # prose and no fence: the prose is compiled too
    (f"```rust,ignore\n{GCD}\n```", False),  # not a language tag: no fence is found, the fences are compiled
    (f"```rust\n{GCD}", False),  # cut off before the closing fence
    ("```rust\n// fn gcd comes later\npub fn gcd_of(a: u64, b: u64) -> u64 { a % b }\n```", False),  # named in a comment
    ("```rust\n#[allow(non_camel_case_types)]\npub struct gcd;\n```", False),  # the name, but not a function
    (f'```rust\nconst URL: &str = "http://x"; {GCD}\n```', True),  # `//` inside a string is no comment
    # Hollow answers that compile (what SmolLM2 "passed" held-out tasks with):
    ("pub fn gcd(a: u64, b: u64) -> u64 {\n    todo!()\n}", False),  # a placeholder body
    ("pub fn gcd(a: u64, b: u64) -> u64 {\n    gcd(a, b)\n}", False),  # it only calls itself
    ("#[cfg(windows)]\npub fn gcd(a: u64, b: u64) -> u64 {\n    windows_gcd(a, b)\n}", False),  # configured out
]


class ScriptedSampler:
    """Stands in for the model: returns the tricky replies as its k samples."""
    name = "scripted"

    def complete(self, prompts: list[str], k: int) -> list[list[str]]:
        return [[reply for reply, _ in TRICKY][:k] for _ in prompts]


@pytest.fixture(scope="module")
def gcd_decl():
    return next(d for d in extract_paths([EXAMPLE_CRATE], ExtractOptions(jobs=1)).declarations
                if d.kind == "fn" and d.name == "gcd")


def test_rft_acceptance_and_the_grpo_reward_agree_on_tricky_replies(gcd_decl):
    oracle = RustOracle(OracleSettings(jobs=2))
    task = Task(id="gcd", lang="rust", prompt="Write `gcd` as its documentation says.", context=gcd_decl.context,
                must_define=[definition_of(gcd_decl.kind, gcd_decl.name)])
    sampled = run_rft([task], ScriptedSampler(), Judge({"rust": oracle}), RftSettings(k=len(TRICKY))).sampled[0]
    rft_accepted = sampled.passed

    rewards = {f.__name__: f for f in CompilerRewards(Judge({"rust": oracle}), {"gcd": task}).functions()}
    grpo_accepted = [r == 1.0 for r in rewards["compile"](None, [reply for reply, _ in TRICKY], ["gcd"] * len(TRICKY))]

    assert rft_accepted == grpo_accepted
    assert grpo_accepted == [accepted for _, accepted in TRICKY]


def test_answer_code_reads_the_first_fenced_block():
    assert answer_code("```rust\nfn a() {}\n```\n```rust\nfn b() {}\n```") == "fn a() {}"
    assert answer_code("x\n```\nfn a() {}\n```\ny") == "fn a() {}"
    assert answer_code("\nfn a() {}\n") == "fn a() {}"


def test_one_fenced_block_allows_only_whitespace_around_it():
    assert is_one_fenced_block("\n```rust\nfn a() {}\n```\n")
    assert not is_one_fenced_block("Here:\n```rust\nfn a() {}\n```")
    assert not is_one_fenced_block("```rust\nfn a() {}\n```\n```rust\nfn b() {}\n```")
    assert not is_one_fenced_block("fn a() {}")


@pytest.mark.parametrize("code,wanted,expected", [
    ("pub fn gcd() {}", ["fn gcd"], True),
    ("pub fn gcd() {}", ["gcd"], True),  # a bare name: any item keyword
    ("struct gcd;", ["fn gcd"], False),
    ("struct gcd;", ["gcd"], True),
    ("fn gcd_of() {}", ["gcd"], False),  # a longer name is another name
    ("fn a() {} struct B;", ["fn a", "struct B"], True),
    ("fn a() {}", ["fn a", "struct B"], False),  # every entry must be defined
    ("// fn gcd\nfn other() {}", ["gcd"], False),
    ("/* fn gcd */ fn other() {}", ["gcd"], False),
    ('let s = "//"; fn gcd() {}', ["fn gcd"], True),
    ("let c = '\"'; fn gcd() {}", ["fn gcd"], True),  # a quote in a char literal opens no string
    ("fn longest<'a>(x: &'a str) -> &'a str { x }", ["fn longest"], True),  # lifetimes are no char literals
    ("macro_rules! square { ($x:expr) => { $x * $x } }", [definition_of("macro", "square")], True),
    ("impl S { pub fn area(&self) {} }", [definition_of("method", "area")], True),
    ("fn double(x: int) to int { return x * 2 }", ["fn double"], True),  # Vox
    ("fn a() {}", [definition_of("fn", "")], False),  # a nameless declaration is never defined
    ("fn a() {}", [], True),
    ("fn gcd() -> u8 { todo!() }", ["fn gcd"], False),  # a placeholder body defines nothing
    ('fn gcd() -> u8 {\n    unimplemented!("later");\n}', ["fn gcd"], False),
    ("fn gcd() -> u8 { if x { todo!() } else { 1 } }", ["fn gcd"], True),  # a placeholder in one branch
    ("impl S {\n    fn gcd(&self) { todo!() }\n}\nfn gcd() -> u8 { 1 }", ["fn gcd"], True),  # one of them is written
])
def test_defines(code, wanted, expected):
    assert defines(code, wanted) is expected
