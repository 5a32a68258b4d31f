"""Concurrency suite: real programs on one library (issue 31)."""
