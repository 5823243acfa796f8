// What every live test needs: the server named by the environment and unique names.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestContext } from "node:test";

import { EngramClient } from "../src/index.js";

/** A client of the live Engram named by ENGRAM_URL and ENGRAM_API_KEY. */
export function liveClient(): EngramClient {
  const baseUrl = process.env.ENGRAM_URL;
  const apiKey = process.env.ENGRAM_API_KEY;
  if (!baseUrl || !apiKey) {
    throw new Error("set ENGRAM_URL and ENGRAM_API_KEY to a running Engram and one of its keys");
  }
  return new EngramClient({ baseUrl, apiKey, retry: { retries: 2, baseDelayMs: 50 } });
}

/** A name no other test uses, so tests sharing one tenant never see each other's rows. */
export function unique(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** A local HTTP server answering each request with `answer(n)` (n counts from 0); records
 * when each request came and its Authorization header. Closed when the test `t` ends. */
export async function scriptedServer(t: TestContext, answer: (n: number) => { status: number;
  headers?: Record<string, string>; body: unknown }): Promise<{ url: string;
  arrivals: number[]; authorizations: (string | undefined)[] }> {
  const arrivals: number[] = [];
  const authorizations: (string | undefined)[] = [];
  const server = createServer((request, response) => {
    request.resume();
    const { status, headers, body } = answer(arrivals.length);
    arrivals.push(Date.now());
    authorizations.push(request.headers.authorization);
    const type = status < 400 ? "application/json" : "application/problem+json";
    response.writeHead(status, { "Content-Type": type, ...headers });
    response.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, arrivals, authorizations };
}
