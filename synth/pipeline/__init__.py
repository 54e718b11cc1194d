"""The product's front door: plan, spend-gated run, nightly refresh, over one synth.toml."""
