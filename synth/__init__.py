"""kagent synth."""
