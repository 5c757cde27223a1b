"""kagent skills/evaluator/harness: the code that runs inside the evaluation workers."""
