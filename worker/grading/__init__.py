"""Grading answers in the worker, after the provider call: evaluators, scores, pass or fail."""
