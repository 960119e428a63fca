"""``agentgauge view``: browse the runs of a store in a local web app."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentgauge.cli._common import DbOption, console, require_store, usage_error


def view(
    db: DbOption = Path("agentgauge.db"),
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: any free one).")
    ] = 7860,
) -> None:
    """Browse the store's runs in your browser (a local web app).

    Serves on 127.0.0.1 only, with every asset shipped in the package (nothing is fetched
    from elsewhere). Stop it with Ctrl-C.
    """
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise usage_error(
            f"the viewer needs {exc.name}, in the 'view' extra: pip install 'agentgauge[view]'"
        ) from None
    from agentgauge.web.app import bind, serve, url_of

    require_store(db)
    sock = bind(port)
    console.print(
        f"agentgauge viewer of {db}: {url_of(sock)} (Ctrl-C to stop)", highlight=False, markup=False
    )
    try:
        serve(db, sock)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
