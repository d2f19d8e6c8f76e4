"""A blind match's paced frames, fast contestant against slow (`make bench-blind`).

The measurement is harness/blind.py (the live tests run it too, small); this is its command line.
Usage and figures: that module's docstring, or `python bench/blind.py --help`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.blind import main

if __name__ == "__main__":
    sys.exit(main())
