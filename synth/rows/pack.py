"""The packed row format synth wrote before its row files became whole rows, zstd-compressed
(synth/rows/rowfile.py). It is still read (`read_packed`), so older run directories and
snapshots stay readable; `write_packed` makes such files for the tests that read them.

A row's context (the code around its declaration) is in its prompt, in its messages and in the
files the oracle checked (`checked_source`, `checked_broken_source`); its broken code and its
answer are there twice more; and each declaration gives several rows. Written whole, a row file
holds the context many times over. A packed row file writes each context (and the system prompt)
once, on the first row that uses it (`"@texts": {hash: text}`), as it does the original's verdict
(`"verification": {"@v": hash}`), and a text that holds it, the
broken code (`broken`) or the answer (`response`) is a list of parts naming them
(`{"@parts": ["...", {"@t": hash}, "...", {"@f": "broken"}]}`). `prompt` and `response` (the last
user and assistant turns), a `fixed` equal to `response` and a broken verdict's crate recipe equal
to the verdict's are left out; `"@packed": 1` marks the row. Every line is still one row, and
reading the file back (`read_rows`) gives the rows exactly as they were.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel

from synth.rows.jsonl import InOrder, read_jsonl, write_jsonl

MIN_SHARED = 200  # bytes: a shorter context (or system prompt) is left where it is
MIN_FIELD = 32  # characters: a shorter broken declaration or answer is not referred to
SAME = "@same"  # a value equal to another field's (which one: by key)
PACKED = "@packed"  # the mark of a packed row


def pack(row: dict, written: set[str]) -> dict:
    """`row` (a dict as Row.model_dump gives) packed; `written`: the hashes of the texts the file
    already holds (updated)."""
    out = {**row, PACKED: 1}
    messages = out.get("messages") or []
    users = [m["content"] for m in messages if m.get("role") == "user"]
    answers = [m["content"] for m in messages if m.get("role") == "assistant"]
    if users and out.get("prompt") == users[-1]:
        del out["prompt"]
    if answers and out.get("response") == answers[-1]:
        del out["response"]
        if out.get("fixed") == answers[-1]:
            out["fixed"] = SAME
    broken = out.get("broken_verification")
    if isinstance(broken, dict) and broken.get("crate") is not None and \
            broken["crate"] == (out.get("verification") or {}).get("crate"):
        out["broken_verification"] = {**broken, "crate": SAME}
    new: dict[str, str] = {}

    def once(text: str) -> dict:  # a text the file holds once
        key = hashlib.sha256(text.encode()).hexdigest()[:20]
        if key not in written:
            written.add(key)
            new[key] = text
        return {"@t": key}
    context = out["context"].rstrip() if isinstance(out.get("context"), str) else ""
    files = [(context, once(context))] if len(context.encode()) >= MIN_SHARED else []
    broken_code = [(out["broken"], {"@f": "broken"})] if len(out.get("broken") or "") >= MIN_FIELD else []
    answer = [(answers[-1], {"@f": "response"})] if answers and len(answers[-1]) >= MIN_FIELD else []
    packed = []
    for m in messages:
        if m.get("role") == "system" and len(m["content"].encode()) >= MIN_SHARED:
            packed.append({**m, "content": {"@parts": [once(m["content"])]}})
        else:
            packed.append({**m, "content": _split(m["content"], files + broken_code if m.get("role") == "user" else [])})
    out["messages"] = packed
    verdict = json.dumps(out.get("verification"), ensure_ascii=False, separators=(",", ":"))
    if len(verdict.encode()) >= MIN_SHARED:  # the original's verdict: the same for each of its rows
        out["verification"] = {"@v": once(verdict)["@t"]}
    for name, shared in (("context", files), ("checked_source", files + answer),
                         ("checked_broken_source", files + broken_code)):
        if isinstance(out.get(name), str):
            out[name] = _split(out[name], shared)
    if new:
        out["@texts"] = new
    return out


def unpack(row: dict, texts: dict[str, str]) -> dict:
    """A packed row whole again; `texts`: those the file held so far (updated)."""
    texts.update(row.get("@texts") or {})
    out: dict = {}
    for name, value in row.items():
        if name in ("@texts", PACKED):
            continue
        if name == "messages":
            messages = [{**m, "content": _join(m["content"], texts, row)} for m in value]
            out["messages"] = messages
            if "prompt" not in row:
                out["prompt"] = [m["content"] for m in messages if m.get("role") == "user"][-1]
            if "response" not in row:
                out["response"] = [m["content"] for m in messages if m.get("role") == "assistant"][-1]
        elif name == "verification" and isinstance(value, dict) and "@v" in value:
            out[name] = json.loads(_join({"@parts": [{"@t": value["@v"]}]}, texts, row))
        else:
            out[name] = value
    for name in ("context", "checked_source", "checked_broken_source"):
        if name in out:
            out[name] = _join(out[name], texts, out)
    if out.get("fixed") == SAME:
        out["fixed"] = out["response"]
    broken = out.get("broken_verification")
    if isinstance(broken, dict) and broken.get("crate") == SAME:
        out["broken_verification"] = {**broken, "crate": out["verification"]["crate"]}
    return out


def write_packed(path: str | Path, rows: Iterable) -> int:
    """Atomically replace `path` with training rows, packed. Returns the row count."""
    written: set[str] = set()
    dicts = (row.model_dump(mode="json") if hasattr(row, "model_dump") else row for row in rows)
    return write_jsonl(path, (InOrder(pack(row, written)) for row in dicts))


def read_packed(path: str | Path, model: type[BaseModel] | None = None) -> list:
    """The rows of a JSONL file written packed or whole (synth/rows/rowfile.py reads either format)."""
    return read_jsonl(path, model, unpack=_unpack_line)


def _unpack_line(line: str, texts: dict[str, str]) -> dict | None:
    # the mark only matches as a key: inside a string its quotes would read \"
    return unpack(json.loads(line), texts) if f'"{PACKED}":1' in line else None


def _split(text: str, shared: list[tuple[str, dict]]):
    """`text` as parts: the first place each shared text holds is a reference to it."""
    parts: list = [text]
    for needle, ref in shared:
        for k, part in enumerate(parts):
            at = part.find(needle) if isinstance(part, str) else -1
            if at >= 0:
                parts[k:k + 1] = [p for p in (part[:at], ref, part[at + len(needle):]) if p != ""]
                break
    return text if parts == [text] else {"@parts": parts}


def _join(value, texts: dict[str, str], fields: dict):
    if not (isinstance(value, dict) and "@parts" in value):
        return value
    out = []
    for part in value["@parts"]:
        if isinstance(part, str):
            out.append(part)
        elif "@f" in part:
            out.append(fields[part["@f"]])
        elif part["@t"] in texts:
            out.append(texts[part["@t"]])
        else:
            raise ValueError(f"names text {part['@t']}, which no earlier line of the file holds")
    return "".join(out)
