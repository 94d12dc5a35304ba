"""``python -m bench``: the causal-chain benchmark (``--help`` for options)."""
from __future__ import annotations

import sys

from .causal_chain import main

if __name__ == "__main__":
    sys.exit(main())
