"""EngramStore under LangGraph's large async batch: M x N x 6 store calls started together
(put, get, list namespaces, search without a query, put again, delete), as LangGraph's own
store tests send them. Prints the wall time and the HTTP requests the store sent.

    python -m bench.speed.store_batch --base-url http://127.0.0.1:8732 [--api-key egk_...] \
        [-n 100 -m 10]
"""

import argparse
import asyncio
import time
from collections import Counter
from typing import Any

from engram_client.langgraph import EngramStore


async def run(base_url: str, api_key: str | None, n: int, m: int) -> None:
    """Send the calls, await them together, and print what it took."""
    async with EngramStore(base_url, api_key=api_key) as store:
        sent: Counter[str] = Counter()

        async def count(request: Any) -> None:
            sent[f"{request.method} {request.url.path}"] += 1

        store.aclient._http.event_hooks["request"].append(count)
        calls = []
        for j in range(m):
            namespace = ("test", "foo", "bar", "baz", str(j % 2))
            for i in range(n):
                calls += [
                    store.aput(namespace, f"key{i}", {"foo": f"bar{i}"}),
                    store.aget(namespace, f"key{i}"),
                    store.alist_namespaces(prefix=None, max_depth=j + 1),
                    store.asearch(("test",)),
                    store.aput(namespace, f"key{i}", {"foo": f"bar{i}"}),
                    store.adelete(namespace, f"key{i}"),
                ]
        started = time.perf_counter()
        results = await asyncio.gather(*calls)
        elapsed = time.perf_counter() - started
    print(f"{len(results)} operations in {elapsed:.2f} s; {sum(sent.values())} HTTP requests")
    for route, times in sent.most_common():
        print(f"  {times:5d}  {route}")


def main() -> None:
    """Parse the arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8732")
    parser.add_argument("--api-key")
    parser.add_argument("-n", type=int, default=100, help="keys per round")
    parser.add_argument("-m", type=int, default=10, help="rounds")
    args = parser.parse_args()
    asyncio.run(run(args.base_url, args.api_key, args.n, args.m))


if __name__ == "__main__":
    main()
