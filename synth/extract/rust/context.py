"""Context for a Rust declaration: the `use` lines and the same-crate items it references, as
stubs (signatures with `todo!()` bodies, whole type definitions), so that the declaration
placed after its context is a standalone file that compiles on its own. Later steps put a
regenerated answer in the same place and check it quickly, in batches."""
from __future__ import annotations

from dataclasses import dataclass

from synth.extract.rust.item import TYPE_KINDS, RustItem
from synth.extract.rust.owner import trait_wrapper
from synth.extract.rust.index import CrateIndex, ImplKey, Located, base_name, indent

__all__ = ["Context", "CrateIndex", "Located", "base_name", "build_context"]
GROUPS = ("macro", "type", "value", "fn")  # the order stubs appear in a context


@dataclass
class Context:
    text: str  # everything before the declaration
    wrapper_head: str  # for methods: `impl ... {` plus required sibling stubs; else ""
    wrapper_tail: str  # "}" for methods
    references: list[str]
    truncated: bool = False  # the closure stopped at the size budget: the file may not compile alone


# A context is a prompt's preamble and a standalone file's head, not a copy of the crate: without a
# bound, a needed type brings its trait impls, whose signatures bring more types (serde_json: 113 KB
# median, 270x its source). Past the budget the closure stops, nearest items first; such a
# declaration is verified in its crate (the repair lane's in-crate fallback) instead. 16 KB is about
# 4K tokens, what a training row can hold; on 9 corpus crates, 141 of 1,429 declarations compile
# standalone with no budget, and the same 141 with 16, 8 or 4 KB.
MAX_CONTEXT_BYTES = 16_000


def build_context(decl: RustItem, file: str, index: CrateIndex, budget: int | None = MAX_CONTEXT_BYTES) -> Context:
    """The least set of items closed under these rules, from the names the declaration uses:
    a used name brings its item (same module first), whose stub's names are then used too; a
    needed type brings its trait impls whole (every required method, e.g. Display), and those of
    its methods whose name is used. The declaration itself is never its own context. `budget`
    (bytes; None: none) stops the closure, nearest names first."""
    chosen, pairs, with_impls, truncated = _closure(decl, index, budget)
    context = _render(decl, file, index, chosen, pairs, with_impls)
    context.truncated = truncated
    return context


def _closure(decl: RustItem, index: CrateIndex, budget: int | None) -> tuple[dict[int, Located], dict, set, bool]:
    """Rounds over the names new in the last round (in name order within one), until nothing is
    new or the stubs taken pass `budget` bytes. Whatever a declaration excludes (itself, its own
    impl) only ever adds names it already uses, so names are grown without those checks and the
    exclusions are applied when rendering. Returns the items, the methods by (type, name), the
    types whose trait impls are taken whole, and whether the budget stopped it."""
    module = decl.module_path
    relevant = index.relevant  # other names can bring nothing: sets stay small
    seen = set(decl.uses & relevant)
    seen.update(n for n in (base_name(decl.self_type), decl.trait_name) if n in relevant)
    fresh = set(seen)
    picks = index.picks(module)
    named, method_names = index.named_names, index.method_name_set
    chosen: dict[int, Located] = {}  # by crate order
    types: dict[str, list[Located]] = {}  # the chosen types, by name
    pairs: dict[tuple[int, str], tuple[Located, ...]] = {}  # (type order, method name) -> its methods
    size, with_impls = 0, set()  # bytes taken (stubs and whole trait impls), the types whose impls are taken
    limit = budget if budget is not None else float("inf")
    while fresh:
        grown: set[str] = set()
        for name in sorted(fresh & named):
            if size > limit:
                return chosen, pairs, with_impls, True
            if name == decl.name:
                loc = index.pick(name, module, decl)
            else:
                loc = picks[name] if name in picks else index.pick(name, module)
            if loc is None or loc.order in chosen:
                continue
            chosen[loc.order] = loc
            size += len(loc.item.stub)
            grown |= index.names_of(loc)
            if loc.is_type:
                types.setdefault(loc.item.name, []).append(loc)
                facts = index.type_facts(loc)
                if size + facts.impl_bytes > limit:  # the type, without the impls that would pass the budget
                    return chosen, pairs, with_impls, True
                size += facts.impl_bytes
                with_impls.add(loc.order)
                grown |= facts.trait_impl_names
                for method_name in facts.methods.keys() & seen:
                    methods, names = facts.methods[method_name]
                    pairs[(loc.order, method_name)] = methods
                    size += facts.method_bytes[method_name]
                    grown |= names
        if types:
            for method_name in fresh & method_names:
                for owner in index.method_owners[method_name] & types.keys():
                    for loc in types[owner]:
                        if (loc.order, method_name) not in pairs:
                            facts = index.type_facts(loc)
                            methods, names = facts.methods[method_name]
                            pairs[(loc.order, method_name)] = methods
                            size += facts.method_bytes[method_name]
                            grown |= names
        fresh = grown - seen
        seen |= fresh
    return chosen, pairs, with_impls, False


def _method_stubs(decl, file, index, chosen, pairs, with_impls) -> tuple[set[ImplKey], dict[ImplKey, dict[int, Located]]]:
    """The impls to render whole (trait impls of needed types), and the others with the methods
    to stub in each (an impl may be wanted with none)."""
    whole: set[ImplKey] = set()
    for loc in chosen.values():
        if loc.order in with_impls:
            whole.update(index.type_facts(loc).trait_impls)
    partial: dict[ImplKey, dict[int, Located]] = {}
    for methods in pairs.values():
        for method in methods:
            if method.impl_key not in whole:
                partial.setdefault(method.impl_key, {})[method.order] = method
    if decl.kind == "impl":
        own = (file, (decl.item_start, decl.end_byte))  # the declaration is this impl
        whole.discard(own)
        partial.pop(own, None)
    elif decl.impl_key is not None:
        own = (file, decl.impl_key)
        if own in whole:
            whole.discard(own)
            partial[own] = {m.order: m for m in index.members.get(own, [])}
        for order in [o for o, m in partial.get(own, {}).items() if m.item is decl]:
            del partial[own][order]
    return whole, partial


def _render(decl, file, index, chosen, pairs, with_impls) -> Context:
    whole, partial = _method_stubs(decl, file, index, chosen, pairs, with_impls)
    files = frozenset([file, *[loc.file for loc in chosen.values()], *[f for f, _ in whole], *[f for f, _ in partial]])
    parts = list(index.uses_of(files))
    by_group: dict[str, list[str]] = {group: [] for group in GROUPS}
    for order in sorted(chosen):
        item = chosen[order].item
        kind = item.kind
        by_group["type" if kind in TYPE_KINDS else "value" if kind in ("const", "static") else kind].append(item.stub)
    for group in GROUPS:
        parts += by_group[group]
    impl_order, impls_by_key = index.impl_order, index.impl_at
    own_key = (file, decl.impl_key) if decl.impl_key else None
    for key in sorted([*whole, *partial], key=lambda k: impl_order.get(k, 0)):
        if key == own_key and decl.trait_name:
            continue  # rendered around the declaration itself
        impl = impls_by_key.get(key)
        if impl is None:
            continue
        if key in whole:
            parts.append(index.whole_impl_block(key))
            continue
        methods = partial[key]
        if methods or impl.item.trait_name is not None:
            parts.append(index.impl_block(key, list(methods.values())))
    head, tail = "", ""
    if decl.kind == "method" and decl.impl_header:
        siblings = ""
        if decl.trait_name and own_key in partial:
            own = partial[own_key]
            siblings = "".join(indent(own[o].item.stub) + "\n" for o in sorted(own))  # a few per method
        head, tail = f"{decl.impl_header} {{\n{siblings}", "}"
    elif decl.kind == "method" and decl.trait_name:  # a provided method inside its trait
        trait = index.pick(decl.trait_name, decl.module_path, decl)
        if trait is not None:
            parts = [p for p in parts if p != trait.item.stub]
            head, tail = _trait_wrapper(trait.item, decl)
    text = "\n\n".join(parts) + ("\n\n" if parts else "")
    refs = sorted({loc.item.name for loc in chosen.values()})
    return Context(text=text, wrapper_head=head, wrapper_tail=tail, references=refs)


def _trait_wrapper(trait: RustItem, method: RustItem) -> tuple[str, str]:
    return trait_wrapper(trait.stub, method.name)  # by syntax node, never by line
