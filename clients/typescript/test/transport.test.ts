// A request that gets no answer throws an EngramError naming the method and URL.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";

import { EngramClient, EngramError } from "../src/index.js";

/** The URL of a local port nothing listens on. */
async function closedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

describe("no answer", () => {
  it("is an EngramError naming the method and URL when nothing listens", async () => {
    const baseUrl = await closedUrl();
    const engram = new EngramClient({ baseUrl, retry: { retries: 0 } });
    await assert.rejects(engram.search({ query: "anything" }), (error: unknown) => {
      assert.ok(error instanceof EngramError, String(error));
      assert.equal(error.status, 0);
      assert.equal(error.title, "Connection failed");
      assert.match(error.message, new RegExp(`POST ${baseUrl}/v1/search: fetch failed`));
      assert.ok(error.cause instanceof Error);
      return true;
    });
  });

  it("is an EngramError naming the method and URL when the answer is too slow", async (t) => {
    const server = createServer(() => {});
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    t.after(() => server.close());
    const { port } = server.address() as AddressInfo;
    const baseUrl = `http://127.0.0.1:${port}`;
    const engram = new EngramClient({ baseUrl, timeoutMs: 200, retry: { retries: 0 } });
    await assert.rejects(engram.getFact("00000000-0000-4000-8000-000000000000"),
      (error: unknown) => {
        assert.ok(error instanceof EngramError, String(error));
        assert.equal(error.title, "Timed out");
        assert.match(error.message, new RegExp(`GET ${baseUrl}/v1/facts/0000`));
        return true;
      });
  });
});
