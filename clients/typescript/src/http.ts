import { EngramError } from "./errors.js";
import type { Problem } from "./types.js";

/** How busy answers (429 Too Many Requests, 503 Service Unavailable) are retried. */
export interface RetryOptions {
  /** Further attempts after the first (default 3); 0 turns retries off. */
  retries: number;
  /** First backoff when the answer has no `Retry-After` (default 500 ms), doubled each time. */
  baseDelayMs: number;
  /** The longest wait before one retry, `Retry-After` included (default 8000 ms). */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { retries: 3, baseDelayMs: 500, maxDelayMs: 8000 };
const RETRY_STATUSES = new Set([429, 503]);

export interface HttpOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  timeoutMs: number;
  retry: RetryOptions;
  /** Requests in flight at once; the others wait their turn in the client. */
  maxInFlight: number;
  fetch: typeof fetch;
  headers: Record<string, string>;
}

export type QueryValue = string | number | boolean | null | undefined | readonly string[];

export interface CallOptions {
  query?: Record<string, QueryValue> | undefined;
  /** A JSON body (serialised here) or a prepared text body with its content type. */
  json?: unknown;
  text?: { body: string; contentType: string } | undefined;
}

/** At most `size` holders at once; the others wait in arrival order. */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError("maxInFlight must be >= 1");
    this.free = size;
  }

  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/** Sends requests with authentication, a timeout per attempt, bounded retries and at most
 * `maxInFlight` requests at once (a retry waits without holding its place). */
export class Http {
  private readonly slots: Slots;

  constructor(private readonly options: HttpOptions) {
    this.slots = new Slots(options.maxInFlight);
  }

  /** One call: the parsed answer (JSON, or text for other content types; undefined for 204). */
  async call(method: string, path: string, call: CallOptions = {}): Promise<unknown> {
    const url = this.url(path, call.query);
    const init = this.init(method, call);
    for (let attempt = 0; ; attempt++) {
      let wait: number | null = null;
      await this.slots.acquire();
      try {
        const response = await this.fetch(method, url, init);
        if (RETRY_STATUSES.has(response.status) && attempt < this.options.retry.retries) {
          await response.body?.cancel();
          wait = retryDelay(response, attempt, this.options.retry);
        } else {
          return await read(response);
        }
      } finally {
        this.slots.release();
      }
      await sleep(wait ?? 0);
    }
  }

  /** One attempt; a failure to get an answer (no connection, a timeout) throws an
   * `EngramError` of status 0 naming the method and URL. */
  private async fetch(method: string, url: string, init: RequestInit): Promise<Response> {
    try {
      return await this.options.fetch(url, {
        ...init,
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (error) {
      throw transportError(method, url, error, this.options.timeoutMs);
    }
  }

  private url(path: string, query: CallOptions["query"]): string {
    const url = new URL(this.options.baseUrl.replace(/\/+$/, "") + path);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value === undefined || value === null) continue;
      for (const one of Array.isArray(value) ? value : [value]) {
        url.searchParams.append(name, String(one));
      }
    }
    return url.toString();
  }

  private init(method: string, call: CallOptions): RequestInit {
    const headers: Record<string, string> = {
      Accept: "application/json, application/problem+json",
      ...this.options.headers,
    };
    if (this.options.apiKey) headers.Authorization = `Bearer ${this.options.apiKey}`;
    let body: string | undefined;
    if (call.text !== undefined) {
      headers["Content-Type"] = call.text.contentType;
      body = call.text.body;
    } else if (call.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(call.json);
    }
    return { method, headers, body };
  }
}

/** Milliseconds to wait before the next attempt: `Retry-After` (seconds or an HTTP date)
 * when the answer has one, else exponential backoff with jitter; never above `maxDelayMs`. */
export function retryDelay(response: Response, attempt: number, retry: RetryOptions): number {
  const header = response.headers.get("Retry-After");
  if (header !== null) {
    const seconds = Number(header);
    const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
    if (!Number.isNaN(ms)) return Math.min(retry.maxDelayMs, Math.max(0, ms));
  }
  const backoff = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** attempt);
  return backoff * (0.5 + Math.random() / 2);
}

async function read(response: Response): Promise<unknown> {
  const type = response.headers.get("Content-Type") ?? "";
  const text = await response.text();
  const isJson = /[/+]json\b/.test(type);
  if (!response.ok) throw new EngramError(problemOf(response, isJson ? parse(text) : text));
  if (response.status === 204 || text === "") return undefined;
  return isJson ? JSON.parse(text) : text;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function problemOf(response: Response, body: unknown): Problem {
  if (typeof body === "object" && body !== null && "status" in body && "title" in body) {
    return body as Problem;
  }
  const detail = typeof body === "string" && body ? body.slice(0, 500) : null;
  return { type: "about:blank", title: response.statusText || "Error", status: response.status,
    detail };
}

/** The `EngramError` for a request that got no answer. */
export function transportError(method: string, url: string, error: unknown,
  timeoutMs: number): EngramError {
  const name = error instanceof Error ? error.name : "";
  const timedOut = name === "TimeoutError" || name === "AbortError";
  const cause = error instanceof Error ? error.cause : undefined;
  const reason = timedOut ? `no answer within ${timeoutMs} ms`
    : [error instanceof Error ? error.message : String(error),
      cause instanceof Error ? ((cause as { code?: string }).code ?? cause.message) : null]
      .filter(Boolean).join(": ");
  const title = timedOut ? "Timed out" : "Connection failed";
  const problem: Problem = { type: "about:blank", title, status: 0,
    detail: `${method} ${url}: ${reason}` };
  return new EngramError(problem, { cause: error });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
