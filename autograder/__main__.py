"""``python -m autograder``: see ``python -m autograder --help``."""

from .cli import exit_with, main

if __name__ == "__main__":
    exit_with(main())
