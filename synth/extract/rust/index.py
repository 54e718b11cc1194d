"""The items of one Rust crate, indexed once for context building: by name (and module), methods
by owner type, trait impls by type, and what each item's stub needs. Facts that do not depend on
the declaration (what a type brings along, rendered impl blocks, kept `use` lines) are computed
on first use and kept, so each declaration's context costs what its own references cost."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from synth.extract.rust.item import TYPE_KINDS, RustItem

FIRST_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NAMED_KINDS = TYPE_KINDS | {"fn", "const", "static", "macro"}
ImplKey = tuple[str, tuple[int, int]]  # (file, span of the impl)


def base_name(type_text: str | None) -> str | None:
    """`&'a mut Foo<T>` -> `Foo`; `crate::m::Foo` -> `Foo`."""
    if not type_text:
        return None
    head = type_text.split("<", 1)[0]
    names = [n for n in FIRST_IDENT.findall(head) if n not in ("mut", "dyn", "impl")]
    return names[-1] if names else None


class Located:
    """An item where it is in the crate, with what context building asks of it precomputed."""

    __slots__ = ("item", "file", "order", "impl_key", "names", "is_type")

    def __init__(self, item: RustItem, file: str, order: int):
        self.item, self.file = item, file
        self.order = order  # position in the crate (files in order, items in order): rendering is deterministic
        # a method's impl, or an impl itself
        self.impl_key: ImplKey = (file, (item.item_start, item.end_byte) if item.kind == "impl" else item.impl_key)
        self.names = item.uses if item.kind in ("const", "static") else item.signature_uses  # its stub needs
        self.is_type = item.kind in TYPE_KINDS


@dataclass
class TypeFacts:
    """What a needed type brings into a context, whoever needs it."""

    trait_impls: tuple[ImplKey, ...]  # its `impl Trait for Type` blocks, each whole
    trait_impl_names: frozenset[str]  # the names their stubs use
    methods: dict[str, tuple[tuple[Located, ...], frozenset[str]]]  # method name -> methods, their names
    impl_bytes: int = 0  # the size of its trait impls, whole
    method_bytes: dict[str, int] = field(default_factory=dict)  # method name -> the size of its methods' stubs


class CrateIndex:
    """All non-test items of one crate, by name (and by name and module, for crates that reuse names)."""

    def __init__(self):
        self.named: dict[str, list[Located]] = {}  # types, free fns, consts/statics, macros
        self.named_in: dict[tuple[str, str], list[Located]] = {}  # (name, module)
        self.methods: dict[tuple[str, str], list[Located]] = {}  # (owner type, method name)
        self.methods_in: dict[tuple[str, str, str], list[Located]] = {}  # (owner, method name, module)
        self.method_names: dict[str, set[str]] = {}  # owner type -> its method names
        self.method_owners: dict[str, set[str]] = {}  # method name -> owner types having it
        self.trait_impls: dict[str, list[Located]] = {}  # owner type -> `impl Trait for Type`
        self.trait_impls_in: dict[tuple[str, str], list[Located]] = {}  # (owner type, module)
        self.members: dict[ImplKey, list[Located]] = {}  # impl -> its methods
        self.impl_at: dict[ImplKey, Located] = {}
        self.use_lines: dict[str, list[str]] = {}
        self.modules: set[str] = set()
        self._order = 0
        self._indented: dict[int, str] = {}
        self._picks: dict[str, dict[str, Located | None]] = {}  # module -> name -> pick
        self._type_facts: dict[int, TypeFacts] = {}
        self._blocks: dict[ImplKey, str] = {}
        self._uses_of: dict[frozenset[str], list[str]] = {}
        self._names: dict[int, frozenset[str]] = {}

    def add_file(self, rel: str, items: list[RustItem], use_lines: list[str]) -> None:
        self.use_lines[rel] = use_lines
        for cache in (self._picks, self._type_facts, self._blocks, self._uses_of, self._names):
            cache.clear()  # a new file can change any of them
        for cached in ("kept_uses", "named_names", "method_name_set", "relevant", "impl_order"):
            self.__dict__.pop(cached, None)
        for item in items:
            self.modules.update(item.module_path.split("::"))
            if item.is_test:
                continue
            loc = Located(item, rel, self._order)
            self._order += 1
            if item.kind in NAMED_KINDS:
                self.named.setdefault(item.name, []).append(loc)
                self.named_in.setdefault((item.name, item.module_path), []).append(loc)
            elif item.kind == "method" and item.impl_key is not None:
                owner = base_name(item.self_type) or ""
                self.methods.setdefault((owner, item.name), []).append(loc)
                self.methods_in.setdefault((owner, item.name, item.module_path), []).append(loc)
                self.method_names.setdefault(owner, set()).add(item.name)
                self.method_owners.setdefault(item.name, set()).add(owner)
                self.members.setdefault((rel, item.impl_key), []).append(loc)
            elif item.kind == "impl":
                self.impl_at[loc.impl_key] = loc
                if item.trait_name is not None:
                    owner = base_name(item.name) or item.name
                    self.trait_impls.setdefault(owner, []).append(loc)
                    self.trait_impls_in.setdefault((owner, item.module_path), []).append(loc)

    @property
    def known(self) -> set[str]:
        return self.named.keys()

    @functools.cached_property
    def named_names(self) -> frozenset[str]:
        return frozenset(self.named)

    @functools.cached_property
    def method_name_set(self) -> frozenset[str]:
        return frozenset(self.method_owners)

    @functools.cached_property
    def relevant(self) -> frozenset[str]:
        """The names that can bring something into a context (an item's or a method's); the
        others (locals, fields, std names) are dropped from every name set up front."""
        return self.named_names | self.method_name_set

    def names_of(self, loc: Located) -> frozenset[str]:
        """The relevant names `loc`'s stub uses."""
        names = self._names.get(loc.order)
        if names is None:
            names = self._names[loc.order] = frozenset(loc.names & self.relevant)
        return names

    @functools.cached_property
    def impl_order(self) -> dict[ImplKey, int]:
        return {key: loc.order for key, loc in self.impl_at.items()}

    @functools.cached_property
    def kept_uses(self) -> dict[str, list[str]]:
        """Per file, the `use` lines a standalone stub keeps (computed once all files are in)."""
        return {f: [u for u in lines if _keep_use(u, self.modules)] for f, lines in self.use_lines.items()}

    def uses_of(self, files: frozenset[str]) -> list[str]:
        """The kept `use` lines of `files`, in file order, each once."""
        found = self._uses_of.get(files)
        if found is None:
            lines: dict[str, None] = {}
            for f in sorted(files):
                lines.update(dict.fromkeys(self.kept_uses.get(f, [])))
            found = self._uses_of[files] = list(lines)
        return found

    def indented_stub(self, loc: Located) -> str:
        cached = self._indented.get(loc.order)
        if cached is None:
            cached = self._indented[loc.order] = indent(loc.item.stub)
        return cached

    # Of several same-named candidates, those in the type's own module, else all of them.
    def near_trait_impls(self, owner: str, module: str) -> list[Located]:
        return self.trait_impls_in.get((owner, module)) or self.trait_impls.get(owner, [])

    def near_methods(self, owner: str, name: str, module: str) -> list[Located]:
        return self.methods_in.get((owner, name, module)) or self.methods.get((owner, name), [])

    def picks(self, module: str) -> dict[str, Located | None]:
        """The picks made so far for declarations in `module` (fill with `pick`)."""
        return self._picks.setdefault(module, {})

    def pick(self, name: str, module: str, exclude: RustItem | None = None) -> Located | None:
        """Same module first, else the first in crate order; never `exclude` (the declaration)."""
        if exclude is None:
            picks = self.picks(module)
            if name not in picks:
                picks[name] = self.pick(name, module, _NOTHING)
            return picks[name]
        for loc in self.named_in.get((name, module), []):
            if loc.item is not exclude:
                return loc
        for loc in self.named.get(name, []):
            if loc.item is not exclude:
                return loc
        return None

    def type_facts(self, loc: Located) -> TypeFacts:
        facts = self._type_facts.get(loc.order)
        if facts is None:
            name, module = loc.item.name, loc.item.module_path
            impls = self.near_trait_impls(name, module)
            keys = tuple(impl.impl_key for impl in impls)
            names = set().union(*(impl.item.signature_uses for impl in impls),
                                *(m.item.signature_uses for key in keys for m in self.members.get(key, [])))
            methods = {}
            for method_name in self.method_names.get(name, ()):
                found = tuple(self.near_methods(name, method_name, module))
                methods[method_name] = found, frozenset().union(*(m.item.signature_uses for m in found)) & self.relevant
            facts = self._type_facts[loc.order] = TypeFacts(
                keys, frozenset(names & self.relevant), methods, sum(len(self.whole_impl_block(key)) for key in keys),
                {name: sum(len(m.item.stub) for m in found) for name, (found, _) in methods.items()})
        return facts

    def whole_impl_block(self, key: ImplKey) -> str:
        block = self._blocks.get(key)
        if block is None:
            block = self._blocks[key] = self.impl_block(key, self.members.get(key, []))
        return block

    def impl_block(self, key: ImplKey, methods: list[Located]) -> str:
        """`impl ... {` with the stubs of `methods` (in crate order) `}`."""
        signature = self.impl_at[key].item.signature
        body = "\n".join(self.indented_stub(loc) for loc in sorted(methods, key=lambda loc: loc.order))
        return f"{signature} {{\n{body}\n}}" if body else f"{signature} {{}}"


_NOTHING = object()  # excludes nothing: no item is this


def indent(text: str) -> str:
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
