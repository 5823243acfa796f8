import { JobTimeoutError } from "./errors.js";
import { DEFAULT_RETRY, Http, type QueryValue, type RetryOptions } from "./http.js";
import type {
  ContextRequest, ContextResponse, Entity, EntityCreate, EntityQuery, Episode, EpisodeCreate,
  EpisodeQuery, ExportRecord, Fact, FactCreate, FactDeleteResult, FactGetResult, FactPutResult,
  FactQuery, FactRef, HarmfulFeedback, HelpfulFeedback,
  ImportResult, Job, JobKind, JobParams, Link, LinkCreate, LinkQuery, LinkSelector,
  MergeResult, Page, RecallRequest, RecallResponse, ResolveCandidate, ResolveRequest, Rule,
  RuleCreate, RuleQuery, SearchRequest, SearchResponse, ErasureRequest, Arc, ArcQuery,
  Procedure, ProcedureQuery, Run, RunQuery,
} from "./types.js";

export interface EngramClientOptions {
  /** Where Engram listens (default `http://127.0.0.1:8000`). */
  baseUrl?: string;
  /** An API key (`engram keys create --tenant NAME`), sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Time allowed for one attempt of a request (default 30000 ms). */
  timeoutMs?: number;
  /** Retries of 429 and 503 answers; see `RetryOptions`. */
  retry?: Partial<RetryOptions>;
  /** Requests this client has in flight at once (default 10); the rest wait their turn. */
  maxInFlight?: number;
  /** The `fetch` to use (default: the platform's). */
  fetch?: typeof fetch;
  /** Headers sent with every request (e.g. `X-Request-ID`). */
  headers?: Record<string, string>;
}

export interface WaitOptions {
  /** Give up after this long (default 60000 ms) with a `JobTimeoutError`. */
  timeoutMs?: number;
  /** Time between two looks at the job (default 500 ms). */
  intervalMs?: number;
}

const FINISHED = new Set(["succeeded", "failed"]);
const DEFAULT_MAX_IN_FLIGHT = 10;
/** Items one bulk read or delete carries, and one bulk store (the server's limits). */
const BULK_ITEMS = 1000;
const BULK_STORE_ITEMS = 100;
const NDJSON = "application/x-ndjson";

/** A client of Engram's REST API (`/v1`). Every method returns the server's JSON answer,
 * typed from the OpenAPI document, or throws an `EngramError` with the problem details. */
export class EngramClient {
  private readonly http: Http;

  constructor(options: EngramClientOptions = {}) {
    this.http = new Http({
      baseUrl: options.baseUrl ?? "http://127.0.0.1:8000",
      apiKey: options.apiKey,
      timeoutMs: options.timeoutMs ?? 30_000,
      retry: { ...DEFAULT_RETRY, ...options.retry },
      maxInFlight: options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
      headers: options.headers ?? {},
    });
  }

  /** Any call of the API, for routes this client has no method for. */
  request<T>(method: string, path: string, options: { query?: Record<string, QueryValue>;
    json?: unknown } = {}): Promise<T> {
    return this.http.call(method, path, options) as Promise<T>;
  }

  // Episodes: short-lived observations of a session.

  /** Store one observation. */
  storeEpisode(episode: EpisodeCreate): Promise<Episode> {
    return this.request("POST", "/v1/episodes", { json: episode });
  }

  /** Store many observations in one transaction (all or none). */
  async storeEpisodes(episodes: EpisodeCreate[]): Promise<Episode[]> {
    const batch = await this.request<{ items: Episode[] }>("POST", "/v1/episodes/batch",
      { json: { items: episodes } });
    return batch.items;
  }

  getEpisode(id: string): Promise<Episode> {
    return this.request("GET", `/v1/episodes/${enc(id)}`);
  }

  listEpisodes(query: EpisodeQuery = {}): Promise<Page<Episode>> {
    return this.request("GET", "/v1/episodes", { query: withFilterText(query) });
  }

  /** Delete an episode for good. */
  async deleteEpisode(id: string): Promise<void> {
    await this.request("DELETE", `/v1/episodes/${enc(id)}`);
  }

  // Facts: subject/predicate knowledge; a newer fact with the same key supersedes the old.

  /** Store a fact; an active fact with the same key becomes `superseded`. */
  storeFact(fact: FactCreate): Promise<Fact> {
    return this.request("POST", "/v1/facts", { json: fact });
  }

  getFact(id: string): Promise<Fact> {
    return this.request("GET", `/v1/facts/${enc(id)}`);
  }

  listFacts(query: FactQuery = {}): Promise<Page<Fact>> {
    return this.request("GET", "/v1/facts", { query: withFilterText(query) });
  }

  /** Every version of the fact's key, newest first. */
  factHistory(id: string): Promise<Fact[]> {
    return this.request("GET", `/v1/facts/${enc(id)}/history`);
  }

  /** Retract a fact: it stays, but search and recall no longer show it. */
  forgetFact(id: string): Promise<Fact> {
    return this.request("POST", `/v1/facts/${enc(id)}/forget`);
  }

  /** Delete a fact and every version of its history for good. */
  async deleteFact(id: string): Promise<void> {
    await this.request("DELETE", `/v1/facts/${enc(id)}`);
  }

  /** Store facts in order, 100 a request, each request one transaction: all or none (a
   * refused item throws an `EngramError` naming `body.items.<i>.<field>`; earlier requests
   * stay stored). One result per item: status 201 (new version) or 200 (confirmed). */
  async storeFacts(facts: FactCreate[]): Promise<FactPutResult[]> {
    return this.inChunks("/v1/facts/bulk", facts, BULK_STORE_ITEMS);
  }

  /** Read facts by `{ id }` or key `{ scope, subject, predicate }`, 1000 a request. One
   * result per ref: status 200 with the fact, or 404. */
  async getFacts(refs: FactRef[]): Promise<FactGetResult[]> {
    return this.inChunks("/v1/facts/bulk/get", refs, BULK_ITEMS);
  }

  /** Delete facts (each with its history) by id or key, 1000 a request. One result per ref:
   * status 204 with `deleted_ids`, or 404 when there was none. */
  async deleteFacts(refs: FactRef[]): Promise<FactDeleteResult[]> {
    return this.inChunks("/v1/facts/bulk/delete", refs, BULK_ITEMS);
  }

  private async inChunks<I, R>(path: string, items: I[], size: number): Promise<R[]> {
    const results: R[] = [];
    for (let start = 0; start < items.length; start += size) {
      const answer = await this.request<{ items: R[] }>("POST", path,
        { json: { items: items.slice(start, start + size) } });
      results.push(...answer.items);
    }
    return results;
  }

  // Rules: behavioural guidance whose maturity follows feedback.

  /** Store a candidate rule. */
  storeRule(rule: RuleCreate): Promise<Rule> {
    return this.request("POST", "/v1/rules", { json: rule });
  }

  getRule(id: string): Promise<Rule> {
    return this.request("GET", `/v1/rules/${enc(id)}`);
  }

  listRules(query: RuleQuery = {}): Promise<Page<Rule>> {
    return this.request("GET", "/v1/rules", { query: withFilterText(query) });
  }

  /** Feedback: the rule helped (its maturity may rise). */
  markHelpful(id: string, feedback: HelpfulFeedback = {}): Promise<Rule> {
    return this.request("POST", `/v1/rules/${enc(id)}/helpful`, { json: feedback });
  }

  /** Feedback: the rule did harm (enough harm makes it an anti-pattern). */
  markHarmful(id: string, feedback: HarmfulFeedback = {}): Promise<Rule> {
    return this.request("POST", `/v1/rules/${enc(id)}/harmful`, { json: feedback });
  }

  /** Delete a rule for good. */
  async deleteRule(id: string): Promise<void> {
    await this.request("DELETE", `/v1/rules/${enc(id)}`);
  }

  // Retrieval.

  /** Hybrid (or `mode`) search over episodes, facts and rules. */
  search(request: SearchRequest): Promise<SearchResponse> {
    return this.request("POST", "/v1/search", { json: request });
  }

  /** Facts and rules about a topic, by composite score. */
  recall(request: RecallRequest): Promise<RecallResponse> {
    return this.request("POST", "/v1/recall", { json: request });
  }

  /** The memory block for a prompt, within a token budget. */
  context(request: ContextRequest): Promise<ContextResponse> {
    return this.request("POST", "/v1/context", { json: request });
  }

  // Entities: who and what memories are about.

  createEntity(entity: EntityCreate): Promise<Entity> {
    return this.request("POST", "/v1/entities", { json: entity });
  }

  getEntity(id: string): Promise<Entity> {
    return this.request("GET", `/v1/entities/${enc(id)}`);
  }

  listEntities(query: EntityQuery = {}): Promise<Page<Entity>> {
    return this.request("GET", "/v1/entities", { query: withFilterText(query) });
  }

  // Runs, procedures and arcs: their lists, each filtered by its own fields (docs/search.md).

  listRuns(query: RunQuery = {}): Promise<Page<Run>> {
    return this.request("GET", "/v1/runs", { query: withFilterText(query) });
  }

  listProcedures(query: ProcedureQuery = {}): Promise<Page<Procedure>> {
    return this.request("GET", "/v1/procedures", { query: withFilterText(query) });
  }

  listArcs(query: ArcQuery = {}): Promise<Page<Arc>> {
    return this.request("GET", "/v1/arcs", { query: withFilterText(query) });
  }

  /** The entities a name may mean, best first. */
  resolveEntity(request: ResolveRequest): Promise<ResolveCandidate[]> {
    return this.request("POST", "/v1/entities/resolve", { json: request });
  }

  /** Merge the source entity into the target: its names become aliases, its facts move. */
  mergeEntities(targetId: string, sourceId: string): Promise<MergeResult> {
    return this.request("POST", `/v1/entities/${enc(targetId)}/merge`,
      { json: { source_id: sourceId } });
  }

  // Links: typed relations between memories, entities and records.

  createLink(link: LinkCreate): Promise<Link> {
    return this.request("POST", "/v1/links", { json: link });
  }

  listLinks(query: LinkQuery): Promise<Page<Link>> {
    return this.request("GET", "/v1/links", { query: withFilterText(query) });
  }

  async deleteLink(selector: LinkSelector): Promise<void> {
    await this.request("DELETE", "/v1/links", { query: selector });
  }

  // Jobs: consolidation, decay, cleanup, erasure, ...

  /** Queue a background job; `waitForJob` follows it to its end. */
  startJob<K extends JobKind>(kind: K, ...params: JobParams<K> extends undefined ? []
    : [JobParams<K>?]): Promise<Job> {
    return this.request("POST", `/v1/jobs/${kind}`, { json: params[0] });
  }

  getJob(id: string): Promise<Job> {
    return this.request("GET", `/v1/jobs/${enc(id)}`);
  }

  /** Poll the job until it has succeeded or failed (its `status` says which); a
   * `JobTimeoutError` when it has not finished within `timeoutMs`. */
  async waitForJob(id: string, options: WaitOptions = {}): Promise<Job> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    const intervalMs = options.intervalMs ?? 500;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const job = await this.getJob(id);
      if (FINISHED.has(job.status)) return job;
      const left = deadline - Date.now();
      if (left <= 0) throw new JobTimeoutError(id, job.status, timeoutMs);
      await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, left)));
    }
  }

  // Data rights.

  /** Erase everything one selector matches, as a job (follow it with `waitForJob`). */
  requestErasure(selector: ErasureRequest): Promise<Job> {
    return this.request("POST", "/v1/erasures", { json: selector });
  }

  /** Every entity, episode, fact (each version), rule, rule application and link. */
  async exportRecords(): Promise<ExportRecord[]> {
    const text = await this.http.call("GET", "/v1/export") as string | undefined;
    return (text ?? "").split("\n").filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line) as ExportRecord);
  }

  /** Insert exported records (all or none), keeping their ids and times. */
  importRecords(records: ExportRecord[]): Promise<ImportResult> {
    const body = records.map((record) => JSON.stringify(record)).join("\n") + "\n";
    return this.http.call("POST", "/v1/import", { text: { body, contentType: NDJSON } }) as
      Promise<ImportResult>;
  }
}

function enc(id: string): string {
  return encodeURIComponent(id);
}

/** A listing's query with its filter object turned into the JSON text the API reads. */
function withFilterText<Q extends { filter?: unknown }>(query: Q): Record<string, QueryValue> {
  const { filter, ...rest } = query;
  const text = filter === undefined || filter === null || typeof filter === "string"
    ? filter : JSON.stringify(filter);
  return { ...(rest as Record<string, QueryValue>), ...(text == null ? {} : { filter: text }) };
}
