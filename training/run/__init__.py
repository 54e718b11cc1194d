"""What every training run is around `trainer.train()`: its profile, the arguments built from it, the
manifest, the lifecycle and the adapter's integrity checks."""
