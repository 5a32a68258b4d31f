"""`python -m assistant`: the same command line as the `assistant` script."""

from assistant.cli import main

if __name__ == "__main__":
    main()
