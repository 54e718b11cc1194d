"""How an answer to a task is judged: one function for `synth eval`, the GRPO reward and RFT's
acceptance, so they cannot disagree on the same answer.

An answer counts (`solved`) when its code, placed as the task says (synth/tasks/task.py), compiles,
defines what the task asks for, and does not pretend (synth/tasks/judge/hollow.py: no function of it only
diverges or only calls itself, and it adds no `#[allow]` or `#[cfg]` of its own). A repair answer
must also keep the declaration's original signature: changing what callers see is no fix; the
types are compared, by rustc where the spelling differs (synth/tasks/judge/signature.py). `passed` also needs
the task's tests, where it has some (with `crate_tests`, those of the crate the task's code comes from). Beside that, a repair answer is marked `exact` when it restores the
original (comments and whitespace aside) and `deleted` when it compiles only because the lines
that held the error are gone; where the original had those lines in another form (the fix is a
change, not a deletion), such an answer does not count (refused `deleted`: on the loop's tasks
every one read by hand lost a value or the code around it). Checks are batched: one oracle call
per language for standalone
answers, one crate-oracle call for answers placed in a copy of their crate, and one more of each for the signatures whose spelling
differs; tests run only for answers that count."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from oracles.errors import ToolchainMissing
from oracles.verdict import Candidate, Splice, Verdict
from synth.assemble.answers import normalize_answer
from synth.rust_syntax import node_text, rust_parser
from synth.tasks.completion import answer_code, defines, fenced_code, is_hollow, without_own_cfg
from .deletion import changed_lines, deletes_the_error
from .hollow import never_returning, own_names, pretending
from .signature import definition, probe, same_qualifiers, same_shape, same_text

if TYPE_CHECKING:
    from synth.tasks.task import CrateSpot, Task


@dataclass
class Outcome:
    compiled: bool
    defined: bool  # defines what was asked, keeps a repair's signature, does not pretend
    tests: float | None  # share passed; None when the task has none
    first_error: str = ""  # the compiler's first error code where it failed ("error": one without a code)
    exact: bool = False  # repair: the original restored
    deleted: bool = False  # repair: compiles because the erroring lines are gone
    verdict: Verdict | None = field(default=None, repr=False)  # the compiler's, for rows that keep the answer
    refused: str = ""  # why code that compiled does not count: hollow, own attribute, signature, not defined, deleted
    probe: str | None = field(default=None, repr=False)  # a signature rustc must compare (synth/tasks/judge/signature.py)

    @property
    def solved(self) -> bool:
        return self.compiled and self.defined

    @property
    def passed(self) -> bool:
        return self.solved and (self.tests is None or self.tests == 1.0)


@dataclass
class Judge:
    """`oracles` maps a language to an oracle with check() and test(); `crate_oracle` checks the
    answers of tasks verified in their crate (oracles/cargo/crate.py); `crate_tests` (a CargoOracle),
    when given, runs a repair answer that counts against its crate's own tests."""
    oracles: dict
    crate_oracle: object = None
    crate_tests: object = None
    calls: int = 0  # batched check calls
    batches: int = 0
    checked: int = 0  # answers judged
    compiled: int = 0  # of them, compiled: an answer placed as one already checked reuses its verdict
    tested: int = 0
    _verdicts: dict = field(default_factory=dict, repr=False)  # placed answer -> its verdict, for this judge's life
    crate_passes: dict = field(default_factory=dict, repr=False)  # (crate folder, features) -> its tests pass as it is
    _crate_runs: dict = field(default_factory=dict, repr=False)  # answer placed in its crate (a Splice) -> its tests pass

    def judge(self, tasks: list[Task], completions: list[str]) -> list[Outcome]:
        self.batches += 1
        codes = [answer_code(c) for c in completions]
        verdicts = self.check(tasks, codes)
        outcomes = [outcome(t, code, v, fenced_code(c)) for t, code, v, c in zip(tasks, codes, verdicts, completions)]
        self._compare_signatures(tasks, codes, outcomes)
        self._test(tasks, codes, outcomes)
        return outcomes

    def _compare_signatures(self, tasks: list[Task], codes: list[str], outcomes: list[Outcome]) -> None:
        """rustc's word on the signatures spelled otherwise than the original: each answer checked
        again with its probe after it (one batched call per kind of check)."""
        index = [i for i, o in enumerate(outcomes) if o.probe]
        if not index:
            return
        for i, verdict in zip(index, self.check([tasks[i] for i in index], [codes[i] + outcomes[i].probe for i in index])):
            outcomes[i].defined = verdict.passed
            outcomes[i].refused = "" if verdict.passed else "signature"
            outcomes[i].probe = None

    def check(self, tasks: list[Task], codes: list[str]) -> list[Verdict]:
        """One verdict per answer, as placed by its task: batched per language, crate tasks together.
        The same answer placed the same way is compiled once (a baseline's answers are judged again
        where a model's turn starts from them; GRPO's samples repeat): verdicts are deterministic."""
        keys = [placed(t, c) for t, c in zip(tasks, codes)]
        todo = {}  # first index of each placed answer not seen yet
        for i, key in enumerate(keys):
            if key not in self._verdicts:
                todo.setdefault(key, i)
        if todo:
            index = list(todo.values())
            for i, verdict in zip(index, self._compile([tasks[i] for i in index], [codes[i] for i in index])):
                self._verdicts[keys[i]] = verdict
        self.checked += len(tasks)
        return [self._verdicts[key] for key in keys]

    def _compile(self, tasks: list[Task], codes: list[str]) -> list[Verdict]:
        verdicts: list[Verdict | None] = [None] * len(tasks)
        in_crate = [i for i, t in enumerate(tasks) if t.in_crate is not None]
        if in_crate:
            if self.crate_oracle is None:
                raise ToolchainMissing("tasks verified in their crate need the crate oracle (cargo)")
            jobs = [self._job(tasks[i], codes[i]) for i in in_crate]
            for i, verdict in zip(in_crate, self.crate_oracle.check(jobs)):
                verdicts[i] = verdict
            self.calls += 1
        standalone = [i for i, t in enumerate(tasks) if t.in_crate is None]
        for lang in sorted({tasks[i].lang for i in standalone}):
            index = [i for i in standalone if tasks[i].lang == lang]
            oracle = self.oracles.get(lang)
            if oracle is None:
                raise ToolchainMissing(f"no oracle for {lang!r} tasks (configure [train.oracle])")
            for i, verdict in zip(index, oracle.check([Candidate.of(tasks[i].source(codes[i])) for i in index])):
                verdicts[i] = verdict
            self.calls += 1
        self.compiled += len(tasks)
        return verdicts

    def _job(self, task: Task, code: str):
        spot = task.in_crate
        return self.crate_oracle.job(_splice(spot, code), spot.name, task.reference, "answer", spot.trait_impl)

    def _test(self, tasks: list[Task], codes: list[str], outcomes: list[Outcome]) -> None:
        for lang in sorted({t.lang for t in tasks}):
            index = [i for i, t in enumerate(tasks) if t.lang == lang and t.tests and outcomes[i].solved
                     and t.in_crate is None]
            if not index:
                continue
            tested = self.oracles[lang].test([Candidate.of(tasks[i].source(codes[i], with_tests=True)) for i in index])
            self.tested += len(index)
            for i, verdict in zip(index, tested):
                result = verdict.tests
                outcomes[i].tests = (result.passed / result.total) if result and result.total and \
                    not result.timed_out else 0.0
        if self.crate_tests is not None:
            self._test_in_crate(tasks, codes, outcomes)

    def _test_in_crate(self, tasks: list[Task], codes: list[str], outcomes: list[Outcome]) -> None:
        """A task that says where its declaration sits in its crate (every repair task made from
        a crate, and codegen tasks of functions checked standalone), whose crate's own tests (unit and integration) all pass as it is, has them as its
        tests: an answer that counts must pass them too, in place of the declaration. The compiler
        cannot tell a value from the one meant (`Default::default()` for a dropped argument, a
        neighbouring enum variant); the tests can, where they reach it. An exact repair is the
        original and passes without a run; an answer that does not count, fails."""
        index = [i for i, t in enumerate(tasks) if t.in_its_crate is not None and self._has_tests(t.in_its_crate)]
        placed = {i: _splice(tasks[i].in_its_crate, in_its_crate(tasks[i], codes[i]))
                  for i in index if outcomes[i].solved and not outcomes[i].exact}
        todo = list(dict.fromkeys(p for p in placed.values() if p not in self._crate_runs))  # each placed answer once
        if todo:
            self._crate_runs.update({p: verdict.passed for p, verdict in zip(todo, self.crate_tests.test(todo))})
            self.tested += len(todo)
        for i in index:  # one not run: an exact repair passes, an answer that does not count fails
            mine = 1.0 if (self._crate_runs[placed[i]] if i in placed else outcomes[i].solved) else 0.0
            outcomes[i].tests = mine if outcomes[i].tests is None else min(outcomes[i].tests, mine)  # and its own

    def _has_tests(self, spot: CrateSpot) -> bool:
        """The crate has tests and they all pass on it as it is, with the task's features on (asked
        once a crate and features: a feature-gated declaration is configured out without them)."""
        copy = spot.root, tuple(spot.features)
        if copy not in self.crate_passes:
            verdict = self.crate_tests.test([Splice(spot.root, spot.path, 0, 0, "", copy[1])])[0]
            self.crate_passes[copy] = verdict.passed and bool(verdict.tests and verdict.tests.total)
        return self.crate_passes[copy]


def _splice(spot: CrateSpot, code: str) -> Splice:
    return Splice(spot.root, spot.path, spot.start_byte, spot.end_byte, code, tuple(spot.features))


def in_its_crate(task: Task, code: str) -> str:
    """What of an answer goes over its declaration's span in the crate: the answer itself, but for
    a codegen task of a method (asked and answered inside its impl block, while the span in the
    crate is the method's) the members of the answer's impl block that holds the method."""
    if task.family != "codegen" or not task.must_define or task.lang != "rust":
        return code
    if not any(n.type == "impl_item" for n in rust_parser().parse(task.reference.encode()).root_node.named_children):
        return code
    name, data = task.must_define[0].split()[-1], code.encode()
    for item in rust_parser().parse(data).root_node.named_children:
        body = item.child_by_field_name("body") if item.type == "impl_item" else None
        if body is not None and any(f.type == "function_item" and node_text(f.child_by_field_name("name")) == name
                                    for f in body.named_children):
            return data[body.start_byte + 1:body.end_byte - 1].decode()
    return code


def placed(task: Task, code: str) -> tuple:
    """What an answer's verdict depends on: the code and where its task places it."""
    spot = task.in_crate
    if spot is None:
        return task.lang, task.source(code)
    return (spot.root, spot.path, spot.start_byte, spot.end_byte, spot.name, spot.trait_impl, tuple(spot.features),
            task.reference, code)


def outcome(task: Task, code: str, verdict: Verdict, raw: str | None = None) -> Outcome:
    """What the compiler's verdict on one placed answer means for the task (`raw`: the answer as
    written, its own `#[cfg]` lines included)."""
    refused, pending = refusal(task, code, verdict, code if raw is None else raw)
    first = (verdict.errors[0].code if verdict.errors else "") or "error"
    result = Outcome(compiled=verdict.passed, defined=not refused, tests=0.0 if task.tests else None,
                     first_error="" if verdict.passed else first, verdict=verdict, refused=refused,
                     probe=pending if verdict.passed and not refused else None)
    if task.family == "repair" and result.solved:
        result.exact = normalize_answer(code, task.lang) == normalize_answer(without_own_cfg(task.reference), task.lang)
        result.deleted = not result.exact and deletes_the_error(code, task.broken, task.reference, task.lang)
        if result.deleted and changed_lines(task.broken, task.reference)[1]:  # the fix is a change: dropping the code is none
            result.defined, result.refused = False, "deleted"
    return result


def refusal(task: Task, code: str, verdict: Verdict, raw: str) -> tuple[str, str | None]:
    """Why the answer would not count even if it compiled ('' if nothing is wrong yet), and the
    probe rustc must pass when its signature is spelled otherwise."""
    if not defines(code, task.must_define):
        return "not defined", None
    pretends = pretending(raw, task.reference, repair=task.family == "repair", own=own_never_returning(task)) \
        if task.lang == "rust" else ""
    if pretends or is_hollow(verdict):
        return ("own attribute" if pretends.endswith("of its own") else "hollow"), None
    if task.family != "repair":
        named = task.must_define[0].split()[-1] if task.must_define else ""
        return ("" if task.lang != "rust" or not named or same_shape(code, task.reference, named) else "signature"), None
    if task.lang != "rust":
        return ("" if keeps_signature(code, task.signature, task.lang) else "signature"), None
    if same_text(code, task.signature) or (in_trait_impl(task) and same_name(code, task.signature)):
        return "", None
    if not same_qualifiers(code, task.signature):  # `pub fn` -> `fn` passes the probe
        return "signature", None
    pending = probe(task.signature, method=task.kind == "method")
    return ("", pending) if pending else ("signature", None)


def own_never_returning(task: Task) -> frozenset[str]:
    """The functions of the task's code that never return (`-> !`): of its context, and of its
    crate where it says where it sits there (an answer checked in its crate may call any of them)."""
    spot = task.in_its_crate
    return _never_returning_in(task.context + task.before + task.after) | \
        (_never_returning_in_crate(spot.root) if spot is not None else frozenset())


@functools.lru_cache(maxsize=256)
def _never_returning_in(source: str) -> frozenset[str]:
    """Its functions declared `-> !`, and its names for std ones (`use std::process::exit;`)."""
    return own_names(rust_parser().parse(source.encode()).root_node) if source.strip() else frozenset()


@functools.lru_cache(maxsize=64)
def _never_returning_in_crate(root: str) -> frozenset[str]:
    return never_returning(crate_sources(root))


def crate_sources(root: str) -> list[str]:
    """The text of every Rust file of a crate folder (a build's `target` aside), in path order."""
    return [p.read_text(errors="replace") for p in sorted(Path(root).rglob("*.rs"))
            if "target" not in p.relative_to(root).parts]


def in_trait_impl(task: Task) -> bool:
    """A method of a trait impl: the trait fixes its signature, and rustc checks the answer against it."""
    if task.in_crate is not None:
        return task.in_crate.trait_impl
    headers = re.findall(r"^[ \t]*(?:unsafe )?impl\b[^{\n]*\{[ \t]*$", task.before, re.M)
    return task.kind == "method" and bool(headers) and " for " in headers[-1]


def same_name(code: str, signature: str) -> bool:
    return definition(code, signature) is not None


def keeps_signature(code: str, signature: str, lang: str) -> bool:
    """The answer holds the declaration's signature (whitespace and comments aside). An empty
    signature is never kept: nothing would tell a fix from an unrelated declaration."""
    squeeze = lambda text: "".join(normalize_answer(text, lang).split())  # noqa: E731
    return bool(signature.strip()) and squeeze(signature) in squeeze(code)


