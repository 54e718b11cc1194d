"""The context builder as it was before it was made linear (a fixed point re-scanning every chosen
type each round): kept only as a reference that the fast builder must agree with, byte for byte."""
from __future__ import annotations

from synth.extract.rust.item import TYPE_KINDS, RustItem
from synth.extract.rust.context import Context, CrateIndex, Located, _trait_wrapper, base_name
from synth.extract.rust.index import indent as _indent


def _near(locs: list[Located], module: str) -> list[Located]:
    """Of several same-named candidates, those in `module` (the type's own), else all."""
    same = [loc for loc in locs if loc.item.module_path == module]
    return same or locs


def reference_context(decl: RustItem, file: str, index: CrateIndex) -> Context:
    """Grow the set of needed items to a fixed point: names used by the declaration, then the
    names their stubs use. A method is needed when its name is used and its type is needed;
    a trait impl of a needed type comes whole (every required method), e.g. Display."""
    module = decl.module_path
    own_span = (decl.item_start, decl.end_byte) if decl.kind == "impl" else None
    chosen: dict[int, Located] = {}  # by crate order
    method_stubs: dict[tuple[str, tuple[int, int]], set[int]] = {}  # impl -> orders of methods to stub
    names = set(decl.uses) | {base_name(decl.self_type) or "", decl.trait_name or ""}
    done: set[str] = set()
    types_done: set[int] = set()
    while names - done:
        fresh = names - done
        done |= fresh
        for name in fresh & index.known:  # the closure does not depend on the order
            loc = index.pick(name, module, decl)
            if loc is not None and loc.order not in chosen:
                chosen[loc.order] = loc
                names |= loc.item.uses if loc.item.kind in ("const", "static") else loc.item.signature_uses
        wanted: list[tuple[tuple[str, tuple[int, int]], list[Located]]] = []
        for loc in list(chosen.values()):
            if loc.item.kind not in TYPE_KINDS:
                continue
            type_name, type_module = loc.item.name, loc.item.module_path
            if loc.order not in types_done:
                types_done.add(loc.order)
                for impl in _near(index.trait_impls.get(type_name, []), type_module):
                    key = (impl.file, (impl.item.item_start, impl.item.end_byte))
                    wanted.append((key, index.members.get(key, [])))
                    names |= impl.item.signature_uses
            for name in index.method_names.get(type_name, set()) & done:
                for method in _near(index.methods.get((type_name, name), []), type_module):
                    wanted.append(((method.file, method.item.impl_key), [method]))
        for key, locs in wanted:
            if decl.kind == "impl" and key == (file, own_span):
                continue  # the declaration is this impl
            orders = method_stubs.setdefault(key, set())
            for loc in locs:
                if loc.item is not decl and loc.order not in orders:
                    orders.add(loc.order)
                    names |= loc.item.signature_uses
    return _render(decl, file, index, chosen, method_stubs)


def _render(decl, file, index, chosen, method_stubs) -> Context:
    files = {file} | {loc.file for loc in chosen.values()} | {f for f, _ in method_stubs}
    uses: list[str] = []
    for f in sorted(files):
        for line in index.kept_uses.get(f, []):
            if line not in uses:
                uses.append(line)
    locs = sorted(chosen.values(), key=lambda loc: loc.order)
    parts = [*uses] if uses else []
    for group in ("macro", "type", "value", "fn"):
        for loc in locs:
            kind = loc.item.kind
            bucket = "type" if kind in TYPE_KINDS else "value" if kind in ("const", "static") else kind
            if bucket == group:
                parts.append(loc.item.stub)
    all_methods = {loc.order: loc for key in method_stubs for loc in index.members.get(key, [])}
    impls_by_key = index.impl_at
    own_key = (file, decl.impl_key) if decl.impl_key else None
    for key in sorted(method_stubs, key=lambda k: impls_by_key[k].order if k in impls_by_key else 0):
        if key == own_key and decl.trait_name:
            continue  # rendered around the declaration itself
        impl = impls_by_key.get(key)
        orders = sorted(method_stubs[key])
        if impl is None or (not orders and impl.item.trait_name is None):
            continue
        body = "\n".join(index.indented_stub(all_methods[o]) for o in orders)
        parts.append(f"{impl.item.signature} {{\n{body}\n}}" if body else f"{impl.item.signature} {{}}")
    head, tail = "", ""
    if decl.kind == "method" and decl.impl_header:
        siblings = ""
        if decl.trait_name and own_key in method_stubs:
            others = [all_methods[o].item.stub for o in sorted(method_stubs[own_key])
                      if all_methods[o].item is not decl]
            siblings = "".join(_indent(s) + "\n" for s in others)  # a few per method
        head, tail = f"{decl.impl_header} {{\n{siblings}", "}"
    elif decl.kind == "method" and decl.trait_name:  # a provided method inside its trait
        trait = index.pick(decl.trait_name, decl.module_path, decl)
        if trait is not None:
            parts = [p for p in parts if p != trait.item.stub]
            head, tail = _trait_wrapper(trait.item, decl)
    text = "\n\n".join(parts) + ("\n\n" if parts else "")
    refs = sorted({loc.item.name for loc in chosen.values()})
    return Context(text=text, wrapper_head=head, wrapper_tail=tail, references=refs)


