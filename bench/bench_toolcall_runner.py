"""Runner throughput: requests/s of ``agentgauge.toolcall.runner`` against the ``openai`` SDK.

Both clients send the same tool-calling requests to the same scripted chat-completions server on
127.0.0.1 (the tests' server, in its own process so that it does not share this one's GIL), at
the same concurrency, in one run. Usage::

    PYTHONPATH=src python bench/bench_toolcall_runner.py [--n 400]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI
from rich.console import Console
from rich.table import Table

from agentgauge.toolcall.runner import (
    ChatRequest,
    EndpointConfig,
    HttpChatBackend,
    RunSettings,
    run_chat,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from toolcall_server import WEATHER_TOOL, scripted_server


def _requests(n: int) -> list[ChatRequest]:
    return [
        ChatRequest(
            id=str(i),
            messages=[{"role": "user", "content": "script:weather"}],
            tools=[WEATHER_TOOL],
        )
        for i in range(n)
    ]


async def _ours(base: str, requests: list[ChatRequest], concurrency: int) -> float:
    config = EndpointConfig(base_url=base, model="scripted", api_key_env="BENCH_UNSET_KEY")
    start = time.perf_counter()
    async with HttpChatBackend(config, concurrency=concurrency) as backend:
        preds = await run_chat(
            requests, backend, RunSettings(concurrency=concurrency), progress=False
        )
    elapsed = time.perf_counter() - start
    assert all(p.error is None for p in preds), [p.error for p in preds if p.error][:3]
    return len(requests) / elapsed


async def _openai(base: str, requests: list[ChatRequest], concurrency: int) -> float:
    client = AsyncOpenAI(base_url=base + "/v1", api_key="unused", max_retries=4, timeout=120)
    gate = asyncio.Semaphore(concurrency)

    async def one(request: ChatRequest) -> Any:
        async with gate:
            return await client.chat.completions.create(
                model="scripted",
                messages=request.messages,  # type: ignore[arg-type]
                tools=request.tools,  # type: ignore[arg-type]
                tool_choice="auto",
                temperature=0,
                seed=0,
            )

    start = time.perf_counter()
    done = await asyncio.gather(*(one(r) for r in requests))
    elapsed = time.perf_counter() - start
    await client.close()
    assert all(c.choices[0].message.tool_calls for c in done)
    return len(requests) / elapsed


def _serve(port_queue: mp.Queue[str], stop: Any) -> None:
    with scripted_server() as (base, _):
        port_queue.put(base)
        stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=400, help="requests per measurement")
    parser.add_argument("--repeat", type=int, default=3, help="measurements kept: the best")
    args = parser.parse_args()
    requests = _requests(args.n)
    title = f"tool-calling requests/s (best of {args.repeat}), {args.n} requests, local server"
    table = Table(title=title)
    for column in ("concurrency", "agentgauge runner", "openai SDK", "ratio"):
        table.add_column(column, justify="right")
    ctx = mp.get_context("spawn")
    port_queue: mp.Queue[str] = ctx.Queue()
    stop = ctx.Event()
    server = ctx.Process(target=_serve, args=(port_queue, stop), daemon=True)
    server.start()
    base = port_queue.get(timeout=60)
    try:
        asyncio.run(_ours(base, requests[:20], 4))  # warm-up
        asyncio.run(_openai(base, requests[:20], 4))
        for concurrency in (1, 8, 32):
            ours = theirs = 0.0
            for _ in range(args.repeat):  # interleaved, so that load on the machine hits both
                ours = max(ours, asyncio.run(_ours(base, requests, concurrency)))
                theirs = max(theirs, asyncio.run(_openai(base, requests, concurrency)))
            table.add_row(str(concurrency), f"{ours:.0f}", f"{theirs:.0f}", f"{ours / theirs:.2f}")
    finally:
        stop.set()
        server.join(timeout=10)
    Console().print(table)


if __name__ == "__main__":
    main()
