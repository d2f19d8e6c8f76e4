"""Screenshots the browser tests leave for people to look at: var/test-artefacts/screenshots/
(ARENA_TEST_ARTEFACTS overrides the folder), at the two widths every page must work at."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = Path(os.environ.get("ARENA_TEST_ARTEFACTS") or ROOT / "var" / "test-artefacts")
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
WIDTHS = {"desktop": DESKTOP, "phone": PHONE}  # every page must work at both


def screenshot(page, name: str, full_page: bool = True) -> Path:
    """Save the page as <name>.png (letters, digits, - and _ only) and return its path."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")
    path = ARTEFACTS / "screenshots" / f"{safe}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=full_page)
    return path
