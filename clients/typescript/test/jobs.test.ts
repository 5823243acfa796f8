// Jobs (start, wait), erasure and export against a live Engram with a worker running.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { EngramClient, JobTimeoutError } from "../src/index.js";
import { liveClient, scriptedServer, unique } from "./support.js";

const engram = liveClient();

describe("jobs", () => {
  it("starts a decay sweep and waits for its result", async () => {
    const queued = await engram.startJob("decay");
    assert.equal(queued.kind, "decay");
    const done = await engram.waitForJob(queued.id, { timeoutMs: 30_000, intervalMs: 100 });
    assert.equal(done.status, "succeeded");
    assert.ok(done.result !== null && typeof done.result === "object");
  });

  it("starts a job with its parameters", async () => {
    const queued = await engram.startJob("cleanup", { max_entries: 5000 });
    const done = await engram.waitForJob(queued.id, { timeoutMs: 30_000, intervalMs: 100 });
    assert.equal(done.status, "succeeded");
    assert.equal(done.params.max_entries, 5000);
  });

  it("gives up waiting after the bound", async (t) => {
    const job = { id: "4f5c0d6e-0000-4000-8000-000000000001", kind: "decay", status: "running" };
    const { url, arrivals } = await scriptedServer(t, () => ({ status: 200, body: job }));
    const client = new EngramClient({ baseUrl: url });
    const started = Date.now();
    await assert.rejects(client.waitForJob(job.id, { timeoutMs: 300, intervalMs: 50 }),
      (error: unknown) => error instanceof JobTimeoutError && error.jobId === job.id
        && error.lastStatus === "running");
    assert.ok(Date.now() - started < 2000);
    assert.ok(arrivals.length >= 3 && arrivals.length <= 8, `${arrivals.length} polls`);
  });
});

describe("data rights", () => {
  it("exports every version of a fact, erases the scope and imports it back", async () => {
    const scope = unique("rights");
    const old = await engram.storeFact({ subject: "Fay", predicate: "city",
      content: "Fay lives in Rome.", scope });
    const current = await engram.storeFact({ subject: "Fay", predicate: "city",
      content: "Fay lives in Turin.", scope });

    const exported = (await engram.exportRecords())
      .filter((record) => record.kind === "fact" && record.scope === scope);
    assert.deepEqual(new Set(exported.map((record) => record.id)), new Set([old.id, current.id]));

    const erasure = await engram.requestErasure({ scope });
    const receipt = await engram.waitForJob(erasure.id, { timeoutMs: 30_000, intervalMs: 100 });
    assert.equal(receipt.status, "succeeded");
    assert.deepEqual((await engram.listFacts({ scope, validity: null })).items, []);

    const imported = await engram.importRecords(exported);
    assert.equal(imported.imported.fact, 2);
    assert.equal((await engram.getFact(current.id)).content, "Fay lives in Turin.");
  });
});
