"""Reliability suite: a generated corpus of bad inputs run through the real code paths.

``python -m tools.reliability run --json`` prints inputs, crashes, hangs, records lost and
network calls (all must be 0). The kill -9, no-network and fuzz tests live in
``tests/reliability/``.
"""
