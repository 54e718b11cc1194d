"""One part of an extraction (plan.py): read its files, parse them, index each crate once, and
write its declarations as JSONL lines in output order (path, then span), a file at a time, so
that memory holds one crate's index and one file's lines, never the declarations of a corpus."""
from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import IO

from synth.extract.clean import strip_metadata
from synth.extract.corpus import Skip, SourceFile, read_source
from synth.extract.model import Declaration, content_hash, declaration_id
from synth.extract.plan import AFTER_LISTING, Part, Unit
from synth.extract.rust.parse import module_path_for, parse_rust
from synth.extract.rust.context import CrateIndex, build_context
from synth.extract.rust.owner import method_owner_block
from synth.extract.vox import load_grammar, parse_vox, parse_vox_with_grammar


REPARSE_FACTOR = 4  # a part runs at least this many times its reading and parsing before it shards


@dataclass
class PartOutput:
    declarations: int = 0
    by_lang_kind: Counter = field(default_factory=Counter)
    near_parse_error: int = 0
    retired: int = 0
    dropped: Counter = field(default_factory=Counter)  # declarations left out, by reason
    skipped: list[tuple[tuple, Skip]] = field(default_factory=list)  # (report order, skip)
    files_read: int = 0
    bytes_read: int = 0
    done: list[str] | None = None  # stopped early: the paths written (the rest is still to do)


def run_part(part: Part, options, out: IO[str], budget_s: float | None = None,
             reparse_factor: float = REPARSE_FACTOR) -> PartOutput:
    """Write the part's declarations to `out`. With a budget (CPU seconds), stop after the first
    file that ends past it (a slow crate is then finished in shards by other workers); as each
    shard reads and parses the whole crate again, the budget is at least REPARSE_FACTOR times what that took."""
    started = time.process_time()
    result = PartOutput()
    emit = set(part.emit) if part.emit is not None else None
    makers = [_Unit(unit, options, emit, result) for unit in part.units]
    if budget_s is not None:
        budget_s = max(budget_s, reparse_factor * (time.process_time() - started))
    rels = sorted({rel for maker in makers for rel in maker.counts})
    written: list[str] = []
    for rel in rels:
        lines = [line for maker in makers for line in maker.declarations(rel)]
        lines.sort(key=lambda line: line[0])  # stable: equal spans keep their order
        out.writelines(text for _, text in lines)
        written.append(rel)
        if budget_s is not None and time.process_time() - started > budget_s and len(written) < len(rels):
            result.done = written
            break
    return result


class _Unit:
    """One unit's files, read and (for a crate) indexed; declarations made per file on demand."""

    def __init__(self, unit: Unit, options, emit: set[str] | None, result: PartOutput):
        self.unit, self.options, self.result = unit, options, result
        self.files: dict[str, list] = {}  # emitted path -> what each of its sources parsed to
        self.counts: dict[str, PartOutput] = {}  # emitted path -> what it adds to the report
        self.index = CrateIndex()
        self.vox = load_grammar(options.vox_grammar) if options.vox_grammar and not unit.is_crate else None
        for source in unit.sources:
            counts = self.counts.setdefault(source.rel, PartOutput()) if emit is None or source.rel in emit else None
            read = read_source(source.path, source.rel, source.lang, options.max_bytes)
            if isinstance(read, Skip):
                if counts:
                    counts.skipped.append(((source.seq, 1, 0), read))
                continue
            if counts:
                counts.files_read += 1
                counts.bytes_read += len(read.data)
            parsed = self._parse(source, read, counts)
            if parsed is not None and counts:
                self.files.setdefault(source.rel, []).append((source, parsed))

    def _parse(self, source, read: SourceFile, counts: PartOutput | None):
        if source.lang != "rust":
            return read
        parsed = parse_rust(read.data, module_path_for(source.rel_in_crate, source.rel))
        if counts and parsed.dropped_broken:
            counts.dropped["contains a parse error"] += parsed.dropped_broken
        if parsed.has_error and not parsed.items:
            if counts:
                report_order = (AFTER_LISTING + 1, self.unit.index, source.seq)
                counts.skipped.append((report_order, Skip(source.rel, "does not parse (no clean declaration)")))
            return None
        self.index.add_file(source.rel, parsed.items, parsed.use_lines)
        return parsed

    def declarations(self, rel: str) -> list[tuple[tuple[int, int], str]]:
        """((start, end), JSON line) of each declaration of the file at `rel`, in file order; the
        file's reads, skips and drops are counted now (a part may stop before some files)."""
        _merge(self.result, self.counts.get(rel, PartOutput()))
        out = []
        for source, parsed in self.files.get(rel, []):
            decls = self._rust(source, parsed) if source.lang == "rust" else self._vox(source, parsed)
            for decl in decls:
                self.result.declarations += 1
                self.result.by_lang_kind[f"{decl.lang}:{decl.kind}"] += 1
                self.result.near_parse_error += decl.near_parse_error
                self.result.retired += decl.retired
                out.append(((decl.start_byte, decl.end_byte), decl.model_dump_json() + "\n"))
        return out

    def _rust(self, source, parsed):
        for item in parsed.items:
            if item.is_test and not self.options.include_tests:
                self.result.dropped["test-only"] += 1
                continue
            decl = _rust_declaration(item, source.rel, self.unit.key)
            decl.is_test = decl.is_test or self.unit.key.startswith("tests:")
            decl.crate_path = source.rel_in_crate
            if self.options.with_context:
                ctx = build_context(item, source.rel, self.index, self.options.max_context_bytes)
                decl.context, decl.references = ctx.text, ctx.references
                decl.context_truncated = ctx.truncated
                decl.wrapper_head, decl.wrapper_tail = ctx.wrapper_head, ctx.wrapper_tail
                decl.owner = method_owner_block(decl)
            yield decl

    def _vox(self, source, read: SourceFile):
        parsed = parse_vox_with_grammar(read.data, self.vox) if self.vox is not None else parse_vox(read.text)
        if parsed.errors and not parsed.items:
            report_order = (AFTER_LISTING + 1, self.unit.index, source.seq)
            self.result.skipped.append((report_order, Skip(source.rel, f"does not parse: {parsed.errors[0]}")))
            return
        if parsed.errors:
            self.result.dropped["rest of file after a Vox parse error"] += 1
        if parsed.unnamed:
            self.result.dropped["Vox declaration without a name"] += len(parsed.unnamed)
        for item in parsed.items:
            is_test = any(d.startswith("@test") for d in item.decorators)
            if is_test and not self.options.include_tests:
                self.result.dropped["test-only"] += 1
                continue
            digest = content_hash("vox", item.kind, item.name, item.text)
            yield Declaration(
                id=declaration_id(source.rel, item.kind, item.name, item.start_byte, digest), lang="vox",
                kind=item.kind, name=item.name, path=source.rel, start_byte=item.start_byte, end_byte=item.end_byte,
                start_line=item.start_line, end_line=item.end_line, text=item.text,
                clean_text=strip_metadata(item.text), doc=item.doc, signature=item.signature, body=item.body,
                hash=digest, retired=item.retired, attributes=item.decorators, params=item.params,
                return_type=item.return_type, near_parse_error=item.near_parse_error, is_test=is_test,
                context=_vox_context(parsed.items, item),
            )


def _merge(into: PartOutput, counts: PartOutput) -> None:
    into.files_read += counts.files_read
    into.bytes_read += counts.bytes_read
    into.dropped.update(counts.dropped)
    into.skipped += counts.skipped


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


def _vox_context(items, item) -> str:
    """The file's other declarations this one mentions, whole (types and tables first): placed
    before the declaration they make a file that `vox check` can check on its own."""
    mentioned = [o for o in items if o is not item and o.name and re.search(rf"\b{re.escape(o.name)}\b", item.text)]
    mentioned.sort(key=lambda o: (o.kind not in ("type", "table"), o.start_byte))
    return "".join(strip_metadata(o.text).strip() + "\n\n" for o in mentioned)
