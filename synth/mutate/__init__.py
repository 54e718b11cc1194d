"""Mutants the compiler must reject, and the repair rows made from them."""
