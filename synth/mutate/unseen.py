"""Values a repair cannot read: the literals a mutant's fix puts back that the code its prompt
shows never says. Dropping an argument can drop `"-Wextra"`, a whole `match` of messages, or the
`1` a dead state's id is; when the broken declaration, its context (comments included) and
rustc's errors do not say them, a repairer can only guess, and a test that checks the value tells
the guess. A task records them (`unseen_literals`), so figures can be read apart where the fix is
in sight."""
from __future__ import annotations

import re
from collections import Counter

from synth.rust_syntax import rust_parser, walk

TEXTS = ("string_literal", "raw_string_literal", "char_literal")
NUMBERS = ("integer_literal", "float_literal")
CODE_BLOCK = re.compile(r"```[\w+-]*\n(.*?)```", re.S)
QUOTES = re.compile(r"^[bcr]*#*[\"']|[\"']#*$")
NUMBER = re.compile(r"\b\d[\w.]*")
COMMENTS = ("line_comment", "block_comment")


def literals(code: str) -> Counter:
    """The literal tokens of Rust code, as written (tree-sitter reads fragments with errors too);
    a tuple field's index (`self.0`) is a name, not a value."""
    return Counter(_literal_nodes(rust_parser().parse(code.encode()).root_node))


def _literal_nodes(root) -> list[str]:
    return [n.text.decode() for n in walk(root) if n.type in TEXTS + NUMBERS
            and not (n.parent is not None and n.parent.type == "field_expression"
                     and n.parent.child_by_field_name("field") == n)]


def said_numbers(code: str) -> set[str]:
    """The numbers `code` says: its literals' values and the numbers in its comments (`//`, `///`
    and `/* */` alike, read from the parse: a `//` inside a string is no comment)."""
    root = rust_parser().parse(code.encode()).root_node
    comments = " ".join(n.text.decode() for n in walk(root) if n.type in COMMENTS)
    return {inner(lit) for lit in _literal_nodes(root)} | set(NUMBER.findall(comments))


def inner(literal: str) -> str:
    """A string or char literal's value: its text between the quotes, escaped backslashes and quotes
    read (a number as it is)."""
    return QUOTES.sub("", literal).replace("\\\\", "\\").replace('\\"', '"')


def shown_code(prompt: str) -> str:
    """The code a prompt shows (its fenced blocks: the context and the broken declaration); its
    prose and rustc's positions are numbers of another kind."""
    return "\n".join(CODE_BLOCK.findall(prompt))


def unseen_literals(broken: str, reference: str, prompt: str) -> list[str]:
    """The literals `reference` has more of than `broken` that the code of `prompt` does not say:
    a text is said where it appears anywhere in that code (a comment, another literal; any case), a
    number where it is a literal's value there or a number in a comment. Sorted."""
    code = shown_code(prompt)
    numbers = said_numbers(code)

    def said(lit: str) -> bool:
        value = inner(lit)
        return value in numbers if lit[0].isdigit() else not value or value.lower() in code.lower()
    return sorted(lit for lit in literals(reference) - literals(broken) if not said(lit))
