"""A suite file, whatever its format: an upload by its name's extension, an API body by its
Content-Type. JSONL and CSV are read by arena.suites.parsing, YAML by arena.suites.yaml_format
(which builds on parsing's checks, hence this module above both)."""

from __future__ import annotations

from . import parsing, yaml_format
from .parsing import SuiteError, SuiteFile

EXTENSIONS = {"yaml": "yaml", "yml": "yaml", "jsonl": "jsonl", "csv": "csv"}


def file_format(name: str) -> str:
    """The format a file's name says ("yaml", "jsonl" or "csv"), or SuiteError."""
    extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if extension not in EXTENSIONS:
        raise SuiteError([("upload a .yaml file (see the suite file format), a .jsonl file (one JSON object a "
                           "line) or a .csv file (a header row first)")])
    return EXTENSIONS[extension]


def parse_file(name: str, data: bytes) -> SuiteFile:
    """An uploaded file, by its extension (.yaml or .yml, .jsonl, or .csv)."""
    return parse_data(file_format(name), data)


def parse_data(fmt: str, data: bytes) -> SuiteFile:
    """A file's bytes in a known format ("yaml", "jsonl" or "csv"); SuiteError naming every problem."""
    if len(data) > parsing.max_upload_bytes():
        raise SuiteError([f"the file is larger than {parsing.max_upload_bytes()} bytes"])
    if fmt == "yaml":
        return yaml_format.load(parsing.decode(data))
    return SuiteFile(parsing.parse_jsonl(data) if fmt == "jsonl" else parsing.parse_csv(data))
