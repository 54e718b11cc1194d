"""What a run is told: `synth.toml` validated, the strict models its tables are built on, and which
rows fit the model being trained ([tokens])."""
