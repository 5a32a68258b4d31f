"""Evaluation layer: ACM-CR retrieval (``acm_cr``), ranking metrics (``metrics``), PDF and SciCite evals.

``evaluate_acm_cr(papers_dir, library, config, levels) -> dict`` is the reusable entry point for
comparing retrieval stages (imported lazily so that ``import assistant.evaluation`` stays light).
"""

from __future__ import annotations


def __getattr__(name: str):
    if name == "evaluate_acm_cr":
        from assistant.evaluation.acm_cr import evaluate_acm_cr

        return evaluate_acm_cr
    raise AttributeError(name)
