// Names for the request and response shapes of the API, all taken from the generated types.
import type { components, operations, paths } from "./generated/openapi.js";

type Schemas = components["schemas"];
type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;
/** A filter over metadata and fields, e.g. `{ "metadata.topic": "travel" }` (see docs/search.md). */
export type MemoryFilter = Record<string, unknown>;
/** A listing's query, whose `filter` may be given as an object (sent as JSON text). */
type Filtered<Q> = Omit<Q, "filter"> & { filter?: MemoryFilter | string | null };

export type Problem = Schemas["Problem"];
export type ProblemFieldError = Schemas["ProblemError"];

export type EpisodeCreate = Schemas["EpisodeCreate"];
export type Episode = Schemas["EpisodeOut"];
export type EpisodeQuery = Filtered<Query<"list_episodes">>;

export type FactCreate = Schemas["FactCreate"];
export type Fact = Schemas["FactOut"];
export type FactQuery = Filtered<Query<"list_facts">>;
export type FactRef = Schemas["FactRef"];
export type FactGetResult = Schemas["FactGetResult"];
export type FactPutResult = Schemas["FactPutResult"];
export type FactDeleteResult = Schemas["FactDeleteResult"];

export type RuleCreate = Schemas["RuleCreate"];
export type Rule = Schemas["RuleOut"];
export type RuleQuery = Filtered<Query<"list_rules">>;
export type HelpfulFeedback = Schemas["HelpfulFeedback"];
export type HarmfulFeedback = Schemas["HarmfulFeedback"];

export type SearchRequest = Schemas["SearchRequest"];
export type SearchResponse = Schemas["SearchResponse"];
export type RecallRequest = Schemas["RecallRequest"];
export type RecallResponse = Schemas["RecallResponse"];
export type ContextRequest = Schemas["ContextRequest"];
export type ContextResponse = Schemas["ContextResponse"];

export type EntityCreate = Schemas["EntityCreate"];
export type Entity = Schemas["EntityOut"];
export type EntityQuery = Filtered<Query<"list_entities">>;
export type ResolveRequest = Schemas["ResolveRequest"];
export type ResolveCandidate = Schemas["ResolveCandidate"];
export type MergeResult = Schemas["MergeOut"];

export type Run = Schemas["RunOut"];
export type RunQuery = Filtered<Query<"list_runs">>;
export type Procedure = Schemas["ProcedureOut"];
export type ProcedureQuery = Filtered<Query<"list_procedures">>;
export type Arc = Schemas["ArcOut"];
export type ArcQuery = Filtered<Query<"list_arcs">>;

export type LinkCreate = Schemas["LinkCreate"];
export type Link = Schemas["LinkOut"];
export type LinkQuery = Filtered<Query<"list_links">>;
export type LinkSelector = Query<"delete_link">;

export type Job = Schemas["JobOut"];
export type ErasureRequest = Schemas["ErasureCreate"];
export type ImportResult = Schemas["ImportOut"];

/** One page of a listing; pass `next_cursor` back as `cursor` for the next page. */
export interface Page<T> {
  items: T[];
  next_cursor?: string | null;
}

/** The kinds of job `POST /v1/jobs/{kind}` starts, as they appear in the path. */
export type JobKind = {
  [P in keyof paths]: P extends `/v1/jobs/${infer K}`
    ? paths[P] extends { post: unknown } ? K : never
    : never;
}[keyof paths];

/** The body a job kind takes (`undefined` when it takes none). */
export type JobParams<K extends JobKind> = JsonBody<paths[`/v1/jobs/${K}`]["post"]>;

type JsonBody<Op> = Op extends { requestBody?: infer R }
  ? [NonNullable<R>] extends [never] ? undefined
    : NonNullable<R> extends { content: { "application/json": infer B } } ? Exclude<B, null>
      : undefined
  : undefined;

/** One line of an export: a record with its `kind` (entity, episode, fact, rule, ...). */
export interface ExportRecord {
  kind: string;
  id?: string;
  [field: string]: unknown;
}
