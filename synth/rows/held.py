"""A row held in memory as its zstd-compressed JSON: what a long run keeps of every row between the
lanes and the files.

A repair row is about 66 KB of text (its context appears in the prompt, the messages and both
checked files) and about 5 KB compressed; a night of 80,000 rows held as models would not fit in
memory. A `HeldRow` keeps the compressed line and, as they are, the small fields the lanes order,
balance and split by (id, task, crate, operator, provenance, ...). It reads like the row it holds:
attributes as the `Row` model has them (`row.provenance.source_path`, `row.response`), keys as its
JSON has them (`row["response"]`, `row.get("crate")`); a large field is read by decompressing the
row again (the last one read is kept, so a loop reading several fields of one row pays once).
"""
from __future__ import annotations

import functools

import orjson
import zstandard
from pydantic import BaseModel, TypeAdapter

SMALL = 512  # a field whose JSON is at most this many characters is kept as it is
_compress = zstandard.ZstdCompressor(level=1).compress
_decompress = zstandard.ZstdDecompressor().decompress
_last: list = [None, None, None]  # the held row read last, its Row, its JSON
_MISSING = object()


@functools.cache
def _field_adapter(model: type[BaseModel], name: str) -> TypeAdapter | None:
    """How the model validates its field `name` (None: an extra field, kept as JSON)."""
    field = model.model_fields.get(name)
    return TypeAdapter(field.annotation) if field is not None else None


def _small(value) -> bool:
    """Whether a JSON value is at most `SMALL` characters (told without writing a long text out)."""
    if isinstance(value, str):
        return len(value) <= SMALL
    if isinstance(value, (dict, list)):
        return len(orjson.dumps(value)) <= SMALL
    return True


class HeldRow:
    __slots__ = ("_blob", "_small", "_update", "_model")

    def __init__(self, blob: bytes, small: dict, model: type[BaseModel], update: dict | None = None):
        self._blob, self._small, self._model, self._update = blob, small, model, update or {}

    @classmethod
    def of(cls, row: BaseModel) -> "HeldRow":
        """Hold a row (a `Row`; read back as the same model)."""
        data = row.model_dump(mode="json")
        small = {k: getattr(row, k) for k, v in data.items() if _small(v)}
        blob = _compress(orjson.dumps(data))
        # copied: zstandard's result keeps the size of its worst case (the whole row) allocated
        return cls(bytes(memoryview(blob)), small, type(row))

    def _json(self) -> dict:
        """The row's JSON, shared with the next read of this row: not to be changed."""
        if _last[0] is not self or _last[2] is None:
            _last[:] = [self, None, self.model_dump()]
        return _last[2]

    def row(self):
        """The row itself, as a model (a fresh one: changing it changes nothing held)."""
        data = self._json()
        if _last[1] is None:
            _last[1] = self._model.model_validate(data)
        return _last[1].model_copy(deep=True)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._update:
            return self._update[name]
        if name in self._small:
            return self._small[name]
        data = self._json()
        if name in data:  # one field read as the model reads it (an extra field is its JSON)
            adapter = _field_adapter(self._model, name)
            return adapter.validate_python(data[name]) if adapter is not None else data[name]
        if _last[1] is None:  # anything else the model has (a method; a missing field's error)
            _last[1] = self._model.model_validate(data)
        return getattr(_last[1], name)

    def get(self, key: str, default=None):
        """The row's JSON value at `key` (as `dict.get`)."""
        for kept in (self._update, self._small):
            if key in kept:
                value = kept[key]
                return value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        return self._json().get(key, default)

    def __getitem__(self, key: str):
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def model_dump(self, mode: str = "json") -> dict:
        """The row's JSON, decoded afresh (the caller may change it)."""
        data = orjson.loads(_decompress(self._blob))
        for k, v in self._update.items():
            data[k] = v.model_dump(mode="json") if isinstance(v, BaseModel) else v
        return data

    def model_copy(self, update: dict | None = None) -> "HeldRow":
        """The same row with some fields set (the compressed text is shared, not copied)."""
        return HeldRow(self._blob, self._small, self._model, {**self._update, **(update or {})})

    @property
    def nbytes(self) -> int:
        """The compressed row's size."""
        return len(self._blob)
