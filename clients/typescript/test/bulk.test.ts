// Bulk facts, the bound on requests in flight, and Retry-After, against a live Engram.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { EngramClient, EngramError } from "../src/index.js";
import { liveClient, unique } from "./support.js";

const engram = liveClient();

describe("bulk facts", () => {
  it("stores, reads and deletes in chunks with a result per item", async () => {
    const scope = unique("bulk");
    const facts = Array.from({ length: 260 }, (_, n) => ({ subject: `item ${n}`,
      predicate: "is", content: `number ${n}`, scope }));
    const stored = await engram.storeFacts(facts); // three requests
    assert.deepEqual(stored.map((r) => r.status), facts.map(() => 201));
    const refs = [{ scope, subject: "ITEM 259", predicate: "is" }, { scope, subject: "nobody",
      predicate: "is" }];
    const got = await engram.getFacts(Array.from({ length: 600 }, () => refs).flat());
    assert.equal(got.length, 1200);
    assert.equal(got[0]?.status, 200);
    assert.equal(got[0]?.fact?.content, "number 259");
    assert.equal(got[1]?.status, 404);
    const deleted = await engram.deleteFacts(stored.map((r) => ({ id: r.fact.id })));
    assert.deepEqual(deleted.map((r) => r.status), facts.map(() => 204));
    assert.equal((await engram.getFacts(refs.slice(0, 1)))[0]?.status, 404);
  });

  it("refuses the whole request and names the item's field", async () => {
    const scope = unique("bulk-bad");
    await assert.rejects(engram.storeFacts([{ subject: "a", predicate: "b", content: "ok", scope },
      { subject: "a", predicate: "b", content: " ", scope }]), (error: unknown) => {
      assert.ok(error instanceof EngramError);
      assert.equal(error.status, 422);
      assert.equal(error.field, "body.items.1.content");
      return true;
    });
    const left = await engram.listFacts({ scope });
    assert.deepEqual(left.items, []);
  });
});

/** A live client whose fetch counts the requests it has in flight. */
function counted(options: { maxInFlight?: number; baseUrl?: string; retries?: number }) {
  const seen = { now: 0, most: 0, answers: new Map<number, number>() };
  const client = new EngramClient({
    baseUrl: options.baseUrl ?? process.env.ENGRAM_URL,
    apiKey: process.env.ENGRAM_API_KEY,
    maxInFlight: options.maxInFlight,
    retry: { retries: options.retries ?? 2, baseDelayMs: 50, maxDelayMs: 2000 },
    fetch: async (input, init) => {
      seen.now++;
      seen.most = Math.max(seen.most, seen.now);
      try {
        const response = await fetch(input, init);
        seen.answers.set(response.status, (seen.answers.get(response.status) ?? 0) + 1);
        return response;
      } finally {
        seen.now--;
      }
    },
  });
  return { client, seen };
}

describe("requests in flight", () => {
  it("are at most maxInFlight", async () => {
    const { client, seen } = counted({ maxInFlight: 3 });
    const answers = await Promise.all(Array.from({ length: 40 },
      () => client.listFacts({ limit: 1 })));
    assert.equal(answers.length, 40);
    assert.ok(seen.most >= 1 && seen.most <= 3, `most in flight: ${seen.most}`);
  });

  it("past the rate limit wait as Retry-After says, then succeed", async () => {
    // The same database served with 5 requests a second per key after a burst of 5.
    const baseUrl = process.env.ENGRAM_THROTTLED_URL;
    assert.ok(baseUrl, "set ENGRAM_THROTTLED_URL to an Engram with a low rate limit");
    const { client, seen } = counted({ maxInFlight: 10, baseUrl, retries: 12 });
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 20 },
      () => client.listFacts({ limit: 1 })));
    assert.equal(answers.length, 20);
    assert.ok((seen.answers.get(429) ?? 0) > 0, "the rate limit was never reached");
    assert.equal(seen.answers.get(200), 20);
    // 5 at once, then 5 a second: the other 15 needed about 3 s of waiting.
    assert.ok(Date.now() - started >= 2000, `took ${Date.now() - started} ms`);
  });
});
