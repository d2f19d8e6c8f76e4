"""Django's {# #} comment ends on its own line: one spread over two lines is shown to the user as
text (a battle page once showed its template's comment). Longer comments use {% comment %}."""

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_every_short_comment_closes_on_its_own_line():
    unclosed = [f"{path.relative_to(TEMPLATES)}:{number}"
                for path in sorted(TEMPLATES.rglob("*.html"))
                for number, line in enumerate(path.read_text().splitlines(), start=1)
                if line.count("{#") > line.count("#}")]
    assert unclosed == []
