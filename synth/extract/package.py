"""Where a declaration comes from, as a dataset needs to say it: its crate's name and version and
its licence (an SPDX expression), read from the crate's Cargo.toml, else recognised in its licence
files, else "unknown". A source that is not a crate is named by its folder."""
from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

UNKNOWN = "unknown"
LICENSE_FILES = re.compile(r"^(LICEN[CS]E|COPYING|UNLICENSE)([-._].*)?$", re.IGNORECASE)
# (SPDX id, phrases that all appear in its text), most specific first
KNOWN_TEXTS = (
    ("Apache-2.0", ("apache license", "version 2.0")),
    ("MPL-2.0", ("mozilla public license", "2.0")),
    ("LGPL-3.0", ("gnu lesser general public license", "version 3")),
    ("LGPL-2.1", ("gnu lesser general public license", "version 2.1")),
    ("GPL-3.0", ("gnu general public license", "version 3")),
    ("GPL-2.0", ("gnu general public license", "version 2")),
    ("BSL-1.0", ("boost software license",)),
    ("Unlicense", ("this is free and unencumbered software released into the public domain",)),
    ("CC0-1.0", ("cc0 1.0 universal",)),
    ("0BSD", ("permission to use, copy, modify, and/or distribute", "without fee", "the software is provided \"as is\"",
              "in no event shall the author be liable")),
    ("ISC", ("permission to use, copy, modify, and/or distribute",)),
    ("BSD-3-Clause", ("redistribution and use in source and binary forms", "neither the name")),
    ("BSD-2-Clause", ("redistribution and use in source and binary forms",)),
    ("Zlib", ("this software is provided 'as-is'", "altered source versions must be plainly marked")),
    ("MIT", ("permission is hereby granted, free of charge",)),
)


@dataclass(frozen=True)
class Package:
    name: str
    version: str | None
    license: str  # an SPDX expression, or "unknown"

    def fields(self) -> dict:
        """The provenance fields a row records."""
        return {"source_name": self.name, "source_version": self.version, "license": self.license}


def package_of(decl) -> Package:
    """The package of an extracted declaration (synth/extract/model.py)."""
    if decl.crate_root:
        return crate_package(decl.crate_root)
    return Package(decl.path.split("/", 1)[0], None, UNKNOWN)


@functools.lru_cache(maxsize=4096)
def crate_package(root: str | Path) -> Package:
    root = Path(root)
    try:
        package = tomllib.loads((root / "Cargo.toml").read_text(encoding="utf-8")).get("package", {})
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        package = {}
    name, version, expression = (package.get(k) for k in ("name", "version", "license"))
    return Package(name if isinstance(name, str) else root.name,
                   version if isinstance(version, str) else None,
                   spdx(expression) if isinstance(expression, str) and expression.strip() else license_from_files(root))


def spdx(expression: str) -> str:
    """Cargo's old `MIT/Apache-2.0` is `MIT OR Apache-2.0` in SPDX."""
    return " OR ".join(part.strip() for part in expression.split("/")) if "/" in expression else expression.strip()


def license_from_files(root: Path) -> str:
    """The licences recognised in the crate's licence files, as one `A OR B` expression (several
    files: the crate offers each); "unknown" when none is recognised."""
    found = []
    for path in sorted(root.iterdir()) if root.is_dir() else ():
        if path.is_file() and LICENSE_FILES.match(path.name):
            spdx_id = recognise(path.read_text(encoding="utf-8", errors="replace"))
            if spdx_id and spdx_id not in found:
                found.append(spdx_id)
    return " OR ".join(found) or UNKNOWN


def recognise(text: str) -> str | None:
    text = " ".join(text.lower().split())
    return next((spdx_id for spdx_id, phrases in KNOWN_TEXTS if all(p in text for p in phrases)), None)


def spdx_ids(expression: str | None) -> list[str]:
    """The licence ids an expression names (`(MIT AND BSD-3-Clause) OR GPL-3.0`: three), sorted."""
    parts = re.split(r"\s+(?:OR|AND)\s+|[()]", expression or UNKNOWN)
    return sorted({part.strip() for part in parts if part.strip()})


def permitted(expression: str | None, licenses: list[str] | set[str]) -> bool:
    """Whether code under `expression` may be used by someone who accepts `licenses`: one of an
    `OR`'s alternatives, every part of an `AND` (parentheses are read as grouping only)."""
    accepted = {name.strip() for name in licenses}
    alternatives = re.split(r"\s+OR\s+", (expression or UNKNOWN).replace("(", " ").replace(")", " ").strip())
    return any(all(part.strip() in accepted for part in re.split(r"\s+AND\s+", alt.strip())) for alt in alternatives)
