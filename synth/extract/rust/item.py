"""One Rust item as extraction finds it, before context is attached (synth/extract/rust/parse.py makes
them; the crate index and the context builder read them)."""
from __future__ import annotations

from dataclasses import dataclass, field

TYPE_KINDS = {"struct", "enum", "union", "type", "trait"}


@dataclass
class RustItem:
    """One extracted item, before context is attached."""

    kind: str
    name: str
    start_byte: int  # span start, including leading docs and attributes
    end_byte: int
    start_line: int
    end_line: int
    item_start: int  # where the item itself starts (after docs/attributes)
    doc: str
    attributes: list[str]
    signature: str
    body: str
    params: str
    return_type: str
    module_path: str
    self_type: str | None = None
    trait_name: str | None = None
    impl_header: str | None = None  # methods: `impl<T> Trait for Type` text
    impl_key: tuple[int, int] | None = None  # methods: span of their impl (to find siblings)
    is_test: bool = False
    near_parse_error: bool = False
    uses: set[str] = field(default_factory=set)  # identifiers in the whole item
    signature_uses: set[str] = field(default_factory=set)  # identifiers a stub of it needs
    stub: str = ""  # the item as context: signature with `todo!()` body, or the full type
    text: str = ""
