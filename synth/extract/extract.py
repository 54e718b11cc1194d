"""`synth extract`: files -> declarations, with a report of everything skipped and why."""
from __future__ import annotations

import os
import re
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .clean import strip_metadata
from .corpus import Corpus, Skip, collect
from .model import Declaration, content_hash, declaration_id
from .rust import module_path_for, parse_rust
from .rust_owner import method_owner_block
from .rust_context import CrateIndex, build_context
from .vox import load_grammar, parse_vox, parse_vox_with_grammar


@dataclass
class ExtractOptions:
    include_tests: bool = False  # test functions and `#[cfg(test)]` modules
    max_bytes: int = 1_000_000
    vox_grammar: str | None = None  # path to a compiled tree-sitter grammar for Vox
    with_context: bool = True
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)


@dataclass
class ExtractResult:
    declarations: list[Declaration] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    files_read: int = 0
    bytes_read: int = 0
    dropped: Counter = field(default_factory=Counter)  # declarations left out, by reason

    def summary(self) -> dict:
        return {
            "files_read": self.files_read,
            "bytes_read": self.bytes_read,
            "files_skipped": len(self.skipped),
            "skipped_by_reason": dict(Counter(_reason_kind(s.reason) for s in self.skipped)),
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "declarations": len(self.declarations),
            "by_lang_kind": dict(sorted(Counter(f"{d.lang}:{d.kind}" for d in self.declarations).items())),
            "declarations_left_out": dict(self.dropped),
            "near_parse_error": sum(d.near_parse_error for d in self.declarations),
            "retired": sum(d.retired for d in self.declarations),
        }


def _reason_kind(reason: str) -> str:
    return reason.split(":")[0].split(" (")[0]


def crate_root_of(path: Path) -> Path | None:
    for parent in path.parents:
        if (parent / "Cargo.toml").exists():
            return parent
    return None


def extract_paths(paths: list[str | Path], options: ExtractOptions | None = None) -> ExtractResult:
    """Declarations of every Rust and Vox file under `paths`. Each crate (or loose file) is one
    unit of work; with `options.jobs` > 1 units run in a process pool. Output order is stable."""
    options = options or ExtractOptions()
    if options.vox_grammar:
        load_grammar(options.vox_grammar)  # fail before any work if the grammar cannot be used
    corpus: Corpus = collect(paths, max_bytes=options.max_bytes, include_tests=options.include_tests)
    result = ExtractResult(skipped=list(corpus.skipped))
    units: dict[str, list[tuple[str, str, bytes, str | None]]] = {}
    for source in corpus.files:
        result.files_read += 1
        result.bytes_read += len(source.data)
        if source.lang == "rust":
            crate_root = crate_root_of(source.path)
            key = str(crate_root) if crate_root else f"file:{source.rel}"
            if crate_root and source.test_code:  # (--include-tests) apart from the library it tests
                key = f"tests:{crate_root}"
            rel_in_crate = str(source.path.relative_to(crate_root)) if crate_root else None
        else:
            key, rel_in_crate = f"vox:{source.rel}", None
        units.setdefault(key, []).append((source.rel, source.lang, source.data, rel_in_crate))
    jobs = [(key, files, options) for key, files in units.items()]
    if options.jobs > 1 and len(jobs) > 1:
        # Workers send declarations back as JSON text: far cheaper to move than pickled models.
        with ProcessPoolExecutor(max_workers=options.jobs) as pool:
            outputs = list(pool.map(_unit_as_json, jobs, chunksize=max(1, len(jobs) // (8 * options.jobs))))
        for out in outputs:
            out.declarations = [Declaration.model_validate_json(line) for line in out.declarations]
    else:
        outputs = [_unit(job) for job in jobs]
    for out in outputs:
        result.declarations += out.declarations
        result.dropped.update(out.dropped)
        result.skipped += out.skipped
    result.declarations.sort(key=lambda d: (d.path, d.start_byte, d.end_byte))
    return result


@dataclass
class _UnitOutput:
    declarations: list = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)
    skipped: list = field(default_factory=list)


def _unit_as_json(job) -> _UnitOutput:
    out = _unit(job)
    out.declarations = [d.model_dump_json() for d in out.declarations]
    return out


def _unit(job) -> _UnitOutput:
    """One crate (its files share a name index), one loose Rust file, or one Vox file."""
    key, files, options = job
    out = _UnitOutput()
    if key.startswith("vox:"):
        vox_language = load_grammar(options.vox_grammar) if options.vox_grammar else None
        for rel, _, data, _ in files:
            _vox_file(rel, data, vox_language, out, options)
        return out
    parsed_files = []
    for rel, _, data, rel_in_crate in files:
        parsed = parse_rust(data, module_path_for(rel_in_crate, rel))
        if parsed.dropped_broken:
            out.dropped["contains a parse error"] += parsed.dropped_broken
        if parsed.has_error and not parsed.items:
            out.skipped.append(Skip(rel, "does not parse (no clean declaration)"))
            continue
        parsed_files.append((rel, rel_in_crate, parsed))
    index = CrateIndex()
    for rel, _, parsed in parsed_files:
        index.add_file(rel, parsed.items, parsed.use_lines)
    for rel, rel_in_crate, parsed in parsed_files:
        for item in parsed.items:
            if item.is_test and not options.include_tests:
                out.dropped["test-only"] += 1
                continue
            decl = _rust_declaration(item, rel, key)
            decl.is_test = decl.is_test or key.startswith("tests:")
            decl.crate_path = rel_in_crate
            if options.with_context:
                ctx = build_context(item, rel, index)
                decl.context, decl.references = ctx.text, ctx.references
                decl.wrapper_head, decl.wrapper_tail = ctx.wrapper_head, ctx.wrapper_tail
                decl.owner = method_owner_block(decl)
            out.declarations.append(decl)
    return out


def _rust_declaration(item, rel: str, crate_key: str) -> Declaration:
    digest = content_hash("rust", item.kind, item.name, item.text)
    return Declaration(
        id=declaration_id(rel, item.kind, item.name, item.start_byte, digest), lang="rust", kind=item.kind,
        name=item.name, path=rel, start_byte=item.start_byte, end_byte=item.end_byte,
        start_line=item.start_line, end_line=item.end_line, text=item.text, clean_text=strip_metadata(item.text),
        doc=item.doc, signature=item.signature, body=item.body, hash=digest, module_path=item.module_path,
        attributes=item.attributes, self_type=item.self_type, trait_name=item.trait_name, params=item.params,
        return_type=item.return_type, near_parse_error=item.near_parse_error, is_test=item.is_test,
        crate_root=None if crate_key.startswith(("file:", "tests:")) else crate_key,  # test code: never in-crate
    )


def _vox_file(rel: str, data: bytes, language, result: _UnitOutput, options: ExtractOptions) -> None:
    parsed = parse_vox_with_grammar(data, language) if language is not None else parse_vox(data.decode())
    if parsed.errors and not parsed.items:
        result.skipped.append(Skip(rel, f"does not parse: {parsed.errors[0]}"))
        return
    if parsed.errors:
        result.dropped["rest of file after a Vox parse error"] += 1
    if parsed.unnamed:
        result.dropped["Vox declaration without a name"] += len(parsed.unnamed)
    for item in parsed.items:
        is_test = any(d.startswith("@test") for d in item.decorators)
        if is_test and not options.include_tests:
            result.dropped["test-only"] += 1
            continue
        digest = content_hash("vox", item.kind, item.name, item.text)
        result.declarations.append(Declaration(
            id=declaration_id(rel, item.kind, item.name, item.start_byte, digest), lang="vox",
            kind=item.kind, name=item.name, path=rel, start_byte=item.start_byte, end_byte=item.end_byte,
            start_line=item.start_line, end_line=item.end_line, text=item.text, clean_text=strip_metadata(item.text),
            doc=item.doc, signature=item.signature, body=item.body, hash=digest, retired=item.retired,
            attributes=item.decorators, params=item.params, return_type=item.return_type,
            near_parse_error=item.near_parse_error, is_test=is_test, context=_vox_context(parsed.items, item),
        ))


def _vox_context(items, item) -> str:
    """The file's other declarations this one mentions, whole (types and tables first): placed
    before the declaration they make a file that `vox check` can check on its own."""
    mentioned = [o for o in items if o is not item and o.name and re.search(rf"\b{re.escape(o.name)}\b", item.text)]
    mentioned.sort(key=lambda o: (o.kind not in ("type", "table"), o.start_byte))
    return "".join(strip_metadata(o.text).strip() + "\n\n" for o in mentioned)
