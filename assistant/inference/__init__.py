"""inference layer."""
