"""library layer."""
