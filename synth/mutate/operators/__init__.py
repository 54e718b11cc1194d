"""The mutation operators, one module a language, and the syntax-tree reading the Rust ones share."""
