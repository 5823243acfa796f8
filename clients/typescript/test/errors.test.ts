// Problem details from a live Engram, and retries of busy answers from a scripted server.
import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";

import { EngramClient, EngramError } from "../src/index.js";
import { liveClient, scriptedServer, unique } from "./support.js";

const engram = liveClient();

describe("problem details", () => {
  it("names the invalid field", async () => {
    await assert.rejects(engram.storeFact({ subject: "Ann", predicate: "city", content: "  ",
      scope: unique("bad") }), (error: unknown) => {
      assert.ok(error instanceof EngramError);
      assert.equal(error.status, 422);
      assert.equal(error.title, "Invalid input");
      assert.equal(error.field, "body.content");
      assert.match(error.detail ?? "", /body\.content/);
      assert.ok(error.requestId);
      return true;
    });
  });

  it("is a 404 for an unknown id and a 401 without a key", async () => {
    await assert.rejects(engram.getFact("00000000-0000-4000-8000-000000000000"),
      (error: unknown) => error instanceof EngramError && error.status === 404);
    const anonymous = new EngramClient({ baseUrl: process.env.ENGRAM_URL });
    await assert.rejects(anonymous.search({ query: "anything" }),
      (error: unknown) => error instanceof EngramError && error.status === 401);
  });
});

/** A server answering with `statuses` in turn, then 200 with an empty search answer. */
function scripted(t: TestContext, statuses: number[], retryAfter: string | null) {
  return scriptedServer(t, (n) => {
    const status = statuses[n] ?? 200;
    if (status === 200) return { status, body: { mode: "hybrid", results: [] } };
    const headers: Record<string, string> = retryAfter === null ? {}
      : { "Retry-After": retryAfter };
    return { status, headers, body: { type: "about:blank", title: "Too Many Requests", status, detail: "slow down" } };
  });
}

describe("retries", () => {
  it("waits as long as Retry-After says, then succeeds", async (t) => {
    const { url, arrivals, authorizations } = await scripted(t, [429, 503], "1");
    const client = new EngramClient({ baseUrl: url, apiKey: "egk_test",
      retry: { retries: 3, baseDelayMs: 1 } });
    const answer = await client.search({ query: "x" });
    assert.deepEqual(answer.results, []);
    assert.equal(arrivals.length, 3);
    assert.deepEqual(authorizations, Array(3).fill("Bearer egk_test"));
    assert.ok(arrivals[1]! - arrivals[0]! >= 950, "waited about a second before the retry");
    assert.ok(arrivals[2]! - arrivals[1]! >= 950);
  });

  it("never waits longer than maxDelayMs, whatever Retry-After says", async (t) => {
    const { url, arrivals } = await scripted(t, [429], "3600");
    const client = new EngramClient({ baseUrl: url, retry: { maxDelayMs: 50 } });
    await client.search({ query: "x" });
    assert.equal(arrivals.length, 2);
    assert.ok(arrivals[1]! - arrivals[0]! < 1000);
  });

  it("stops after the bound and throws the last problem", async (t) => {
    const { url, arrivals } = await scripted(t, [429, 429, 429, 429], null);
    const client = new EngramClient({ baseUrl: url, retry: { retries: 2, baseDelayMs: 1 } });
    await assert.rejects(client.search({ query: "x" }),
      (error: unknown) => error instanceof EngramError && error.status === 429
        && error.detail === "slow down");
    assert.equal(arrivals.length, 3);
  });

  it("does not retry a 422", async (t) => {
    const { url, arrivals } = await scripted(t, [422], null);
    const client = new EngramClient({ baseUrl: url, retry: { baseDelayMs: 1 } });
    await assert.rejects(client.search({ query: "x" }),
      (error: unknown) => error instanceof EngramError && error.status === 422);
    assert.equal(arrivals.length, 1);
  });
});
