"""Many real WebSocket viewers on many concurrent generations (`make bench-load`).

The measurement is harness/load.py (the live tests run it too, small); this is its command line.
Usage and figures: that module's docstring, or `python bench/load.py --help`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.load import main

if __name__ == "__main__":
    sys.exit(main())
