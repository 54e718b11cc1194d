"""Config models that reject unknown keys, and error messages that say where and suggest the
key that was probably meant (`sft.learning_rat` -> did you mean `learning_rate`?)."""
from __future__ import annotations

import difflib
import typing

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# A lane key that picks which items run, or combines their rows after every item ran, and never
# changes an item's own rows: left out of the lane's fingerprint, so changing it redoes nothing.
ACROSS_ITEMS = {"across_items": True}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LaneSettings(Strict):
    """What every lane's `[lanes.<name>]` table has (read from `[stages.<name>]` too, with a note);
    each lane's own class adds its keys and lives beside the engine that takes it whole."""
    enabled: bool = Field(False, json_schema_extra=ACROSS_ITEMS)

    def item_settings(self) -> dict:
        """The settings as dumped, less the keys marked ACROSS_ITEMS: what an item's rows can
        depend on (synth/lanes/fingerprint.py)."""
        across = {name for name, f in type(self).model_fields.items() if (f.json_schema_extra or {}).get("across_items")}
        return self.model_dump(mode="json", exclude=across)

    def model_refs(self) -> list[str]:
        """The [models] this lane calls (none for an LLM-free lane)."""
        return [ref for ref in (getattr(self, "model", None), getattr(self, "judge", None),
                                getattr(self, "regenerator", None)) if ref]

    def check(self) -> None:
        """Rules across keys of an enabled lane (ValueError says what is missing)."""

    def resolve_paths(self, resolve) -> None:
        """Make the lane's file settings relative to the config file (`resolve(path)`)."""


def explain(root: type[BaseModel], exc: ValidationError) -> str:
    return "; ".join(_one(root, e) for e in exc.errors())


def _one(root: type[BaseModel], error: dict) -> str:
    loc = ".".join(str(p) for p in error["loc"])
    if error["type"] != "extra_forbidden":
        return f"{loc}: {error['msg']}"
    *parent, name = error["loc"]
    model = _model_at(root, parent)
    known = list(model.model_fields) if model else []
    hint = difflib.get_close_matches(str(name), known, n=1)
    return f"unknown key {loc!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")


def _model_at(model, path):
    """The model class reached by following `path` (field names, list indexes, dict keys)."""
    for part in path:
        if isinstance(part, int) or model is None:
            continue
        if isinstance(model, type) and issubclass(model, BaseModel):
            field = model.model_fields.get(str(part))
            if field is None:
                return None
            model = _unwrap(field.annotation)
        else:
            model = None
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _unwrap(annotation):
    """list[X] / dict[str, X] / X | None -> X."""
    args = typing.get_args(annotation)
    if not args:
        return annotation
    models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
    return models[0] if models else _unwrap(args[-1])
