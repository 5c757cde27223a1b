"""kagent skills/harness."""
