"""The `engram` command: serve, migrate, keys, reembed, reindex, reindex-text,
infer-sessions, backup, restore, openapi, mcp, hook, hooks."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from engram_client.hooks import commands as hook_commands

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

    from app.core.config import Settings


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """How `engram serve` runs uvicorn: address, logging, the proxies it trusts."""
    return {
        "host": settings.host,
        "port": settings.port,
        "log_level": settings.log_level,
        "log_config": None,
        "proxy_headers": True,
        "forwarded_allow_ips": settings.forwarded_allow_ips,
    }


def _serve(settings: Settings, workers: int) -> None:
    import uvicorn

    from app.main import create_app, refuse_unsafe_binding

    # Refused before anything starts: one line on stderr, not a lifespan traceback.
    refuse_unsafe_binding(settings)
    if workers <= 1:
        uvicorn.run(create_app(settings), **uvicorn_options(settings))
        return
    # Worker processes build their own app from the environment; the database is resolved
    # (the embedded server started) and migrated once, here, so they neither race nor each
    # start a server.
    os.environ["DATABASE_URL"] = asyncio.run(_prepare_database(settings))
    if not settings.database_url:
        # Workers log in to the embedded server as the app role (peer authentication).
        from app.core.rls import APP_ROLE
        from app.postgres.db import EMBEDDED_DATABASE, embedded_pgdata
        from app.postgres.embedded_pg import server_for

        os.environ["ENGRAM_APP_DATABASE_URL"] = server_for(embedded_pgdata(settings)).url(
            APP_ROLE, EMBEDDED_DATABASE
        )
    os.environ["ENGRAM_MIGRATE_ON_START"] = "false"
    os.environ["ENGRAM_HOST"] = settings.host
    os.environ["ENGRAM_AUTH_DISABLED"] = "true" if settings.auth_disabled else "false"
    with contextlib.ExitStack() as stack:
        if not settings.database_url:
            stack.enter_context(_supervised_embedded_server(settings))
        uvicorn.run(
            "app.main:create_app", factory=True, workers=workers, **uvicorn_options(settings)
        )


@contextlib.contextmanager
def _supervised_embedded_server(settings: Settings) -> Iterator[None]:
    """While worker processes serve, restart the embedded postmaster whenever it dies (from
    this parent process, which started it), and release it when they stop."""
    from app.postgres.db import embedded_pgdata
    from app.postgres.embedded_pg import release_server, server_for, supervise

    pgdata = embedded_pgdata(settings)
    server = server_for(pgdata)
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    watch = supervise(server, stop, interval_seconds=settings.embedded_supervise_seconds)
    thread = threading.Thread(
        target=loop.run_until_complete, args=(watch,), daemon=True, name="postmaster-supervisor"
    )
    thread.start()
    try:
        yield
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)
        if not thread.is_alive():
            loop.close()
        release_server(pgdata)


async def _prepare_database(settings: Settings) -> str:
    """The database URL for worker processes, with the schema at head."""
    from app.postgres import migrations
    from app.postgres.db import create_engine, resolve_database_url

    url = await resolve_database_url(settings)
    if settings.migrate_on_start:
        engine = create_engine(url, pool_size=1)
        try:
            await migrations.upgrade(engine)
        finally:
            await engine.dispose()
    return url


@contextlib.asynccontextmanager
async def _database(settings: Settings) -> AsyncIterator[AsyncEngine]:
    """An engine of one connection on the service's database, disposed after use."""
    from app.postgres.db import create_engine, resolve_database_url

    engine = create_engine(await resolve_database_url(settings), pool_size=1)
    try:
        yield engine
    finally:
        await engine.dispose()


def _migrate(settings: Settings, revision: str) -> None:
    from app.postgres import migrations

    async def run() -> None:
        async with _database(settings) as engine:
            await migrations.upgrade(engine, revision)

    asyncio.run(run())
    print(f"database upgraded to {revision}")


def _distribute(settings: Settings) -> None:
    import asyncpg

    from app.postgres import citus
    from app.postgres.db import resolve_database_url, to_libpq_url

    async def run() -> list[str]:
        conn = await asyncpg.connect(to_libpq_url(await resolve_database_url(settings)))
        try:
            return await citus.distribute(conn)
        finally:
            await conn.close()

    try:
        placed = asyncio.run(run())
    except RuntimeError as error:
        raise SystemExit(f"engram: {error}") from None
    print(f"placed {len(placed)} tables: {', '.join(placed)}" if placed else "nothing to place")


def _keys(settings: Settings, args: argparse.Namespace) -> None:
    from app.core.errors import DomainError
    from app.core.scope import SYSTEM, scoped_transaction
    from app.postgres import migrations
    from app.postgres.db import make_sessionmaker

    async def run() -> None:
        try:
            async with _database(settings) as engine:
                if settings.migrate_on_start:
                    await migrations.upgrade(engine)
                # Administration spans tenants: a system transaction.
                async with scoped_transaction(make_sessionmaker(engine), SYSTEM) as session:
                    await _manage_keys(session, args)
        except DomainError as error:
            raise SystemExit(f"error: {error.detail}") from None

    asyncio.run(run())


async def _manage_keys(session: AsyncSession, args: argparse.Namespace) -> None:
    from app.services import api_keys

    if args.keys_command == "create":
        butlers = (
            None
            if args.butlers is None
            else [name.strip() for name in args.butlers.split(",") if name.strip()]
        )
        minted = await api_keys.create_key(
            session,
            tenant_id=args.tenant,
            name=args.name,
            access="read" if args.read_only else "write",
            butlers=butlers,
        )
        # The key alone on stdout, so `KEY=$(engram keys create ...)` captures just it.
        print(f"id:     {minted.record.id}\ntenant: {minted.record.tenant_id}", file=sys.stderr)
        if minted.record.butlers:
            print(f"limited to butlers: {', '.join(minted.record.butlers)}", file=sys.stderr)
        print("(the key below is shown once: store it now)", file=sys.stderr)
        print(minted.secret)
    elif args.keys_command == "list":
        for key in await api_keys.list_keys(session, tenant_id=args.tenant):
            state = f"revoked {key.revoked_at:%Y-%m-%d}" if key.revoked_at else "live"
            limit = ",".join(key.butlers) if key.butlers else "*"
            print(
                f"{key.id}  {key.tenant_id:<20} {key.key_prefix}...  "
                f"{key.name or '-':<20} {key.access:<5} {state:<16} {limit}"
            )
    elif await api_keys.revoke_key(session, key_id=args.key_id):
        print(f"revoked {args.key_id}")
    else:
        raise SystemExit(f"no live key with id {args.key_id}")


def _on_database(
    settings: Settings, work: Callable[[async_sessionmaker[AsyncSession]], Awaitable[str]]
) -> None:
    """Run `work` on the database's sessions, its schema first brought to head as `serve`
    does, and print the line it returns."""
    from app.postgres.db import make_sessionmaker

    async def run() -> str:
        await _prepare_database(settings)
        async with _database(settings) as engine:
            return await work(make_sessionmaker(engine))

    print(asyncio.run(run()))


def _reembed(settings: Settings, args: argparse.Namespace) -> None:
    from app.core.config import NextModelSettings
    from app.embedding import get_embedder
    from app.embedding.remote import RemoteEmbeddingError
    from app.services import embedding_store
    from app.worker import model_switch
    from app.worker.reembed import reembed_all

    if args.model is not None:
        base = settings.embedding_next.model_dump() if settings.embedding_next else {}
        settings = settings.model_copy(
            update={
                "embedding_next": NextModelSettings.model_validate({**base, "model": args.model})
            }
        )

    async def work(sessions: async_sessionmaker[AsyncSession]) -> str:
        embedder = get_embedder(settings)
        await embedding_store.fit_to_model(sessions, embedder)
        try:
            if args.drop_previous:
                return await model_switch.drop_previous(sessions)
            if args.model is not None and embedder.next is not None:
                report = await model_switch.switch_models(
                    sessions, embedder, embedder.next, progress=sys.stderr.isatty()
                )
                return "\n".join(
                    [
                        f"switched to {embedder.next.model_name!r}",
                        *report.lines(),
                        "now set ENGRAM_EMBEDDING_MODEL (and the other "
                        "ENGRAM_EMBEDDING_ settings) to it and restart when "
                        "convenient; `engram reembed --drop-previous` frees the "
                        "previous model's vectors",
                    ]
                )
        except model_switch.SwitchRefused as refused:
            raise SystemExit(f"engram reembed: {refused}") from None
        except RemoteEmbeddingError as error:
            raise SystemExit(
                f"engram reembed: {error}; run the command again once the model answers"
            ) from None
        counts = await reembed_all(sessions, embedder, every=args.every)
        return ", ".join(f"{name}: {count} re-embedded" for name, count in counts.items())

    _on_database(settings, work)


def _reindex(settings: Settings) -> None:
    from app.worker.reindex import reindex_all

    _rebuild_texts(settings, reindex_all, lambda count: f"episodes: {count} keyword texts rebuilt")


def _reindex_text(settings: Settings) -> None:
    from app.worker.reindex_text import reindex_texts

    _rebuild_texts(
        settings,
        reindex_texts,
        lambda counts: ", ".join(f"{name}: {count} read again" for name, count in counts.items()),
    )


_Result = TypeVar("_Result")


def _rebuild_texts(
    settings: Settings,
    rebuild: Callable[..., Awaitable[_Result]],
    report: Callable[[_Result], str],
) -> None:
    """Run a rebuild of search texts with the keyword-text settings and print `report` of
    what it returns."""

    async def work(sessions: async_sessionmaker[AsyncSession]) -> str:
        return report(
            await rebuild(
                sessions,
                context_turns=settings.embedding_context_turns,
                keyword_context=settings.keyword_context,
            )
        )

    _on_database(settings, work)


def _infer_sessions(settings: Settings) -> None:
    from app.worker.session_backfill import infer_missing_sessions

    gap = settings.episode_session_gap_minutes
    if gap <= 0:
        raise SystemExit("episode_session_gap_minutes is 0: sessions are not inferred")

    async def work(sessions: async_sessionmaker[AsyncSession]) -> str:
        count = await infer_missing_sessions(sessions, gap_minutes=gap)
        return f"episodes: {count} placed in inferred sessions" + (
            "; `engram reembed --all` embeds their context passages" if count else ""
        )

    _on_database(settings, work)


def _backup(settings: Settings, directory: Path, keep: int | None) -> None:
    from app.postgres.backup import BackupError, prune, take_backup

    try:
        backup, warning = asyncio.run(take_backup(settings, directory))
        removed = prune(settings, directory, keep) if keep else []
    except BackupError as error:
        raise SystemExit(f"error: {error}") from None
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    archive = (
        f"WAL archived in {backup.wal_archive_dir}" if backup.wal_archive_dir else "no WAL archive"
    )
    print(f"base backup {backup.path} (ended {backup.finished_at.isoformat()}; {archive})")
    for path in removed:
        print(f"removed {path}")


def _restore(settings: Settings, args: argparse.Namespace) -> None:
    from app.postgres.backup import BackupError
    from app.postgres.db import embedded_pgdata
    from app.postgres.restore import parse_target_time, restore

    if settings.database_url and args.pgdata is None:
        raise SystemExit(
            "error: engram restore brings back the embedded server's data "
            "directory; an external server is restored with its own programs "
            "(docs/backups.md), or give --pgdata"
        )
    pgdata = (args.pgdata or embedded_pgdata(settings)).expanduser().resolve()
    try:
        target_time = parse_target_time(args.to) if args.to else None
        restored = asyncio.run(
            restore(
                settings,
                args.directory.expanduser().resolve(),
                pgdata,
                target_time=target_time,
                wal_source=args.wal_archive,
            )
        )
    except BackupError as error:
        raise SystemExit(f"error: {error}") from None
    for note in restored.notes:
        print(f"postgres: {note}", file=sys.stderr)
    point = (
        target_time.isoformat()
        if target_time
        else "the latest state in " + str(restored.wal_source)
        if restored.wal_source
        else "the end of the base backup (no WAL archive)"
    )
    print(f"restored {pgdata} to {point} from {restored.backup.path}")


def _openapi(output: Path | None) -> None:
    from app.core.config import Settings
    from app.main import create_app

    document = json.dumps(create_app(Settings()).openapi(), indent=2, sort_keys=True) + "\n"
    if output is None:
        sys.stdout.write(document)
    else:
        output.write_text(document)


def _mcp(settings: Settings, url: str | None, api_key: str | None, tools: str | None) -> None:
    from app.mcp.groups import UnknownGroup, parse_groups, with_groups
    from app.mcp.stdio import API_KEY_ENV, root_cause, run_bridge

    target = url or f"http://{settings.host}:{settings.port}/mcp"
    if tools is not None:
        try:
            parse_groups(tools)
        except UnknownGroup as error:
            raise SystemExit(f"error: --tools: {error}") from None
        target = with_groups(target, tools)
    key = api_key or os.environ.get(API_KEY_ENV)
    try:
        asyncio.run(run_bridge(target, key))
    except KeyboardInterrupt:
        pass
    except Exception as error:  # one line for the host's log, not a traceback
        cause = root_cause(error)
        raise SystemExit(
            f"error: engram mcp via {target}: {type(cause).__name__}: {cause} "
            "(is the server running, and is the API key valid?)"
        ) from None


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _version() -> str:
    """The installed distribution's version ("unknown" when run from an uninstalled tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("engram")
    except PackageNotFoundError:
        return "unknown"


# The sub-command table of the parser (argparse gives its type no public name).
Commands = argparse._SubParsersAction  # noqa: SLF001


def _parser() -> argparse.ArgumentParser:
    """The command line: every command and its options."""
    parser = argparse.ArgumentParser(prog="engram", description="Engram memory service")
    parser.add_argument("--version", action="version", version=f"engram {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    for add in (
        _serving_commands,
        _key_commands,
        _maintenance_commands,
        _backup_commands,
        _client_commands,
    ):
        add(commands)
    return parser


def _serving_commands(commands: Commands) -> None:
    serve = commands.add_parser("serve", help="run the HTTP API")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument(
        "--no-auth",
        dest="auth_disabled",
        action="store_const",
        const=True,
        help="serve every request as the default tenant (loopback hosts only)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes (each loads its own model); default 1",
    )
    migrate = commands.add_parser("migrate", help="apply database migrations")
    migrate.add_argument("revision", nargs="?", default="head")
    commands.add_parser(
        "distribute",
        help="on a Citus coordinator: distribute the tables by tenant (run after migrate; "
        "again after an upgrade that adds tables)",
    )


def _key_commands(commands: Commands) -> None:
    keys = commands.add_parser("keys", help="manage API keys")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = key_commands.add_parser("create", help="mint a key for a tenant")
    create.add_argument("--tenant", required=True)
    create.add_argument("--name")
    create.add_argument(
        "--read-only",
        action="store_true",
        help="the key may look but not change anything (web console)",
    )
    create.add_argument(
        "--butlers",
        metavar="NAME,NAME",
        help="limit the key to these butlers' memories (and the global "
        "ones); default: every butler of the tenant",
    )
    listing = key_commands.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--tenant")
    revoke = key_commands.add_parser("revoke", help="revoke a key by id")
    revoke.add_argument("key_id", type=uuid.UUID)


def _maintenance_commands(commands: Commands) -> None:
    reembed = commands.add_parser(
        "reembed", help="re-embed memories made by another embedding model"
    )
    reembed.add_argument(
        "--all",
        action="store_true",
        dest="every",
        help="re-embed every memory (after changing ENGRAM_EMBEDDING_PASSAGE_"
        "CHARS, ..._PASSAGE_OVERLAP or ..._CONTEXT_TURNS)",
    )
    reembed.add_argument(
        "--model",
        metavar="NAME",
        help="switch the live store to this embedding model (with the other "
        "ENGRAM_EMBEDDING_NEXT__ settings): its vectors and indexes are "
        "built beside the current ones, then searches move to it in one "
        "step; resumable; run the service with ENGRAM_EMBEDDING_NEXT__"
        "MODEL set meanwhile, so writes get both models' vectors",
    )
    reembed.add_argument(
        "--drop-previous",
        action="store_true",
        help="after a switch, drop the previous model's vectors",
    )
    commands.add_parser(
        "infer-sessions",
        help="place episodes stored without a session_id before sessions were "
        "inferred in the sessions the gap rule gives them",
    )
    commands.add_parser(
        "reindex",
        help="rebuild the keyword text of episodes of a session (the turns before each one)",
    )
    commands.add_parser(
        "reindex-text",
        help="read the keyword text of episodes, facts and "
        "rules stored before an upgrade again, each in "
        "its own language",
    )


def _backup_commands(commands: Commands) -> None:
    backup = commands.add_parser(
        "backup",
        help="take a base backup (pg_basebackup) into a directory; with "
        "ENGRAM_BACKUP__WAL_ARCHIVE_DIR the embedded server archives WAL too",
    )
    backup.add_argument("directory", type=Path, help="where base backups are kept")
    backup.add_argument(
        "--keep",
        type=int,
        choices=range(1, 1000),
        metavar="N",
        help="then delete all but the newest N base backups and the archived WAL only they needed",
    )
    restore = commands.add_parser(
        "restore",
        help="bring a new embedded data directory back from `engram backup`'s "
        "directory and the WAL archive",
    )
    restore.add_argument("directory", type=Path, help="the directory given to engram backup")
    restore.add_argument(
        "--to",
        metavar="TIME",
        help="a point in time, ISO 8601 with a zone (2026-11-25T10:00:00Z); "
        "default: the latest archived state",
    )
    restore.add_argument(
        "--pgdata",
        type=Path,
        help="the data directory to create (default: ENGRAM_DATA_DIR/pgdata); "
        "it must be missing or empty",
    )
    restore.add_argument(
        "--wal-archive",
        type=Path,
        help="where the archived WAL is (default: ENGRAM_BACKUP__WAL_ARCHIVE_"
        "DIR, else the directory the backup recorded)",
    )


def _client_commands(commands: Commands) -> None:
    openapi = commands.add_parser("openapi", help="print the OpenAPI document")
    openapi.add_argument("--output", type=Path)
    mcp = commands.add_parser(
        "mcp", help="serve MCP on stdin/stdout for desktop hosts, forwarding to a running server"
    )
    mcp.add_argument(
        "--url", help="the server's MCP endpoint (default: http://ENGRAM_HOST:ENGRAM_PORT/mcp)"
    )
    mcp.add_argument("--api-key", help="the API key (default: the ENGRAM_API_KEY variable)")
    mcp.add_argument(
        "--tools",
        help="the tool groups to serve, comma-separated: core (the "
        "default), memories, entities, admin, runs, ledger, "
        "working_memory, procedures, arcs, graph, or all",
    )
    hook_commands.add_commands(commands)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `engram` console script."""
    args = _parser().parse_args(argv)
    if (handler := getattr(args, "handler", None)) is not None:
        raise SystemExit(handler(args))  # a hook: it must start fast, without the service
    from app.core.config import Settings
    from app.core.errors import StartupRefused
    from app.telemetry.logs import configure_logging

    overrides = {
        key: value
        for key in ("host", "port", "auth_disabled")
        if (value := getattr(args, key, None)) is not None
    }
    settings = Settings(**overrides)
    # Logs go to stderr, so `engram mcp` keeps stdout for the protocol.
    configure_logging(settings.log_format)
    # Alembic's plugin and migration chatter is detail, not start-up news.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    # SIGTERM ends any command like Ctrl-C does, so exit handlers (the embedded PostgreSQL's
    # stop) run; `serve` has uvicorn's own handlers, which end the lifespan the same way.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        _run(settings, args)
    except StartupRefused as refused:
        raise SystemExit(f"engram: refused to start: {refused}") from None


def _run(settings: Settings, args: argparse.Namespace) -> None:
    """Run the chosen command."""
    if args.command == "serve":
        _serve(settings, args.workers)
    elif args.command == "migrate":
        _migrate(settings, args.revision)
    elif args.command == "distribute":
        _distribute(settings)
    elif args.command == "keys":
        _keys(settings, args)
    elif args.command == "reembed":
        _reembed(settings, args)
    elif args.command == "reindex":
        _reindex(settings)
    elif args.command == "reindex-text":
        _reindex_text(settings)
    elif args.command == "infer-sessions":
        _infer_sessions(settings)
    elif args.command == "backup":
        _backup(settings, args.directory.expanduser().resolve(), args.keep)
    elif args.command == "restore":
        _restore(settings, args)
    elif args.command == "mcp":
        _mcp(settings, args.url, args.api_key, args.tools)
    else:
        _openapi(args.output)


if __name__ == "__main__":
    main()
