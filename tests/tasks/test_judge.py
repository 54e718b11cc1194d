"""The judge cannot be fooled, on real rustc and cargo: answers that only pretend (a body that
diverges or only calls itself, at any nesting, after statements that do nothing or not; an own
`#[allow]` or `#[cfg]`; a changed signature with the original pasted into a string) are refused,
standalone and in a copy of their crate; the same signature spelled with other words for the same
types is accepted (rustc compares them through a probe)."""
import pytest

from oracles.cargo.crate import CargoCrateOracle
from synth.tasks.judge.hollow import pretending
from synth.tasks.judge import Judge
from synth.tasks.judge.signature import probe, same_qualifiers
from synth.tasks.task import CrateSpot, Task
from helpers.replies import fenced

# the crate allows the lint that would flag a self call: only the judge's own reading sees it
CONTEXT = ("#![allow(unconditional_recursion)]\nuse std::fmt;\n\npub struct Meters(pub u32);\n\n"
           "fn fail(why: &str) -> ! {\n    panic!(\"{}\", why)\n}\n\n")  # the code's own way to diverge, as cc's
TOTAL = "pub fn total(xs: &[u32]) -> u32 {\n    let mut sum = 0;\n    for x in xs {\n        sum += x;\n    }\n    sum\n}"
DOUBLED = "pub fn doubled(&self) -> u32 {\n    self.0 * 2\n}"
SHOW = "pub fn show(m: &Meters, f: &mut fmt::Formatter) -> fmt::Result {\n    write!(f, \"{}m\", m.0)\n}"
FMT = "fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {\n    write!(f, \"{}m\", self.0)\n}"
DEFAULT = "impl Default for Meters {\n    fn default() -> Self {\n        Meters(0)\n    }\n}"
LIB = (f"{CONTEXT}{TOTAL}\n\n{SHOW}\n\nimpl Meters {{\n{DOUBLED}\n}}\n\nimpl fmt::Display for Meters {{\n{FMT}\n}}\n\n"
       f"{DEFAULT}\n")

PRETENDING = {  # each compiles in place of `total`, and each answers nothing
    "loop": "pub fn total(xs: &[u32]) -> u32 {\n    loop {}\n}",
    "panic": "pub fn total(xs: &[u32]) -> u32 {\n    panic!()\n}",
    "unreachable": "pub fn total(xs: &[u32]) -> u32 {\n    unreachable!()\n}",
    "nested todo": "pub fn total(xs: &[u32]) -> u32 {\n    { { todo!() } }\n}",
    "todo after a no-op": "pub fn total(xs: &[u32]) -> u32 {\n    let _ = 0;\n    todo!()\n}",
    "panic after work": "pub fn total(xs: &[u32]) -> u32 {\n    let n = xs.len() as u32;\n    std::panic!(\"{}\", n)\n}",
    "self call allowed": "#[allow(unconditional_recursion)]\npub fn total(xs: &[u32]) -> u32 {\n    total(xs)\n}",
    "self call": "pub fn total(xs: &[u32]) -> u32 {\n    let _ = 0;\n    return total(xs);\n}",
    "todo arm": "pub fn total(xs: &[u32]) -> u32 {\n    match xs.len() {\n        0 => 0,\n        _ => todo!(),\n    }\n}",
    "panic in a branch": "pub fn total(xs: &[u32]) -> u32 {\n    if xs.len() > 1 {\n        panic!(\"many\")\n    }\n"
                         "    xs.iter().sum()\n}",  # a repair that gives up a case the original handled
    "abort": "pub fn total(xs: &[u32]) -> u32 {\n    std::process::abort()\n}",
    "exit after work": "pub fn total(xs: &[u32]) -> u32 {\n    let n = xs.len() as i32;\n    std::process::exit(n)\n}",
    "unreachable_unchecked": "pub fn total(xs: &[u32]) -> u32 {\n    unsafe { core::hint::unreachable_unchecked() }\n}",
    "diverges both ways": "pub fn total(xs: &[u32]) -> u32 {\n    if xs.is_empty() { loop {} } else { panic!() }\n}",
    "diverging match": "pub fn total(xs: &[u32]) -> u32 {\n    match xs.len() {\n        _ => loop { std::thread::yield_now() },\n"
                       "    }\n}",
    "abort arm": "pub fn total(xs: &[u32]) -> u32 {\n    match xs.len() {\n        0 => 0,\n"
                 "        _ => std::process::abort(),\n    }\n}",  # rustc's placeholder filled with a call that never returns
    "zeroed arm": "pub fn total(xs: &[u32]) -> u32 {\n    match xs.len() {\n        0 => 0,\n"
                  "        _ => unsafe { std::mem::zeroed() },\n    }\n}",  # a value made from nothing
    "default body": "pub fn total(xs: &[u32]) -> u32 {\n    Default::default()\n}",  # the work, dropped
    "own diverging fn": "pub fn total(xs: &[u32]) -> u32 {\n    let _ = xs;\n    fail(\"not yet\")\n}",
    "own diverging fn arm": "pub fn total(xs: &[u32]) -> u32 {\n    match xs.len() {\n        0 => 0,\n"
                            "        _ => crate::fail(\"many\"),\n    }\n}",  # a placeholder filled with it
    "own extern -> !": "pub fn total(xs: &[u32]) -> u32 {\n    extern \"C\" {\n        fn abort() -> !;\n    }\n"
                       "    unsafe { abort() }\n}",  # libc's abort, declared by the answer
    "own extern": "pub fn total(xs: &[u32]) -> u32 {\n    extern \"C\" {\n        fn abort();\n    }\n"
                  "    unsafe { abort() };\n    xs.len() as u32\n}",
    "use alias": "pub fn total(xs: &[u32]) -> u32 {\n    use std::process::{abort as stop};\n    stop()\n}",
    "fn pointer": "pub fn total(xs: &[u32]) -> u32 {\n    let stop = std::process::abort as fn() -> !;\n    stop()\n}",
    "cast call": "pub fn total(xs: &[u32]) -> u32 {\n    (std::process::abort as fn() -> !)()\n}",
    "None.unwrap": "pub fn total(xs: &[u32]) -> u32 {\n    None.unwrap()\n}",
    "assert false": "pub fn total(xs: &[u32]) -> u32 {\n    assert!(false, \"later\");\n    xs.len() as u32\n}",
    "while true": "pub fn total(xs: &[u32]) -> u32 {\n    while true {}\n    0\n}",
    "calls back": "pub fn total(xs: &[u32]) -> u32 {\n    again(xs)\n}\n\nfn again(xs: &[u32]) -> u32 {\n    total(xs)\n}",
    "own macro": "pub fn total(xs: &[u32]) -> u32 {\n    macro_rules! sum { () => { loop {} } }\n    sum!()\n}",
    "own cfg": "#[cfg(not(test))]\npub fn total(xs: &[u32]) -> u32 {\n    0\n}",
    "pasted signature": "pub fn total(xs: &[u32]) -> u64 {\n    let _ = \"pub fn total(xs: &[u32]) -> u32\";\n"
                        "    xs.iter().map(|&x| x as u64).sum()\n}",
    # found by `synth bench judge`'s attacks on the loop's held-out tasks, each once counted
    "renamed todo": "pub fn total(xs: &[u32]) -> u32 {\n    use std::todo as later;\n    later!()\n}",
    "closure that never returns": "pub fn total(xs: &[u32]) -> u32 {\n    (|| -> ! { loop {} })()\n}",
    "made-up value after a call": "pub fn total(xs: &[u32]) -> u32 {\n    println!(\"total\");\n    Default::default()\n}",
}
# a loop that ends the function with `return`: it leaves, it does not diverge
LOOP_TOTAL = ("pub fn total(xs: &[u32]) -> u32 {\n    let (mut sum, mut it) = (0, xs.iter());\n    loop {\n"
              "        match it.next() {\n            Some(x) => sum += x,\n            None => return sum,\n"
              "        }\n    }\n}")



def standalone(name: str, reference: str, signature: str, kind: str = "fn", owner: str = "") -> Task:
    before, after = CONTEXT + (f"{owner} {{\n" if owner else ""), ("\n}\n" if owner else "\n")
    return Task(id=name, lang="rust", family="repair", prompt="fix", reference=reference, broken=reference,
                signature=signature, kind=kind, must_define=[] if kind == "impl" else [f"fn {name}"],
                before=before, after=after)


def in_crate(task: Task, root, reference: str, trait_impl: bool = False) -> Task:
    start = LIB.encode().index(reference.encode())
    spot = CrateSpot(root=str(root), path="src/lib.rs", start_byte=start, end_byte=start + len(reference.encode()),
                     name=task.id, trait_impl=trait_impl)
    return task.model_copy(update={"in_crate": spot, "before": "", "after": "", "id": task.id + "@crate"})


@pytest.fixture(scope="module")
def crate(tmp_path_factory):
    root = tmp_path_factory.mktemp("meters")
    (root / "src").mkdir()
    (root / "Cargo.toml").write_text('[package]\nname = "meters"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n')
    (root / "src" / "lib.rs").write_text(LIB)
    return root


@pytest.fixture(scope="module")
def crate_oracle():
    oracle = CargoCrateOracle(cache=None)
    yield oracle
    oracle.close()


def test_answers_that_pretend_are_refused_and_real_fixes_count(rust_oracle, crate, crate_oracle):
    total = standalone("total", TOTAL, "pub fn total(xs: &[u32]) -> u32")
    tasks = {"standalone": total, "crate": in_crate(total, crate, TOTAL)}
    judge = Judge({"rust": rust_oracle}, crate_oracle)
    for where, task in tasks.items():
        answers = {**PRETENDING, "exact": TOTAL, "other fix": TOTAL.replace("sum += x;", "sum = sum + *x;"),
                   "loop that returns": LOOP_TOTAL}
        got = dict(zip(answers, judge.judge([task] * len(answers), [fenced(a) for a in answers.values()])))
        for name in PRETENDING:
            assert got[name].compiled and not got[name].solved, (where, name)
        assert got["exact"].solved and got["other fix"].solved and got["loop that returns"].solved, where
        assert got["self call allowed"].refused == got["own cfg"].refused == got["own macro"].refused == "own attribute"
        assert got["own extern -> !"].refused == got["own extern"].refused == "own attribute"
        assert {got[n].refused for n in ("use alias", "fn pointer", "cast call", "None.unwrap", "assert false",
                                         "while true", "calls back")} == {"hollow"}
        assert got["loop"].refused == got["panic after work"].refused == got["self call"].refused == "hollow"
        assert {got[n].refused for n in ("abort", "exit after work", "diverges both ways", "abort arm", "zeroed arm",
                                                  "default body", "own diverging fn", "own diverging fn arm")} == {"hollow"}
        assert got["pasted signature"].refused == "signature" and got["renamed todo"].refused == "own attribute"
        assert got["closure that never returns"].refused == got["made-up value after a call"].refused == "hollow"


def test_a_whole_impl_with_a_placeholder_method_is_refused(rust_oracle, crate, crate_oracle):
    task = standalone("default", DEFAULT, "impl Default for Meters", kind="impl")
    judge = Judge({"rust": rust_oracle}, crate_oracle)
    placeholder = DEFAULT.replace("Meters(0)", "todo!()")
    for t in (task, in_crate(task, crate, DEFAULT)):
        real, fake = judge.judge([t, t], [fenced(DEFAULT), fenced(placeholder)])
        assert real.solved and fake.compiled and not fake.solved and fake.refused == "hollow"


def test_the_same_types_spelled_otherwise_keep_the_signature(rust_oracle, crate, crate_oracle):
    """`Result<(), std::fmt::Error>` is `fmt::Result`: rustc says so through the probe; a real change
    of type is refused, for a free function, an inherent method and a trait method."""
    show = standalone("show", SHOW, "pub fn show(m: &Meters, f: &mut fmt::Formatter) -> fmt::Result")
    doubled = standalone("doubled", DOUBLED, "pub fn doubled(&self) -> u32", kind="method", owner="impl Meters")
    fmt_ = standalone("fmt", FMT, "fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result", kind="method",
                      owner="impl fmt::Display for Meters")
    spelled = {
        "show": (show, SHOW.replace("-> fmt::Result", "-> Result<(), std::fmt::Error>"),
                 SHOW.replace("f: &mut fmt::Formatter", "f: &mut fmt::Formatter<'_>").replace("m: &Meters", "m: &Meters ")),
        "doubled": (doubled, DOUBLED.replace("&self", "self: &Self"), None),
        "fmt": (fmt_, FMT.replace("-> fmt::Result", "-> Result<(), std::fmt::Error>"), None),
    }
    changed = {"show": SHOW.replace("m: &Meters", "m: &mut Meters"),
               "doubled": DOUBLED.replace("-> u32", "-> u64").replace("self.0 * 2", "self.0 as u64 * 2")}
    judge = Judge({"rust": rust_oracle}, crate_oracle)
    for name, (task, same, also_same) in spelled.items():
        variants = [t for t in (task, in_crate(task, crate, task.reference, trait_impl=name == "fmt"))]
        for t in variants:
            answers = [same] + ([also_same] if also_same else []) + ([changed[name]] if name in changed else [])
            got = judge.judge([t] * len(answers), [fenced(a) for a in answers])
            assert all(o.solved for o in got[:len(answers) - (name in changed)]), (name, t.id, [o.refused for o in got])
            if name in changed:
                assert got[-1].compiled and got[-1].refused == "signature", (name, t.id)


def test_a_reference_that_diverges_licenses_only_a_body_that_works_first():
    reference = "fn find(v: &[u8]) -> usize {\n    for i in 0..v.len() {\n        if v[i] == 0 {\n            return i;\n" \
                "        }\n    }\n    unreachable!()\n}"
    assert pretending(reference, reference) == ""
    assert pretending("fn find(v: &[u8]) -> usize {\n    unreachable!()\n}", reference)
    assert pretending("fn find(v: &[u8]) -> usize {\n    let mut i = 0;\n    loop {\n        if v[i] == 0 {\n"
                      "            break;\n        }\n        i += 1;\n    }\n    i\n}", reference) == ""
    assert pretending("fn f() -> u8 {\n    if true { panic!() }\n    1\n}", "fn f() -> u8 { 1 }") == ""  # a branch may


def test_the_codes_own_never_returning_functions_diverge_where_the_original_does_not():
    """cc's `fail(msg) -> !` as a body (or a repair's filler) stands for code not written; where
    the original calls it too, an answer that does the same work may; a name that also returns
    is no way to diverge."""
    from synth.tasks.judge.hollow import never_returning
    own = never_returning(["fn fail(s: &str) -> ! { panic!() }\nimpl A { fn stop(&self) -> ! { loop {} } }\n"
                           "fn exit() -> ! { loop {} }\nmod m { pub fn exit() -> u8 { 0 } }"])
    assert own == {"fail", "stop"}
    reference = "fn get(v: &[u8]) -> u8 {\n    if v.is_empty() {\n        fail(\"empty\")\n    }\n    v[0]\n}"
    assert pretending(reference, reference, repair=True, own=own) == ""
    assert pretending("fn get(v: &[u8]) -> u8 {\n    fail(\"later\")\n}", reference, own=own)
    assert pretending("fn get(v: &[u8]) -> u8 {\n    self.stop()\n}", "fn get(v: &[u8]) -> u8 { v[0] }", own=own)
    assert pretending("fn get(v: &[u8]) -> u8 {\n    exit() + v[0]\n}", "fn get(v: &[u8]) -> u8 { v[0] }", own=own) == ""
    assert pretending("fn get(v: &[u8]) -> u8 {\n    fail(&v.len().to_string())\n}", "fn get(v: &[u8]) -> u8 { v[0] }") == ""
    # (a body that reads none of the inputs the original reads pretends whatever it calls)
    assert "reads none of its inputs" in pretending("fn get(v: &[u8]) -> u8 {\n    exit()\n}", "fn get(v: &[u8]) -> u8 { v[0] }")
    # a reference with a foreign `-> !` of its own licenses the block, not a body that only calls it
    ffi = "extern \"C\" {\n    fn abort() -> !;\n}\n\n"
    with_ffi = ffi + "fn get(v: &[u8]) -> u8 {\n    if v.is_empty() {\n        unsafe { abort() }\n    }\n    v[0]\n}"
    assert pretending(with_ffi, with_ffi) == ""
    assert pretending(ffi + "fn get(v: &[u8]) -> u8 {\n    unsafe { abort() }\n}", with_ffi)


def test_no_probe_where_no_fn_pointer_type_names_the_function():
    assert probe("pub async fn f(x: u8)", False) is None
    assert probe("pub fn f(x: impl Fn())", False) is None
    assert probe("impl Default for Meters", False) is None
    assert "let _: fn(&'a mut Self, T) -> &'a T = Self::get::<T>;" in probe(
        "fn get<'a, T: Clone>(&'a mut self, t: T) -> &'a T where T: Copy", True)


def test_an_answer_placed_as_one_already_judged_is_compiled_once(rust_oracle, crate, crate_oracle):
    """The judge compiles each placed answer once in its life (an `--after` evaluation judges the
    baseline's answers again; GRPO's samples repeat), and only the same code in the same place
    shares a verdict: the same code where the context already defines it is compiled on its own."""
    total = standalone("total", TOTAL, "pub fn total(xs: &[u32]) -> u32")
    clash = total.model_copy(update={"id": "clash", "before": CONTEXT + TOTAL + "\n\n"})  # E0428 there
    other = TOTAL.replace("sum += x;", "sum = sum + *x;")
    judge = Judge({"rust": rust_oracle}, crate_oracle)
    first = judge.judge([total, total, total, in_crate(total, crate, TOTAL)], [fenced(TOTAL), fenced(TOTAL), fenced(other),
                                                                            fenced(TOTAL)])
    assert (judge.checked, judge.compiled) == (4, 3)
    again = judge.judge([total, clash, in_crate(total, crate, TOTAL)], [fenced(TOTAL)] * 3)
    assert (judge.checked, judge.compiled) == (7, 4)
    assert all(o.solved for o in first) and again[0].solved and again[2].solved
    assert not again[1].compiled and again[1].first_error == "E0428"
    fresh = Judge({"rust": rust_oracle}, crate_oracle).judge([clash, total], [fenced(TOTAL)] * 2)
    assert [(o.compiled, o.first_error) for o in fresh] == [(o.compiled, o.first_error) for o in again[1::-1]]


def test_a_codegen_body_that_diverges_every_way_is_hollow_and_a_loop_that_returns_is_not():
    """Codegen answers are judged on their straight-line code: an `if`/`else` or a `match` whose
    every way diverges, or a call of a std function that never returns, is a body that only
    diverges; a `loop` left by `return` or `?` is work."""
    reference = TOTAL
    for body in ("if xs.is_empty() { loop {} } else { panic!() }", "match xs.len() { 0 => loop {}, _ => unreachable!() }",
                 "std::process::abort()", "let n = xs.len();\n    std::process::exit(n as i32)"):
        assert pretending(f"pub fn total(xs: &[u32]) -> u32 {{\n    {body}\n}}", reference) != "", body
    assert pretending(LOOP_TOTAL, reference) == ""
    assert pretending("pub fn total(xs: &[u32]) -> u32 {\n    if xs.is_empty() { return 0; } else { panic!() }\n}",
                      reference) == ""  # one way returns


def test_a_body_that_gives_back_a_made_up_value_is_hollow_where_the_reference_does_more():
    """`{ 0 }`, `Default::default()`, `Ok(())` compile wherever their type is asked: a body that is
    only that, where the reference's computes something, did none of its work (codegen has no
    tests to tell). A name or a path is a value of the context, and the reference's own constant
    may be given back in another spelling."""
    for body in ("0", "Default::default()", "return 0;"):
        assert pretending(f"pub fn total(xs: &[u32]) -> u32 {{\n    {body}\n}}", TOTAL) != "", body
    assert pretending(FMT.replace('write!(f, "{}m", self.0)', "Ok(())"), FMT) != ""
    assert pretending("fn len(&self) -> usize {\n    Default::default()\n}", "fn len(&self) -> usize {\n    0\n}") == ""
    assert pretending("fn kind() -> Kind {\n    First\n}", "fn kind() -> Kind {\n    Kind::First\n}") == ""
    assert pretending("fn f(&self) -> Option<u8> {\n    None\n}", "fn f(&self) -> Option<u8> {\n    self.0.first().copied()\n}")
    # a value made from nothing is no default, even where the reference gives back one (aho-corasick's
    # `FinderBuilder::new() { FinderBuilder::default() }`)
    new = "pub fn new() -> Finder {\n    Finder::default()\n}"
    assert pretending("pub fn new() -> Finder {\n    unsafe { std::mem::zeroed() }\n}", new) != ""
    assert pretending("pub fn new() -> Finder {\n    Default::default()\n}", new) == ""


def test_a_renamed_macro_a_closure_or_a_value_that_reads_no_input_pretends():
    """Found by trying to fool the judge on the loop's held-out tasks (`synth bench judge`): a
    diverging macro under another name, a closure that never returns called at once or by name,
    and a made-up value after statements that read none of the function's inputs (`println!`,
    `sleep`) or wrapped in a std function (`black_box`) each counted as a codegen answer. A body
    that reads its inputs (in a format string too) counts, and a function whose original reads
    none of its inputs is not held to reading them."""
    for body in ("let _n = xs.len();\n    use std::todo as later;\n    later!()",  # each reads its input first
                 "let _n = xs.len();\n    (|| -> ! { loop {} })()", "let _n = xs.len();\n    let stop = || loop {};\n    stop()",
                 "println!(\"total\");\n    Default::default()", "std::thread::sleep(std::time::Duration::MAX);\n    0",
                 "std::hint::black_box(Default::default())"):
        assert pretending(f"pub fn total(xs: &[u32]) -> u32 {{\n    {body}\n}}", TOTAL) != "", body
    assert pretending("pub fn total(xs: &[u32]) -> u32 {\n    println!(\"{xs:?}\");\n    xs.iter().sum()\n}", TOTAL) == ""
    assert pretending('pub fn name(n: u32) -> String {\n    format!("{n}")\n}',
                      "pub fn name(n: u32) -> String {\n    n.to_string()\n}") == ""
    assert pretending("fn f(&self) -> u8 {\n    println!();\n    1\n}", "fn f(&self) -> u8 {\n    1\n}") == ""
    new = "pub fn new() -> Finder {\n    Finder { size: 8 }\n}"  # no inputs: a wrapped default is still made up
    assert pretending("pub fn new() -> Finder {\n    std::hint::black_box(Default::default())\n}", new) != ""
    assert pretending("pub fn new() -> Finder {\n    std::convert::identity(Finder { size: 8 })\n}", new) == ""


def test_a_repair_that_changes_visibility_or_safety_changes_the_signature(rust_oracle, crate, crate_oracle):
    """No fn-pointer type tells `pub fn` from `fn` (and a safe fn coerces to an `unsafe fn`
    pointer): the probe passes them, the qualifiers as written do not."""
    show = standalone("show", SHOW, "pub fn show(m: &Meters, f: &mut fmt::Formatter) -> fmt::Result")
    respelled = SHOW.replace("-> fmt::Result", "-> Result<(), std::fmt::Error>")
    answers = [respelled, respelled.removeprefix("pub "), respelled.replace("pub fn", "pub(crate) fn")]
    judge = Judge({"rust": rust_oracle}, crate_oracle)
    for t in (show, in_crate(show, crate, SHOW)):
        kept, private, crate_only = judge.judge([t] * 3, [fenced(a) for a in answers])
        assert kept.solved, t.id
        assert private.compiled and crate_only.compiled and private.refused == crate_only.refused == "signature", t.id
    assert not same_qualifiers("fn get(p: *const u8) -> u8 { 0 }", "pub unsafe fn get(p: *const u8) -> u8")
    assert not same_qualifiers("pub fn len() -> usize { 0 }", "pub const fn len() -> usize")
    assert same_qualifiers("pub  unsafe fn get(p: *const u8) -> u8 { 0 }", "pub unsafe fn get(p: *const u8) -> u8")


def test_a_codegen_answer_keeps_the_signature_it_was_shown(rust_oracle):
    """A function of the asked name but another signature compiles too (`fn total() { .. }`): it
    does not count; the parameters' names are the answer's own."""
    task = Task(id="total", lang="rust", family="codegen", prompt="Write `total`.", reference=TOTAL,
                must_define=["total"], before=CONTEXT, after="\n")
    answers = {"renamed": TOTAL.replace("xs", "values"), "no parameters": "pub fn total() {\n    let _x = 1 + 1;\n}",
               "other types": TOTAL.replace("u32", "u64"), "private": TOTAL.removeprefix("pub ")}
    got = dict(zip(answers, Judge({"rust": rust_oracle}).judge([task] * len(answers), [fenced(a) for a in answers.values()])))
    assert got["renamed"].passed
    for name in ("no parameters", "other types", "private"):
        assert got[name].compiled and got[name].refused == "signature", name
