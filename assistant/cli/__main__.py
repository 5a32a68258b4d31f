"""``python -m assistant.cli`` runs the command line."""

from assistant.cli import main

main()
