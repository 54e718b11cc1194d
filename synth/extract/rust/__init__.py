"""Rust declarations out of source files: parsing, the crate index, a method's owner, and the context a
declaration compiles with."""
