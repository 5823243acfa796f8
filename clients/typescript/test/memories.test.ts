// Episodes, facts, rules and their feedback, search, recall and context against a live Engram.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { liveClient, unique } from "./support.js";

const engram = liveClient();

describe("episodes", () => {
  it("stores one episode and reads it back", async () => {
    const butler = unique("chat");
    const stored = await engram.storeEpisode({ content: "Ann: I moved to Lyon last spring",
      butler, session_id: "thread-1", metadata: { channel: "sms" } });
    const read = await engram.getEpisode(stored.id);
    assert.equal(read.content, "Ann: I moved to Lyon last spring");
    assert.equal(read.butler, butler);
    assert.equal(read.session_id, "thread-1");
    assert.deepEqual(read.metadata, { channel: "sms" });
  });

  it("stores a batch in order and lists it", async () => {
    const butler = unique("batch");
    const stored = await engram.storeEpisodes([
      { content: "Bo: I like green tea", butler },
      { content: "Bo: and oolong on Sundays", butler },
    ]);
    assert.deepEqual(stored.map((episode) => episode.content),
      ["Bo: I like green tea", "Bo: and oolong on Sundays"]);
    const page = await engram.listEpisodes({ butler });
    assert.deepEqual(new Set(page.items.map((episode) => episode.id)),
      new Set(stored.map((episode) => episode.id)));
  });
});

describe("facts", () => {
  it("supersedes an older fact with the same key and keeps the history", async () => {
    const scope = unique("facts");
    const first = await engram.storeFact({ subject: "Ann", predicate: "city",
      content: "Ann lives in Paris.", scope });
    const second = await engram.storeFact({ subject: "ann", predicate: "City",
      content: "Ann lives in Lyon.", scope });
    assert.equal(second.supersedes_id, first.id);
    assert.equal((await engram.getFact(first.id)).validity, "superseded");
    const history = await engram.factHistory(second.id);
    assert.deepEqual(history.map((fact) => fact.content),
      ["Ann lives in Lyon.", "Ann lives in Paris."]);
    const active = await engram.listFacts({ scope });
    assert.deepEqual(active.items.map((fact) => fact.id), [second.id]);
  });

  it("deletes a fact with its whole history", async () => {
    const scope = unique("gone");
    await engram.storeFact({ subject: "Cy", predicate: "pet", content: "Cy has a cat.", scope });
    const latest = await engram.storeFact({ subject: "Cy", predicate: "pet",
      content: "Cy has a dog.", scope });
    await engram.deleteFact(latest.id);
    const left = await engram.listFacts({ scope, validity: null });
    assert.deepEqual(left.items, []);
  });
});

describe("rules and feedback", () => {
  it("counts helpful and harmful feedback on a rule", async () => {
    const rule = await engram.storeRule({ content: "Greet Ann in French.",
      scope: unique("rules") });
    assert.equal(rule.maturity, "candidate");
    const helped = await engram.markHelpful(rule.id);
    assert.equal(helped.success_count, 1);
    const harmed = await engram.markHarmful(rule.id, { reason: "Ann asked for English" });
    assert.equal(harmed.harmful_count, 1);
    assert.equal((await engram.getRule(rule.id)).applied_count, 2);
  });
});

describe("retrieval", () => {
  it("finds a fact by meaning, recalls it and puts it in the context block", async () => {
    const scope = unique("agent");
    const fact = await engram.storeFact({ subject: "Dee", predicate: "drink",
      content: "Dee drinks her coffee black, no sugar.", scope });
    await engram.storeFact({ subject: "Dee", predicate: "sport",
      content: "Dee plays volleyball on Thursdays.", scope });

    const found = await engram.search({ query: "How does Dee take her coffee?", scope,
      types: ["fact"], limit: 5 });
    assert.equal(found.mode, "hybrid");
    assert.equal(found.results[0]?.id, fact.id);

    const recalled = await engram.recall({ topic: "Dee's coffee", scope });
    assert.ok(recalled.results.some((hit) => hit.id === fact.id));

    const block = await engram.context({ trigger_prompt: "Make Dee a coffee", butler: scope });
    assert.match(block.context, /Dee drinks her coffee black/);
  });
});

describe("filters", () => {
  it("searches and lists only what a filter admits, in the database", async () => {
    const butler = unique("filtered");
    const stored = await engram.storeEpisodes([
      { content: "Eve: I booked the train to Porto", butler, metadata: { topic: "travel" } },
      { content: "Eve: the train to work was late", butler, metadata: { topic: "work" } },
    ]);
    const travel = stored[0]!;
    const found = await engram.search({ query: "Eve train", types: ["episode"],
      filter: { butler, "metadata.topic": "travel" } });
    assert.deepEqual(found.results.map((hit) => hit.id), [travel.id]);
    const page = await engram.listEpisodes({ filter: { butler, "metadata.topic": { $ne: "work" } } });
    assert.deepEqual(page.items.map((episode) => episode.id), [travel.id]);
    await assert.rejects(engram.listEpisodes({ filter: { "metadata.topic": { $near: 1 } } }),
      (error: { status?: number; detail?: string | null }) =>
        error.status === 422 && /filter\.metadata\.topic\.\$near/.test(String(error.detail)));
  });
});
