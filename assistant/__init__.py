"""Cite-Assist: an offline writing assistant that recommends citations from a local library."""

import os as _os

# Never reach a model hub: every weight comes from a local package or file.
_os.environ.setdefault("HF_HUB_OFFLINE", "1")
_os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# One tokeniser thread by default (the GUI and the language server keep the other cores for the
# user); bulk CLI commands switch it on per call (inference.session.allow_parallel_tokenization).
_os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# onnxruntime >= 1.32 on Linux sends usage telemetry (DNS + HTTPS to events.data.microsoft.com)
# from its native library when a session is created, whatever disable_telemetry_events() says;
# this variable, read when the library loads, turns it off. Set before any onnxruntime import.
_os.environ["ORT_DISABLE_TELEMETRY"] = "1"

__version__ = "0.1.0"
