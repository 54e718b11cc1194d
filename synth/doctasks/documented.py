"""The doc lane, which needs no LLM: a documented Rust function becomes a task whose instruction is
its own doc comment and signature, shown with the context it compiles in, and whose answer is
the declaration itself, checked by the compiler exactly as an evaluation checks a model's answer
(`candidate_source(context, answer)`).

The doc comment is left out of the answer: the prompt already carries it, it is 36% of a documented
function's tokens (267 vs 171 on average over the loop's 756; 37% of answers fit a 128-token cap
with it, 71% without), and 22% of docs hold ``` fences that cut a fenced answer short (figures:
`synth bench loop`, `data.doc_in_answer`).
Only the doc's summary (up to its first example or heading) is shown, which keeps prompts short.

A function whose standalone file fails can still be verified in its crate (the crate oracle: the
crate copy compiles as a whole, so every declaration in it compiles in its real context). Its row
shows the same standalone context as the others: the declarations its body names, extracted the
same way, so training prompts have exactly the shape of the served tasks (a signatures-only view
would be a second template the held-out tasks never use). Such a row is SFT data only: its
`verification.scope` is "crate", and a task's check (standalone) could not confirm its answer."""
from __future__ import annotations

import re
from dataclasses import dataclass

from oracles.verdict import Candidate, Verdict
from synth.tasks.completion import without_own_cfg
from synth.extract.package import package_of
from synth.extract.model import Declaration, cfg_gated, crate_name, crate_spot
from synth.settings.fit import TOO_LONG, Fit
from synth.mutate.in_crate import InCrate, crate_originals, crate_recipe
from synth.prompting.templates import system_prompt, with_context
from synth.rows.rejection import Rejection
from synth.rows.row import Provenance, Row, make_row
from synth.tasks.task import candidate_source

DOC_KINDS = ("fn", "method")
DOC_LINE = re.compile(r"^\s*(///|//!|/\*\*|\*|\*/)")
MAX_SUMMARY_CHARS = 600


@dataclass
class DocItem:
    """A documented function as a task: what the model is asked, what it answers, where it compiles."""
    decl: Declaration
    prompt: str  # the user turn, as served (synth/prompting/chat.py serve_prompt adds the system prompt)
    context: str  # the declarations the answer is placed after
    answer: str  # the reference answer (a method inside its impl block)

    @property
    def source(self) -> str:
        return candidate_source(self.context, self.answer)


def doc_candidates(decls: list[Declaration]) -> list[Declaration]:
    return [d for d in decls if d.lang == "rust" and d.kind in DOC_KINDS and d.doc.strip()
            and not d.near_parse_error and not d.is_test and summary(d.doc)]


def summary(doc: str) -> str:
    """The doc up to its first code example or section heading, at most MAX_SUMMARY_CHARS."""
    kept = []
    for line in doc.strip().splitlines():
        if line.lstrip().startswith(("```", "# ")):
            break
        kept.append(line.rstrip())
    text = "\n".join(kept).strip()
    return text if len(text) <= MAX_SUMMARY_CHARS else text[:MAX_SUMMARY_CHARS].rsplit(" ", 1)[0] + " ..."


def without_doc(code: str) -> str:
    """The declaration without its doc comment lines (attributes and body kept)."""
    lines = code.splitlines()
    start = _item_line(lines)
    return "\n".join(line for i, line in enumerate(lines) if i >= start or not DOC_LINE.match(line))


def _item_line(lines: list[str]) -> int:
    """Index of the line where the item itself starts (docs and attributes come before it)."""
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped and not DOC_LINE.match(line) and not stripped.startswith("#["):
            return i
    return len(lines)


def reference_answer(decl: Declaration, keep_doc: bool = False) -> str:
    """The answer a model should give, checked as a reply is (synth/tasks/completion.py): without its own
    `#[cfg(...)]` lines, so a function configured out of the check cannot pass unseen."""
    code = without_own_cfg(decl.clean_text if keep_doc else without_doc(decl.clean_text))
    if not decl.wrapper_head:
        return code.strip("\n")
    lines = code.splitlines()
    indent = re.match(r"\s*", lines[-1]).group(0) if len(lines) > 1 else "    "
    lines[0] = indent + lines[0].lstrip()
    return f"{compact_context(decl.wrapper_head)}{chr(10).join(lines)}\n{decl.wrapper_tail}".strip("\n")


def doc_prompt(decl: Declaration, context: str) -> str:
    """The declarations the answer was verified with, then the doc summary and signature (a method
    inside its impl block, as the answer has it)."""
    pad = "    " if decl.wrapper_head else ""
    doc = "".join(f"{pad}/// {line}".rstrip() + "\n" for line in summary(decl.doc).splitlines())
    shown = f"{compact_context(decl.wrapper_head)}{doc}{pad}{decl.signature.strip()}"
    where = ", inside its impl block as shown" if decl.wrapper_head else ""
    instruction = (f"Write the Rust function `{decl.name}` with this documentation and signature{where}:\n"
                   f"```rust\n{shown}{chr(10) + decl.wrapper_tail if decl.wrapper_head else ''}\n```")
    return with_context(instruction, context)


def compact_context(context: str) -> str:
    """The context without its doc comments: the same program to the compiler, far fewer tokens to
    read. The answer is verified against this text, and this text is what the prompt shows."""
    return "".join(line for line in context.splitlines(keepends=True)
                   if not line.lstrip().startswith(("///", "//!")))


def doc_item(decl: Declaration, keep_doc: bool = False) -> DocItem:
    context = compact_context(decl.context)
    return DocItem(decl=decl, prompt=doc_prompt(decl, context), context=context,
                   answer=reference_answer(decl, keep_doc))


def verify(items: list[DocItem], oracle) -> list[Verdict]:
    """One batched check of every reference answer in its context (what the task's check will run)."""
    return oracle.check([Candidate.of(item.source) for item in items]) if items else []


def doc_row(item: DocItem, verdict: Verdict, seed: int, recipe: dict | None = None) -> Row:
    decl = item.decl
    row = make_row(
        lang="rust", lane="rust_doc", task="codegen", prompt=item.prompt, response=item.answer, verdict=verdict,
        system=system_prompt(),
        provenance=Provenance(**package_of(decl).fields(), source_path=decl.path, decl_hash=decl.hash, stage="doclane",
                              seed=seed),
        checked_source=item.source, context=item.context, must_define=[decl.name],
        crate=crate_name(decl))
    if recipe:
        row.verification = row.verification.model_copy(update={"scope": "crate", "crate": recipe})
    elif decl.crate_root and decl.crate_path:  # checked standalone; its crate's tests run the answer in place
        row.crate_spot = crate_spot(decl)
    return row


def doc_lane(decls: list[Declaration], oracle, seed: int = 0, crate_oracle=None,
             fit: Fit | None = None) -> tuple[list[Row], list[Rejection]]:
    """Rows of the documented functions whose answer compiles in its context (or, with
    `crate_oracle`, in its crate where the standalone file fails); the rest rejected. With `fit`
    ([tokens]), an item over the token limits is rejected before any compile."""
    items, rejected = [], []
    for item in map(doc_item, doc_candidates(decls)):
        over = fit.over(item.prompt, item.answer) if fit is not None else None
        if over:
            rejected.append(Rejection(TOO_LONG, over, {"decl": item.decl.id, "name": item.decl.name, "lang": "rust"}))
        else:
            items.append(item)
    rows, failed = [], []
    # one with its own #[cfg(...)] may pass alone unseen: only its crate's probe check verifies it
    alone = [item for item in items if not cfg_gated(item.decl)]
    for item, verdict in zip(alone, verify(alone, oracle)):
        if verdict.passed:
            rows.append(doc_row(item, verdict, seed))
        else:
            failed.append((item, verdict))
    failed += [(item, None) for item in items if cfg_gated(item.decl)]
    in_crate = crate_originals([i.decl for i, _ in failed], crate_oracle) if crate_oracle else InCrate()
    why_not = in_crate.why_not
    for item, verdict in failed:
        if item.decl.id in in_crate.verified:
            rows.append(doc_row(item, in_crate.verified[item.decl.id], seed,
                                crate_recipe(item.decl, crate_oracle, in_crate.features[item.decl.id])))
            continue
        errors = ([d for d in verdict.diagnostics if d.severity == "error"] or verdict.diagnostics) if verdict else []
        kind, alone = (("reference does not compile",
                        f"reference does not compile in its context: {errors[0].code if errors else 'no diagnostic'}")
                       if verdict else ("reference not verified (own #[cfg])",
                                        "its own #[cfg(...)] may hide it from a check alone"))
        rejected.append(Rejection(kind, alone + (f", nor in its crate: {why_not[item.decl.id]}" if item.decl.id in why_not else ""),
                                  {"decl": item.decl.id, "name": item.decl.name, "lang": "rust"}))
    rows.sort(key=lambda r: (r.provenance.source_path, r.provenance.decl_hash))
    return rows, rejected
