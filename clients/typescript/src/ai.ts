/**
 * Memory tools for the Vercel AI SDK (`ai`), imported from `engram-client/ai`:
 *
 *     const { text } = await generateText({ model, tools: engramTools(engram, { butler: "chat" }),
 *       stopWhen: stepCountIs(3), prompt: "What colour does Ann like?" });
 *
 * `ai` and `zod` are peer dependencies of this entry point only.
 */
import { tool } from "ai";
import { z } from "zod";

import type { EngramClient } from "./client.js";

export interface EngramToolsOptions {
  /** Keeps the tools to the facts and rules of scope "global" or this butler and the
   * butler's episodes; `remember` stores its facts in the butler's scope. */
  butler?: string;
  /** Hits a search or recall returns unless the model asks for another number (5). */
  limit?: number;
}

/** One hit as the model reads it. */
export interface MemoryHit {
  type: string;
  id: string;
  content: string | null;
}

const SEARCH = "Search long-term memory (past conversations, facts and rules) by meaning and " +
  "keywords. Use it to look up what was said or learned before.";
const RECALL = "Recall the facts and rules most worth knowing about a topic before you act, best " +
  "first.";
const REMEMBER = "Remember a durable fact as subject / predicate / content, e.g. ('Ann', " +
  "'favourite colour', 'Ann's favourite colour is green'). A newer fact with the same subject " +
  "and predicate replaces the old one, so store corrections the same way.";

const limitField = z.number().int().min(1).max(50).optional()
  .describe("How many memories to return.");

/** `search`, `recall` and `remember` tools for `generateText` / `streamText`. */
export function engramTools(engram: EngramClient, options: EngramToolsOptions = {}) {
  const scope = options.butler;
  const defaultLimit = options.limit ?? 5;
  const hits = (results: { memory_type: string; id: string; content?: string | null }[]) =>
    results.map((hit): MemoryHit => ({ type: hit.memory_type, id: hit.id,
      content: hit.content ?? null }));
  return {
    search: tool({
      description: SEARCH,
      inputSchema: z.object({ query: z.string().min(1), limit: limitField }),
      execute: async ({ query, limit }) =>
        hits((await engram.search({ query, scope, limit: limit ?? defaultLimit })).results),
    }),
    recall: tool({
      description: RECALL,
      inputSchema: z.object({ topic: z.string().min(1), limit: limitField }),
      execute: async ({ topic, limit }) =>
        hits((await engram.recall({ topic, scope, limit: limit ?? defaultLimit })).results),
    }),
    remember: tool({
      description: REMEMBER,
      inputSchema: z.object({ subject: z.string().min(1), predicate: z.string().min(1),
        content: z.string().min(1) }),
      execute: async ({ subject, predicate, content }) => {
        const fact = await engram.storeFact({ subject, predicate, content,
          ...(scope ? { scope, source_butler: scope } : {}) });
        return { id: fact.id, subject: fact.subject, predicate: fact.predicate,
          content: fact.content };
      },
    }),
  };
}
