"""Minutes of mixed load with faults injected (`make soak`).

The measurement is harness/soak.py (the live tests run it too, small); this is its command line.
Usage and figures: that module's docstring, or `python bench/soak.py --help`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.soak import main

if __name__ == "__main__":
    sys.exit(main())
