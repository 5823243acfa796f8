"""The `engram` command: serve, migrate, openapi."""

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path

from app.config import Settings


def _serve(settings: Settings) -> None:
    import uvicorn

    from app.main import create_app

    uvicorn.run(create_app(settings), host=settings.host, port=settings.port,
                log_level=settings.log_level)


def _migrate(settings: Settings, revision: str) -> None:
    from app import migrations
    from app.db import create_engine, resolve_database_url

    async def run() -> None:
        engine = create_engine(await resolve_database_url(settings), pool_size=1)
        try:
            await migrations.upgrade(engine, revision)
        finally:
            await engine.dispose()

    asyncio.run(run())
    print(f"database upgraded to {revision}")


def _openapi(output: Path | None) -> None:
    from app.main import create_app

    document = json.dumps(create_app(Settings()).openapi(), indent=2, sort_keys=True) + "\n"
    if output is None:
        sys.stdout.write(document)
    else:
        output.write_text(document)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `engram` console script."""
    parser = argparse.ArgumentParser(prog="engram", description="Engram memory service")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP API")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    migrate = commands.add_parser("migrate", help="apply database migrations")
    migrate.add_argument("revision", nargs="?", default="head")
    openapi = commands.add_parser("openapi", help="print the OpenAPI document")
    openapi.add_argument("--output", type=Path)
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    overrides = {key: value for key in ("host", "port")
                 if (value := getattr(args, key, None)) is not None}
    settings = Settings(**overrides)
    if args.command == "serve":
        _serve(settings)
    elif args.command == "migrate":
        _migrate(settings, args.revision)
    else:
        _openapi(args.output)


if __name__ == "__main__":
    main()
