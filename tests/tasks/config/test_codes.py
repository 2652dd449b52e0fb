"""The code catalogue and its documentation agree."""

from __future__ import annotations

import re
from pathlib import Path

from tasks.config import codes

DOCUMENTATION = Path(__file__).resolve().parents[3] / "docs" / "task-config-errors.md"


def test_catalogue_codes_are_unique_and_well_formed():
    constants = {
        name: value
        for name, value in vars(codes).items()
        if name.isupper() and isinstance(value, str)
    }
    assert len(set(constants.values())) == len(constants)
    assert set(constants.values()) == set(codes.CATALOGUE)
    for code in codes.CATALOGUE:
        assert re.fullmatch(r"config\.[EW]0\d\d|value\.E1\d\d", code), code


def test_every_code_is_documented():
    table_row = re.compile(r"^\| `((?:config|value)\.[EW]\d{3})` \|", re.MULTILINE)
    documented = set(table_row.findall(DOCUMENTATION.read_text(encoding="utf-8")))
    assert documented == set(codes.CATALOGUE)
