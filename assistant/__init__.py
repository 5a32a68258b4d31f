"""Cite-Assist: an offline writing assistant that recommends citations from a local library."""

import os as _os

# Never reach a model hub: every weight comes from a local package or file.
_os.environ.setdefault("HF_HUB_OFFLINE", "1")
_os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
_os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

__version__ = "0.1.0"
