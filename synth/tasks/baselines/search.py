"""`free_search`: the compiler's help tried every way its words allow, rustc picking, as a model
is sampled k times and rustc picks (`synth eval --pick compiled`). A repairer sampled 8 times
against the compiler's help tried once is no fair match: a user with no model clicks through the
other quick fixes too. Per task, up to TRIES answers, in order: `rustc_all`'s and
`compiler_words`' (best_free's two), then each other combination of one option per error in the
broken code (`word_options`: every similar or near name, suggestion, import, placeholder filled
with each name the code binds, binding of the expected type), the likeliest first, each carried on
by `compiler_words`' rounds. The evaluation picks the first that compiles and passes the checks a
user can run (the picker of a model's samples)."""
from __future__ import annotations

from oracles.verdict import Diagnostic
from synth.rust_syntax import rust_parser
from synth.tasks.task import REPAIRS, Task
from . import FREE, ROUNDS, compiler_answers, in_declaration
from .compiler_words import Edit, bound_names, char_edits, in_order, typed_bindings, word_options

TRIES = 8  # answers a task, as many as the samples of a model the compiler picks from (the loop's)


def free_search(tasks: list[Task], judge, tries: int = TRIES) -> list[list[str] | None]:
    """Per task, up to `tries` distinct answers (None where the compiler's help does not apply)."""
    index = [i for i, t in enumerate(tasks) if t.family in REPAIRS and t.lang == "rust"]
    verdicts: list = [None] * len(tasks)
    for i, verdict in zip(index, judge.check([tasks[i] for i in index], [tasks[i].broken for i in index])):
        verdicts[i] = verdict
    firsts = [compiler_answers(kind, tasks, judge, verdicts) for kind in FREE]
    starts = [(i, code) for i in index if not verdicts[i].passed
              for code in other_starts(tasks[i].broken, in_declaration(tasks[i], tasks[i].broken,
                                                                       verdicts[i].diagnostics), tries)]
    carried = compiler_answers("compiler_words", [tasks[i].model_copy(update={"broken": code}) for i, code in starts],
                               judge, rounds=ROUNDS - 1) if starts else []
    more: dict[int, list[str]] = {}
    for (i, _), code in zip(starts, carried):
        more.setdefault(i, []).append(code)
    out: list[list[str] | None] = []
    for i, task in enumerate(tasks):
        if firsts[1][i] is None:
            out.append(None)
            continue
        answers = [a for a in dict.fromkeys([firsts[0][i], firsts[1][i], *more.get(i, [])]) if a != task.broken]
        out.append(answers[:tries] or [firsts[1][i]])
    return out


def other_starts(code: str, diagnostics: list[Diagnostic], tries: int) -> list[str]:
    """The code after each combination of one option per error (`word_options`), the likeliest
    first (the rules' own choice for every error is `compiler_words`' first round: left out)."""
    tree = rust_parser().parse(code.encode()).root_node
    bindings, names = typed_bindings(tree), bound_names(tree)
    options = [o for o in (word_options(code, tree, d, bindings, names) for d in diagnostics if d.severity == "error")
               if o]
    out: list[str] = []
    for picked in in_order([len(o) for o in options], tries + 1):
        if any(picked):
            edits: list[Edit] = [e for o, k in zip(options, picked) for e in o[k]]
            out.append(char_edits(code, edits))
    return [c for c in dict.fromkeys(out) if c != code]
