"""``python -m praisonsession``: the same command line as the ``praisonsession`` script."""

from .apps.cli import main

if __name__ == "__main__":
    main()
