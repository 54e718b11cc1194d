"""Context for a Rust declaration: the `use` lines and the same-crate items it references, as
stubs (signatures with `todo!()` bodies, whole type definitions), so that the declaration
placed after its context is a standalone file that compiles on its own. Later stages put a
regenerated answer in the same place and check it quickly, in batches."""
from __future__ import annotations

from dataclasses import dataclass

from .rust import TYPE_KINDS, RustItem
from .rust_index import CrateIndex, ImplKey, Located, base_name, indent

__all__ = ["Context", "CrateIndex", "Located", "base_name", "build_context"]
GROUPS = ("macro", "type", "value", "fn")  # the order stubs appear in a context


@dataclass
class Context:
    text: str  # everything before the declaration
    wrapper_head: str  # for methods: `impl ... {` plus required sibling stubs; else ""
    wrapper_tail: str  # "}" for methods
    references: list[str]


def build_context(decl: RustItem, file: str, index: CrateIndex) -> Context:
    """The least set of items closed under these rules, from the names the declaration uses:
    a used name brings its item (same module first), whose stub's names are then used too; a
    needed type brings its trait impls whole (every required method, e.g. Display), and those of
    its methods whose name is used. The declaration itself is never its own context."""
    chosen, pairs = _closure(decl, index)
    return _render(decl, file, index, chosen, pairs)


def _closure(decl: RustItem, index: CrateIndex) -> tuple[dict[int, Located], dict]:
    """Rounds over the names new in the last round. Whatever a declaration excludes (itself, its
    own impl) only ever adds names it already uses, so names are grown without those checks and
    the exclusions are applied when rendering."""
    module = decl.module_path
    seen = set(decl.uses)
    seen.update((base_name(decl.self_type) or "", decl.trait_name or ""))
    fresh = set(seen)
    chosen: dict[int, Located] = {}  # by crate order
    types: dict[str, list[Located]] = {}  # the chosen types, by name
    pairs: dict[tuple[int, str], tuple[Located, ...]] = {}  # (type order, method name) -> its methods
    while fresh:
        grown: set[str] = set()
        for name in fresh & index.named.keys():
            loc = index.pick(name, module, decl if name == decl.name else None)
            if loc is None or loc.order in chosen:
                continue
            chosen[loc.order] = loc
            grown |= loc.item.uses if loc.item.kind in ("const", "static") else loc.item.signature_uses
            if loc.item.kind in TYPE_KINDS:
                types.setdefault(loc.item.name, []).append(loc)
                facts = index.type_facts(loc)
                grown |= facts.trait_impl_names
                for method_name in facts.methods.keys() & seen:
                    methods, names = facts.methods[method_name]
                    pairs[(loc.order, method_name)] = methods
                    grown |= names
        for method_name in fresh & index.method_owners.keys():
            for owner in index.method_owners[method_name] & types.keys():
                for loc in types[owner]:
                    if (loc.order, method_name) not in pairs:
                        methods, names = index.type_facts(loc).methods[method_name]
                        pairs[(loc.order, method_name)] = methods
                        grown |= names
        fresh = grown - seen
        seen |= fresh
    return chosen, pairs


def _method_stubs(decl, file, index, chosen, pairs) -> dict[ImplKey, dict[int, Located]]:
    """Impl -> the methods to stub in it (an impl may be wanted with none)."""
    stubs: dict[ImplKey, dict[int, Located]] = {}
    for loc in chosen.values():
        if loc.item.kind in TYPE_KINDS:
            for key in index.type_facts(loc).trait_impls:
                stubs[key] = {m.order: m for m in index.members.get(key, [])}
    for methods in pairs.values():
        for method in methods:
            stubs.setdefault(method.impl_key, {})[method.order] = method
    if decl.kind == "impl":
        stubs.pop((file, (decl.item_start, decl.end_byte)), None)  # the declaration is this impl
    elif decl.impl_key is not None and (file, decl.impl_key) in stubs:
        own = stubs[(file, decl.impl_key)]
        for order in [o for o, m in own.items() if m.item is decl]:
            del own[order]
    return stubs


def _render(decl, file, index, chosen, pairs) -> Context:
    method_stubs = _method_stubs(decl, file, index, chosen, pairs)
    files = frozenset({file, *(loc.file for loc in chosen.values()), *(f for f, _ in method_stubs)})
    locs = sorted(chosen.values(), key=lambda loc: loc.order)
    parts = list(index.uses_of(files))
    by_group: dict[str, list[str]] = {group: [] for group in GROUPS}
    for loc in locs:
        kind = loc.item.kind
        by_group["type" if kind in TYPE_KINDS else "value" if kind in ("const", "static") else kind].append(loc.item.stub)
    for group in GROUPS:
        parts += by_group[group]
    impls_by_key = index.impl_at
    own_key = (file, decl.impl_key) if decl.impl_key else None
    for key in sorted(method_stubs, key=lambda k: impls_by_key[k].order if k in impls_by_key else 0):
        if key == own_key and decl.trait_name:
            continue  # rendered around the declaration itself
        impl = impls_by_key.get(key)
        methods = method_stubs[key]
        if impl is None or (not methods and impl.item.trait_name is None):
            continue
        parts.append(index.impl_block(key, list(methods.values())))
    head, tail = "", ""
    if decl.kind == "method" and decl.impl_header:
        siblings = ""
        if decl.trait_name and own_key in method_stubs:
            own = method_stubs[own_key]
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
    lines = trait.stub.splitlines()
    kept = [line for line in lines[1:-1] if f"fn {method.name}" not in line]
    return lines[0] + "\n" + "".join(line + "\n" for line in kept), "}"
