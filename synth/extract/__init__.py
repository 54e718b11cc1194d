"""Declarations out of real source files (Rust via tree-sitter, Vox via a structural parser)."""
from synth.extract.extract import ExtractResult, extract_paths

__all__ = ["ExtractResult", "extract_paths"]
