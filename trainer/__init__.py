"""kagent trainer."""
