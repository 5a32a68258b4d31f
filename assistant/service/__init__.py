"""The application service: the one core API the CLI and the GUI call (no Qt, no click)."""
