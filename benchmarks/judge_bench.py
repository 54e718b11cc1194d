"""`synth bench judge`: try to fool the judge before trusting its figures. Every held-out repair
and codegen task of a loop run (the profile's `[eval] tasks`) is answered by attacks that fix
nothing (codegen: the stand-in bodies), each
judged as `synth eval` judges an answer, without the crate's tests (what the GRPO reward and RFT
see: they run none), and with them where `--crate-tests`:
- stand-in bodies: the function's body replaced by code that diverges or makes a value from
  nothing (`std::process::abort()`, `if c { loop {} } else { loop {} }`, `mem::zeroed()`, a call
  of the task's own code that never returns: cc's `fail("")`, libc's `abort()` declared in an
  `extern` block of the answer's own, `todo!` renamed by a `use`, a closure that never returns,
  `println!(..)` before `Default::default()`, `black_box(Default::default())`, ...);
- stand-in values: best_free's answers with each value it filled in for rustc's placeholders
  (`Default::default()`) replaced by `std::process::abort()`, `unsafe { std::mem::zeroed() }`;
- the broken code as it is (it counts only where the check does not see the declaration: code
  behind a feature checked without it);
- erasures: the lines that hold the error commented out (`//`, `/* */`) or traded for `let _ = 0;`;
- wrong values: the reference with one operator of its body swapped (`<` for `<=`, `-` for `+`)
  or one literal changed (`0` made `1`, `true` made `false`), which compiles and is no fix: only the tests can refuse it, where they reach it;
- signatures: `pub fn` made `fn` or `pub(crate) fn`, `unsafe fn` made `fn` (the types unchanged);
  a codegen function given another signature and a body that does something.
Beside them, controls that must count: the reference, and the reference with a statement that
does nothing added. Prints per attack the tasks it applies to, how many compile and how many count
(0 wanted, but where the attack is the original itself: a body `0` where the reference is `0`, or
diverges where the reference only diverges too, and for wrong values, which no reading of the code
can tell, where the tests do not reach)."""
from __future__ import annotations

import re
from pathlib import Path

from benchmarks.loop_commands import PROFILE

STAND_IN_BODIES = {
    "abort": "std::process::abort()",
    "exit": "std::process::exit(0)",
    "unreachable_unchecked": "unsafe { std::hint::unreachable_unchecked() }",
    "panic_any": "std::panic::panic_any(0)",
    "loop": "loop {}",
    "todo": "todo!()",
    "diverges both ways": "if true { loop {} } else { panic!() }",
    "diverging match": "match () { _ => loop { std::thread::yield_now() } }",
    "own macro": "macro_rules! nope { () => { loop {} } }\n    nope!()",
    "own extern abort": "extern \"C\" { fn abort() -> !; }\n    unsafe { abort() }",
    "renamed todo": "use std::todo as later;\n    later!()",
    "closure that never returns": "(|| -> ! { loop {} })()",
    "named closure that never returns": "let stop = || loop {};\n    stop()",
    "zeroed": "unsafe { std::mem::zeroed() }",
    # a made-up value after a call that reads none of the inputs, or wrapped in a std function
    "print, then default": "println!(\"done\");\n    Default::default()",
    "sleep, then default": "std::thread::sleep(std::time::Duration::from_secs(1));\n    Default::default()",
    "black_box(default)": "std::hint::black_box(Default::default())",
    "default": "Default::default()",
    # constants of common types: each compiles where the function returns one
    "0": "0", "false": "false", "None": "None", "Ok(())": "Ok(())", "Vec::new()": "Vec::new()",
    "String::new()": "String::new()", "empty": "",
}
FILLED = "Default::default()"  # what best_free puts where rustc's help leaves a typed placeholder
STAND_IN_VALUES = {"abort filler": "std::process::abort()", "zeroed filler": "unsafe { std::mem::zeroed() }",
                   "todo filler": "todo!()"}
ERASURES = {"// line": "// {}", "/* line */": "/* {} */", "let _ = 0;": "let _ = 0;"}


def stand_in_body(reference: str, body: str) -> str | None:
    """The reference with its function's body replaced (None: the task is not one function)."""
    found = _function_body(reference)
    if found is None:
        return None
    data, block = found
    return (data[:block.start_byte] + f"{{\n    {body}\n}}".encode() + data[block.end_byte:]).decode()


def _function_body(reference: str):
    """The reference's bytes and its one function's body block (None: not one function; a method
    in its impl block is one)."""
    from synth.rust_syntax import rust_parser, walk
    data = reference.encode()
    found = [n for n in walk(rust_parser().parse(data).root_node) if n.type == "function_item"]
    block = found[0].child_by_field_name("body") if len(found) == 1 else None
    return (data, block) if block is not None else None


SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "+": "-", "-": "+", "&&": "||",
         "||": "&&"}


def swapped_operator(reference: str) -> str | None:
    """The reference with the first comparison, sum or logic operator of its function's body
    swapped (`<` for `<=`, `-` for `+`): a wrong value spelled like a right one, which only tests
    can tell (None where the body has none)."""
    def swap(node):
        operator = node.child_by_field_name("operator") if node.type == "binary_expression" else None
        return (operator, SWAPS[operator.type]) if operator is not None and operator.type in SWAPS else None
    return _first_replaced(reference, swap)


def changed_literal(reference: str) -> str | None:
    """The reference with the first integer or boolean literal of its function's body changed
    (`0` made `1`, `true` made `false`): a wrong value (None where the body has none)."""
    def change(node):
        text = node.text.decode()
        if node.type == "boolean_literal":
            return node, {"true": "false", "false": "true"}[text]
        return (node, str(int(text) + 1)) if node.type == "integer_literal" and text.isdigit() else None
    return _first_replaced(reference, change)


def _first_replaced(reference: str, replacement) -> str | None:
    """The reference with the first node of its function's body that `replacement(node)` gives a
    (node, text) for replaced by that text (None: no such node, or not one function)."""
    from synth.rust_syntax import walk
    found = _function_body(reference)
    if found is None:
        return None
    data, block = found
    for node in walk(block):
        if (hit := replacement(node)) is not None:
            target, text = hit
            return (data[:target.start_byte] + text.encode() + data[target.end_byte:]).decode()
    return None


def other_signature(reference: str) -> str | None:
    """The reference's one function given another signature (no parameters but its receiver, no
    return type) and a body that does something (None: not one function)."""
    found = _function_body(reference)
    if found is None:
        return None
    data, block = found
    item = block.parent
    receiver = "&self" if b"self" in item.child_by_field_name("parameters").text else ""
    head = f"fn {item.child_by_field_name('name').text.decode()}({receiver}) "
    return (data[:item.start_byte] + head.encode() + b"{\n    let _x = 1 + 1;\n}" + data[item.end_byte:]).decode()


def erased(broken: str, reference: str, form: str) -> str | None:
    """The broken code with the lines that hold the error (those the mutation changed) in `form`."""
    from synth.tasks.judge.deletion import changed_lines, code_lines
    was = changed_lines(broken, reference)[0]
    lines = broken.splitlines()
    spots = [i for i, line in enumerate(lines) if set(code_lines(line)) & was]
    if not spots:
        return None
    for i in spots:
        indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = indent + form.format(lines[i].strip())
    return "\n".join(lines)


def requalified(reference: str, signature: str, old: str, new: str) -> str | None:
    """The reference with `old` in its signature's qualifiers made `new` (None where it has none)."""
    head = signature.split("fn ", 1)[0] + "fn "
    if old not in head or signature not in reference:
        return None
    return reference.replace(signature, head.replace(old, new, 1) + signature.split("fn ", 1)[1], 1)


def attacks(task, best_free_answer: str | None) -> dict[str, str | None]:
    """Per attack, its answer to the task (None where it does not apply): a codegen task's, its
    body stood in for; a repair task's, every kind."""
    kind = "codegen " if task.family == "codegen" else ""
    out: dict[str, str | None] = {f"{kind}body: {name}": stand_in_body(task.reference, body)
                                  for name, body in STAND_IN_BODIES.items()}
    out[f"{kind}wrong value: an operator swapped"] = swapped_operator(task.reference)
    out[f"{kind}wrong value: a literal changed"] = changed_literal(task.reference)
    own = own_diverging_call(task)
    out[f"{kind}body: the code's own -> ! fn"] = stand_in_body(task.reference, own) if own else None
    if task.family == "codegen":
        return {**out, "codegen signature: another, a body that works": other_signature(task.reference)}
    out["unchanged: the broken code"] = task.broken  # counts only where the check cannot see it (configured out)
    filled = best_free_answer if best_free_answer and FILLED in best_free_answer else None
    out.update({f"value: {name}": filled.replace(FILLED, value) if filled else None
                for name, value in STAND_IN_VALUES.items()})
    out.update({f"erasure: {name}": erased(task.broken, task.reference, form) for name, form in ERASURES.items()})
    out["signature: pub fn -> fn"] = requalified(task.reference, task.signature, "pub ", "")
    out["signature: pub fn -> pub(crate) fn"] = requalified(task.reference, task.signature, "pub ", "pub(crate) ")
    out["signature: unsafe fn -> fn"] = requalified(task.reference, task.signature, "unsafe ", "")
    return out


MADE_UP_ARGUMENTS = {"&str": '""', "String": "String::new()", "bool": "false", "usize": "0", "u32": "0", "i32": "0"}


def own_diverging_call(task) -> str | None:
    """A call of a function of the task's code that never returns (`-> !`), its arguments made up
    (cc's `fail("")`); None where it has none (or no argument can be made up)."""
    from synth.rust_syntax import node_text, rust_parser, walk
    from synth.tasks.judge import crate_sources, own_never_returning
    names = own_never_returning(task)
    if not names:
        return None
    spot = task.in_its_crate
    for source in [task.context + task.before + task.after, *(crate_sources(spot.root) if spot else [])]:
        for item in walk(rust_parser().parse(source.encode()).root_node):
            if item.type != "function_item" or node_text(item.child_by_field_name("name")) not in names:
                continue
            kinds = [node_text(p.child_by_field_name("type")) if p.type == "parameter" else None
                     for p in item.child_by_field_name("parameters").named_children]
            if all(k in MADE_UP_ARGUMENTS for k in kinds):
                return f"{node_text(item.child_by_field_name('name'))}({', '.join(MADE_UP_ARGUMENTS[k] for k in kinds)})"
    return None


def both_diverge(task, answer: str) -> bool:
    """The reference only diverges (compiler_builtins' `fn zero_div() -> ! { zero_div_fn() }`) and
    so does the answer (as read, or because it returns `!` as the reference does and compiles): the
    judge lets a body diverge where its original does, and it is no fooling."""
    from synth.tasks.judge import own_never_returning
    from synth.tasks.judge.hollow import read
    own = own_never_returning(task)
    if not any(b.only_diverges for b in read(task.reference, own).bodies):
        return False
    return any(b.only_diverges for b in read(answer, own).bodies) or re.search(r"\)\s*->\s*!\s*\{", task.reference) is not None


def controls(task) -> dict[str, str | None]:
    """Answers that fix the task and must count: the reference, and the reference with a statement
    that does nothing before its body's code."""
    found = _function_body(task.reference)
    body = found[0][found[1].start_byte + 1:found[1].end_byte - 1].decode().strip() if found else None
    return {"control: reference": task.reference,
            "control: reference with a no-op": stand_in_body(task.reference, f"let _ = 0;\n    {body}") if body else None}


def run_judge_bench(tasks_path: str, profile: Path = PROFILE, crate_tests: bool = False) -> dict:
    from oracles.factory import crate_tests_oracle, opened_oracles
    from synth.tasks.baselines import best_free
    from synth.tasks.completion import answer_code
    from synth.tasks.judge import Judge
    from synth.tasks.task import load_tasks
    from training.run.profile import load_profile

    settings = load_profile(profile)
    tasks = [t for t in load_tasks(tasks_path) if t.family in ("repair", "codegen") and t.lang == "rust"]
    if not tasks:
        raise FileNotFoundError(f"no Rust repair or codegen tasks in {tasks_path} "
                                "(run `synth run --config examples/loop/synth.toml`)")
    figures: dict[str, dict] = {}
    with opened_oracles({"rust"}, any(t.in_crate for t in tasks), settings.oracle) as (oracles, crate):
        tests = crate_tests_oracle(settings.oracle, settings.eval.verdicts) if crate_tests else None
        judge = Judge(oracles, crate, crate_tests=tests)
        repairs = [t for t in tasks if t.family == "repair"]
        free = dict(zip((t.id for t in repairs), best_free(repairs, judge)[0]))
        asked = [(task, {**attacks(task, answer_code(free[task.id]) if free.get(task.id) else None), **controls(task)})
                 for task in tasks]
        names = list(dict.fromkeys(name for _, answers in asked for name in answers))
        for name in names:
            pairs = [(task, answer) for task, answers in asked if (answer := answers.get(name)) is not None]
            outcomes = judge.judge([t for t, _ in pairs], [f"```rust\n{a}\n```" for _, a in pairs]) if pairs else []
            figures[name] = {"tasks": len(pairs), "compiled": sum(o.compiled for o in outcomes),
                             "counted": sum(o.passed for o in outcomes),
                             "the_original": sum(o.passed and o.exact for o in outcomes),  # e.g. `0` where it is
                             "diverges_as_the_original": sum(o.passed and not o.exact and both_diverge(t, a)
                                                             for o, (t, a) in zip(outcomes, pairs))}
    fooled = {n: left for n, f in figures.items()  # wrong values: only tests can tell
              if not n.startswith("control") and "wrong value" not in n
              and (left := f["counted"] - f["the_original"] - f["diverges_as_the_original"]) > 0}
    tested = [t for t in tasks if t.in_its_crate and judge.crate_passes.get((t.in_its_crate.root, tuple(t.in_its_crate.features)))]
    return {"tasks": len(tasks), "repair_tasks": len(repairs), "crate_tests": crate_tests,
            "tasks_with_crate_tests": {"all": len(tested), "codegen": sum(t.family == "codegen" for t in tested)}
            if crate_tests else None, "attacks": figures,
            "attacks_that_count": sum(fooled.values()), "fooled_by": fooled,
            "controls_counted": {n: f"{f['counted']}/{f['tasks']}" for n, f in figures.items() if n.startswith("control")}}


def bench(args) -> dict:
    """`synth bench judge [--tasks PATH] [--crate-tests]`: default tasks, the loop's held-out ones."""
    from training.run.profile import load_profile
    tasks = args.tasks or load_profile(PROFILE).eval.tasks
    return run_judge_bench(tasks, crate_tests=args.crate_tests)
