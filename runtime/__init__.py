"""kagent runtime."""
