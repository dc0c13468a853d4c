"""`python -m nsdl_jupyter.cli`: the `nsdl` command."""

import sys

from nsdl_jupyter.cli import main

if __name__ == "__main__":
    sys.exit(main())
