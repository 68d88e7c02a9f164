"""`python -m encoder ...`: the command line, encoder.cli."""

import sys

from encoder.cli import main

if __name__ == "__main__":
    sys.exit(main())
