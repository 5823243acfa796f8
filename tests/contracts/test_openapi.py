"""openapi/openapi.json is the schema the app serves; regenerate with `engram openapi`."""

import json
import re

from app.core.config import Settings
from app.main import create_app
from tests.support.paths import REPO_ROOT

DOCUMENT = REPO_ROOT / "openapi" / "openapi.json"


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


def test_operation_ids_are_unique_snake_case_function_names() -> None:
    served = create_app(Settings()).openapi()
    ids = [
        operation["operationId"]
        for operations in served["paths"].values()
        for operation in operations.values()
    ]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    for operation_id in ids:
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", operation_id), operation_id
    assert served["paths"]["/v1/episodes"]["post"]["operationId"] == "create_episode"
