"""The doctor's JSON document (CONTRACT.md): stable key order, one document."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envcheck.report import Report


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def render_json(report: Report) -> str:
    return dumps(report.to_dict())
