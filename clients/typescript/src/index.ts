/**
 * TypeScript client for Engram, the long-term memory service for AI agents.
 *
 *     const engram = new EngramClient({ baseUrl: "http://127.0.0.1:8000", apiKey });
 *     await engram.storeFact({ subject: "Ann", predicate: "city", content: "Ann lives in Lyon." });
 *     const { results } = await engram.search({ query: "Where does Ann live?" });
 */
export { EngramClient } from "./client.js";
export type { EngramClientOptions, WaitOptions } from "./client.js";
export { EngramError, JobTimeoutError } from "./errors.js";
export { DEFAULT_RETRY } from "./http.js";
export type { RetryOptions } from "./http.js";
export type * from "./types.js";
export type { components, operations, paths } from "./generated/openapi.js";
