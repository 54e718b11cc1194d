"""A mutant spliced into its crate (a Job), and which jobs may share one cargo check (the rules
behind oracles/cargo/crate.py's exactness; whose a diagnostic is: oracles/cargo/outside.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..isolation import run_folders
from ..verdict import Diagnostic, Splice

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SCRATCH_PATH = re.compile(rf"/\S*?{run_folders.NAME}[^/\s]+/crate")  # a scratch copy's folder: another each run


@dataclass(frozen=True)
class Job:
    """One splice to check, and the names that decide which others it may share a check with."""

    splice: Splice
    name: str  # the function (or impl) the splice replaces
    idents: frozenset[str]  # every name its text (or the text it replaces) uses
    kind: str = ""  # the mutation operator (measurements are kept per kind)
    new_header: bool = False  # a signature changed: code naming `names` elsewhere may break
    names: frozenset[str] = frozenset()  # the names whose signature changed (a function's, an impl's methods)
    seen: frozenset[str] = frozenset()  # ... of them, those whose callers elsewhere may break
    alone: bool = False  # checked alone: it adds or removes a named type (rustc shortens paths to names
    # unique in the crate), or changes an impl's header (the types it covers: method lookup everywhere)


IMPL_HEAD = re.compile(r"^(?:unsafe\s+)?impl\b")
TYPE_ITEM = re.compile(r"\b(?:struct|enum|trait|type|union|mod)\s+([A-Za-z_][A-Za-z0-9_]*)")
FN_NAME = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
SIGNATURE = re.compile(r"\bfn\s[^{;]*")
BINDING_MUT = re.compile(r"([(,]\s*)mut\s+(?=[A-Za-z_])")  # `fn f(mut x: T)`: the body's business, not a caller's
# Traits a body uses without naming them (operators, `?`, `for`, auto-deref, calls): widening one
# of their impls can change code anywhere, so such a header change is checked alone.
IMPLICIT_TRAITS = frozenset({"Deref", "DerefMut", "Iterator", "IntoIterator", "From", "Into", "TryFrom", "TryInto",
                             "Index", "IndexMut", "Fn", "FnMut", "FnOnce", "Add", "Sub", "Mul", "Div", "Rem", "Neg",
                             "Not", "BitAnd", "BitOr", "BitXor", "Shl", "Shr", "AddAssign", "SubAssign", "MulAssign",
                             "DivAssign", "RemAssign", "BitAndAssign", "BitOrAssign", "BitXorAssign", "ShlAssign",
                             "ShrAssign", "PartialEq", "PartialOrd", "Future", "AsRef", "AsMut", "Borrow", "FromStr"})
# rustc's "no method found" help looks for the method on these wrappers of the receiver anywhere
WRAPPERS = frozenset({"Box", "Rc", "Arc", "Pin"})
MARKER_TRAITS = frozenset({"Send", "Sync", "Copy", "Eq", "Unpin", "UnwindSafe", "RefUnwindSafe", "FusedIterator"})


@lru_cache(maxsize=4096)  # a declaration's text is read once for each of its mutants and twice per job
def _signatures(text: str) -> tuple[str, dict[str, list[str]]]:
    """The text before the body, and the signatures of the functions directly inside it (an
    impl's methods) by name, without comments and attributes (doc examples hold braces). Items
    nested in a function's body are seen nowhere else."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(("//", "#[", "#!")))
    sigs: dict[str, list[str]] = {}
    for m in SIGNATURE.finditer(code):
        name = FN_NAME.match(m.group(0))
        if name and code.count("{", 0, m.start()) - code.count("}", 0, m.start()) == 1:
            sigs.setdefault(name.group(1), []).append(" ".join(BINDING_MUT.sub(r"\1", m.group(0)).split()))
    return " ".join(BINDING_MUT.sub(r"\1", code.split("{", 1)[0]).split()), sigs


def bounds_only_dropped(old: str, new: str) -> bool:
    """`new` is `old` less a trait bound of a generic parameter or where clause (`T: A + B` to
    `T: A`, `T: A` to `T`): it asks less of its callers, so none breaks."""
    if old == new or len(new) >= len(old):
        return False
    cut = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), len(new))
    for start in range(max(0, cut - 80), cut + 1):  # the removed run may start a little before the first difference
        end = start + len(old) - len(new)
        if old[:start] + old[end:] == new:
            gone, before = old[start:end].strip(), old[:start]
            if (gone.startswith((":", "+")) or gone.endswith("+")) and not any(c in gone for c in "(){};=") \
                    and ("->" not in before or " where " in before):
                return True
    return False


def defined_names(name: str, text: str) -> frozenset[str]:
    """A function's name; for an impl (`Read for Decoder<'a, R>`), its type's and trait's names and
    the names of the functions it defines."""
    head = [m for part in name.split(" for ") for m in IDENT.findall(part.split("<", 1)[0])[-1:]]  # `fmt::Debug`: Debug
    return frozenset(head + FN_NAME.findall(text))


def changed_names(name: str, original: str, text: str, trait_impl: bool) -> tuple[frozenset[str], frozenset[str]]:
    """(the names whose signature the splice changes, those of them whose callers elsewhere may
    break). A dropped bound asks less of callers that compiled, but a caller spliced beside it
    may read differently; in a trait impl (`trait_impl`) callers go through the trait's signature,
    and a method's mismatch with it is the impl's own error (E0046, E0053, E0050)."""
    head, sigs = _signatures(original)
    new_head, new_sigs = _signatures(text)
    if trait_impl and IMPL_HEAD.match(head) is None:  # a method of a trait impl: callers see the trait's
        return frozenset(), frozenset()
    names, seen = set(), set()
    if not trait_impl:
        for n in sigs.keys() | new_sigs.keys():
            old, new = sigs.get(n, []), new_sigs.get(n, [])
            if old != new:
                names.add(n)
                if not (len(old) == len(new) == 1 and bounds_only_dropped(old[0], new[0])):
                    seen.add(n)
    if head != new_head:
        defined = defined_names(name, original) | defined_names(name, text)
        if IMPL_HEAD.match(head):  # the trait and type it names (an impl's decl name may be its type alone)
            defined |= {n for n in _impl_parts(head)[1:] if n}
        names |= defined
        if not (trait_impl or bounds_only_dropped(head, new_head)):
            seen |= defined
    return frozenset(names), frozenset(seen)


def job_of(splice: Splice, name: str, original: str = "", kind: str = "", trait_impl: bool = False) -> Job:
    """`original`: the text the splice replaces (to tell which signatures change)."""
    names, seen = changed_names(name, original, splice.text, trait_impl) if original else (frozenset(), frozenset())
    # The names it uses, and those the text it replaces used: a splice over a caller stands in for it.
    idents = frozenset(IDENT.findall(splice.text)) | frozenset(IDENT.findall(original))
    alone = bool(original) and (sorted(TYPE_ITEM.findall(original)) != sorted(TYPE_ITEM.findall(splice.text))
                                 or _impl_header_reaches_anything(original, splice.text))
    return Job(splice, name, idents, kind, bool(names), names, seen, alone)


def _impl_header_reaches_anything(original: str, text: str) -> bool:
    """A changed impl header that may change code naming none of the impl's names. A dropped bound
    on `impl<W: Write> Ext for W` makes `Ext`'s methods candidates for every type: a neighbour's
    `BigEndian::write_u16` turned ambiguous (E0034) in a byteorder batch. So do impls of traits code
    uses unnamed (`?`, operators, `for`, auto-deref). An impl for one named type changes only what
    names its type, trait or methods: such a job shares a batch with none of those (`Job.names`)."""
    head, new_head = _signatures(original)[0], _signatures(text)[0]
    if head == new_head or IMPL_HEAD.match(head) is None:
        return False
    params, trait, self_type = _impl_parts(head)
    if self_type is None or self_type in params or self_type in WRAPPERS or trait in IMPLICIT_TRAITS:
        return True
    # its methods must be in its text (a macro writing them hides them), unless it is a marker
    return FN_NAME.search(original) is None and trait not in MARKER_TRAITS


def _impl_parts(head: str) -> tuple[set[str], str | None, str | None]:
    """(generic parameter names, trait name, the self type's name) of `impl<..> Trait for Type`;
    None where the head does not read plainly (`for &T`, a tuple, a slice: treated as covering anything)."""
    rest, params = head[len(IMPL_HEAD.match(head).group(0)):].strip(), set()
    if rest.startswith("<"):
        depth = 0
        for k, ch in enumerate(rest):
            depth += (ch == "<") - (ch == ">" and rest[k - 1] != "-")  # not the `>` of `Fn() -> T`
            if depth == 0:
                params = {p.split(":")[0].strip() for p in rest[1:k].split(",")}
                rest = rest[k + 1:].strip()
                break
    rest = rest.split(" where ", 1)[0]
    trait, _, ty = rest.rpartition(" for ") if " for " in rest else ("", "", rest)
    ty = ty.strip()
    path = IDENT.findall(ty.split("<", 1)[0])[-1:] if IDENT.match(ty) and not ty.startswith("dyn ") else []
    trait_name = IDENT.findall(trait.split("<", 1)[0])[-1:]
    return params, trait_name[0] if trait_name else None, path[0] if path else None  # `std::io::Cursor<T>`: Cursor


def is_sentinel(raw: dict) -> bool:
    return any("__synth_sentinel" in t.get("text", "") for sp in raw.get("spans", []) for t in sp.get("text") or [])


def cargo_failure(run, errors: list[Diagnostic]) -> list[Diagnostic]:
    if run.timed_out or errors or run.returncode in (0, None):
        return []
    tail = [SCRATCH_PATH.sub("<crate>", line) for line in run.stderr.strip().splitlines() if line.strip()][-3:]
    return [Diagnostic(code="cargo-exit", severity="error", message=f"cargo exited {run.returncode}: " + " | ".join(tail))]


class _Batch:
    """A batch being filled: its members and what decides who else may join."""

    def __init__(self, reach):
        self.reach = reach
        self.members: list[int] = []
        self.alone = False
        self.spans: dict[str, list[tuple[int, int]]] = {}
        self.idents: set[str] = set()  # every name the members use
        self.changed: set[str] = set()  # the names of the members whose signature changed
        self.reached: set[int] = set()  # the functions that name them

    def admits(self, job: Job) -> bool:
        if job.alone or self.alone:
            return False
        s = job.splice
        if any(s.start_byte < end and start < s.end_byte for start, end in self.spans.get(s.path, ())):
            return False
        if job.idents & self.changed:
            return False
        return not job.new_header or not (job.names & self.idents or self.reach(job) & self.reached)

    def add(self, i: int, job: Job) -> None:
        self.members.append(i)
        self.alone |= job.alone
        self.spans.setdefault(job.splice.path, []).append((job.splice.start_byte, job.splice.end_byte))
        self.idents |= job.idents
        if job.new_header:
            self.changed |= job.names
            self.reached |= self.reach(job)  # (only what `job.seen` names)


def batch_groups(items: list[tuple[int, Job]], size: int, reach=None) -> list[list[int]]:
    """Batches in which no two splices overlap, or name what the other's new signature changed
    (a body-only change is invisible to other functions; a new signature may break its callers),
    and no function elsewhere (`reach(job)`: the functions naming it) names two new signatures, so an
    error there is one splice's."""
    batches: list[_Batch] = []
    for i, job in sorted(items, key=lambda it: it[0]):
        batch = next((b for b in batches if len(b.members) < size and b.admits(job)), None)
        if batch is None:
            batch = _Batch(reach or (lambda job: frozenset()))
            batches.append(batch)
        batch.add(i, job)
    return [b.members for b in batches]


def check_plan(jobs: list[Job], candidates: list, lookup, answered: set[str]) -> tuple[dict, dict, dict]:
    """What a check of `jobs` needs: (index -> the stored verdict (`lookup`), where a run stored
    one; index of a repeated candidate -> its first index; copy -> the indices to group). A job
    whose candidate this oracle answered before is not grouped again: whatever the cache holds,
    each run makes the same groups."""
    known, same_as, first, by_copy = {}, {}, {}, {}
    for i, (job, cand) in enumerate(zip(jobs, candidates)):
        if cand.id in first:
            same_as[i] = first[cand.id]
            continue
        first[cand.id] = i
        hit = lookup(cand)
        if hit is not None:
            known[i] = hit
            if cand.id in answered:
                continue
        by_copy.setdefault(job.splice.copy, []).append(i)
    return known, same_as, by_copy
