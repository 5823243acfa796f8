// Engram's memory tools in the Vercel AI SDK: runs of a scripted mock model against a live Engram.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";

import { engramTools } from "../src/ai.js";
import { liveClient, unique } from "./support.js";

const engram = liveClient();
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** A model that calls `toolName` with `input`, then answers with the tool's output as JSON. */
function callsThenReports(toolName: string, input: Record<string, unknown>): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const last = prompt[prompt.length - 1];
      if (last?.role === "tool") {
        const [part] = last.content;
        const output = part?.type === "tool-result" ? part.output : undefined;
        const value = output?.type === "json" ? output.value : output;
        return { content: [{ type: "text", text: JSON.stringify(value) }],
          finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
      }
      return { content: [{ type: "tool-call", toolCallId: "call-1", toolName,
        input: JSON.stringify(input) }],
      finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] };
    },
  });
}

async function run(model: MockLanguageModelV3, butler: string, prompt: string): Promise<unknown> {
  const { text } = await generateText({ model, tools: engramTools(engram, { butler }),
    stopWhen: stepCountIs(3), prompt });
  return JSON.parse(text);
}

describe("engramTools", () => {
  it("lets a later run find what an earlier one remembered", async () => {
    const butler = unique("ai");
    const stored = await run(callsThenReports("remember", { subject: "Ann",
      predicate: "favourite colour", content: "Ann's favourite colour is green" }), butler,
      "Remember that Ann likes green") as { id: string; content: string };
    assert.equal(stored.content, "Ann's favourite colour is green");

    for (const [toolName, input] of [["search", { query: "What colour does Ann like?" }],
      ["recall", { topic: "Ann's favourite colour", limit: 3 }]] as const) {
      const hits = await run(callsThenReports(toolName, input), butler,
        "What colour does Ann like?");
      assert.deepEqual((hits as unknown[])[0], { type: "fact", id: stored.id,
        content: "Ann's favourite colour is green" });
    }
    const elsewhere = await run(callsThenReports("search", { query: "What colour does Ann like?" }),
      unique("other"), "What colour does Ann like?");
    assert.deepEqual(elsewhere, []);
  });
});
