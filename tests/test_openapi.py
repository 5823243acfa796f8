"""openapi/openapi.json is the schema the app serves; regenerate with `engram openapi`."""

import json
from pathlib import Path

from app.config import Settings
from app.main import create_app

DOCUMENT = Path(__file__).resolve().parent.parent / "openapi" / "openapi.json"


def test_exported_openapi_matches_app() -> None:
    served = create_app(Settings()).openapi()
    exported = json.loads(DOCUMENT.read_text())
    assert served == exported, (
        "openapi/openapi.json is stale: run `engram openapi --output openapi/openapi.json`"
    )


def test_every_operation_documents_its_problems() -> None:
    served = create_app(Settings()).openapi()
    for path, operations in served["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, operation in operations.items():
            assert "422" in operation["responses"], f"{method.upper()} {path}"
            assert operation.get("summary"), f"{method.upper()} {path} has no summary"
