"""The prompt templates (prompts/) and the one chat template of training, serving and evaluation."""
