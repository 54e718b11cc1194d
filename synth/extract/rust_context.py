"""Context for a Rust declaration: the `use` lines and the same-crate items it references, as
stubs (signatures with `todo!()` bodies, whole type definitions), so that the declaration
placed after its context is a standalone file that compiles on its own. Later stages put a
regenerated answer in the same place and check it quickly, in batches."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .rust import TYPE_KINDS, RustItem
from .rust_owner import trait_wrapper

FIRST_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
STD_ROOTS = {"std", "core", "alloc"}


def base_name(type_text: str | None) -> str | None:
    """`&'a mut Foo<T>` -> `Foo`; `crate::m::Foo` -> `Foo`."""
    if not type_text:
        return None
    head = type_text.split("<", 1)[0]
    names = [n for n in FIRST_IDENT.findall(head) if n not in ("mut", "dyn", "impl")]
    return names[-1] if names else None


@dataclass
class Located:
    item: RustItem
    file: str
    order: int  # position in the crate (files in order, items in order): rendering is deterministic


class CrateIndex:
    """All non-test items of one crate, by name (and by name and module, for crates that reuse names)."""

    def __init__(self):
        self.named: dict[str, list[Located]] = {}  # types, free fns, consts/statics, macros
        self.named_in: dict[tuple[str, str], list[Located]] = {}  # (name, module)
        self.methods: dict[tuple[str, str], list[Located]] = {}  # (owner type, method name)
        self.method_names: dict[str, set[str]] = {}  # owner type -> its method names
        self.trait_impls: dict[str, list[Located]] = {}  # owner type -> `impl Trait for Type`
        self.members: dict[tuple[str, tuple[int, int]], list[Located]] = {}  # (file, impl span) -> methods
        self.impl_at: dict[tuple[str, tuple[int, int]], Located] = {}
        self.use_lines: dict[str, list[str]] = {}
        self.modules: set[str] = set()
        self._order = 0
        self._indented: dict[int, str] = {}

    def add_file(self, rel: str, items: list[RustItem], use_lines: list[str]) -> None:
        self.use_lines[rel] = use_lines
        self.__dict__.pop("kept_uses", None)
        for item in items:
            self.modules.update(item.module_path.split("::"))
            if item.is_test:
                continue
            loc = Located(item, rel, self._order)
            self._order += 1
            if item.kind in TYPE_KINDS or item.kind in ("fn", "const", "static", "macro"):
                self.named.setdefault(item.name, []).append(loc)
                self.named_in.setdefault((item.name, item.module_path), []).append(loc)
            elif item.kind == "method" and item.impl_key is not None:
                owner = base_name(item.self_type) or ""
                self.methods.setdefault((owner, item.name), []).append(loc)
                self.method_names.setdefault(owner, set()).add(item.name)
                self.members.setdefault((rel, item.impl_key), []).append(loc)
            elif item.kind == "impl":
                self.impl_at[(rel, (item.item_start, item.end_byte))] = loc
                if item.trait_name is not None:
                    self.trait_impls.setdefault(base_name(item.name) or item.name, []).append(loc)

    @property
    def known(self) -> set[str]:
        return self.named.keys()

    @functools.cached_property
    def kept_uses(self) -> dict[str, list[str]]:
        """Per file, the `use` lines a standalone stub keeps (computed once all files are in)."""
        return {f: [u for u in lines if _keep_use(u, self.modules)] for f, lines in self.use_lines.items()}

    def indented_stub(self, loc: Located) -> str:
        cached = self._indented.get(loc.order)
        if cached is None:
            cached = self._indented[loc.order] = _indent(loc.item.stub)
        return cached

    def pick(self, name: str, module: str, exclude: RustItem) -> Located | None:
        """Same module first, else the first in crate order; never the declaration itself."""
        for loc in self.named_in.get((name, module), []):
            if loc.item is not exclude:
                return loc
        for loc in self.named.get(name, []):
            if loc.item is not exclude:
                return loc
        return None


def _near(locs: list[Located], module: str) -> list[Located]:
    """Of several same-named candidates, those in `module` (the type's own), else all."""
    same = [loc for loc in locs if loc.item.module_path == module]
    return same or locs


@dataclass
class Context:
    text: str  # everything before the declaration
    wrapper_head: str  # for methods: `impl ... {` plus required sibling stubs; else ""
    wrapper_tail: str  # "}" for methods
    references: list[str]


def build_context(decl: RustItem, file: str, index: CrateIndex) -> Context:
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


def _trait_wrapper(trait: RustItem, method: RustItem) -> tuple[str, str]:
    return trait_wrapper(trait.stub, method.name)  # by syntax node, never by line


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else line for line in text.splitlines())


def _keep_use(line: str, crate_modules: set[str]) -> bool:
    """std/core/alloc and external crates stay; in-crate paths go (their items are in the stub)."""
    path = line.split("use", 1)[1].strip().lstrip(":")
    root = FIRST_IDENT.match(path)
    if root is None:
        return False
    name = root.group(0)
    if name in ("crate", "self", "super") or name in crate_modules:
        return False
    return True
