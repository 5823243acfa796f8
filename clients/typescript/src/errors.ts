import type { Problem, ProblemFieldError } from "./types.js";

/** An error answer from Engram (after any retries), carrying its RFC 9457 problem details;
 * status 0 when no answer came (no connection, a timeout), its detail naming the request. */
export class EngramError extends Error {
  /** The HTTP status (0: no answer came). */
  readonly status: number;
  /** The problem's short title ("Invalid input", "Not found", ...). */
  readonly title: string;
  /** The problem's explanation, when it gives one. */
  readonly detail: string | null;
  /** The first field the problem names (e.g. `body.content`), when it names one. */
  readonly field: string | null;
  /** Every invalid field with its message. */
  readonly errors: ProblemFieldError[];
  /** The server's request id, to find the request in its log. */
  readonly requestId: string | null;
  /** The whole problem document as the server sent it. */
  readonly problem: Problem;

  constructor(problem: Problem, options?: { cause?: unknown }) {
    const errors = problem.errors ?? [];
    const fields = errors.map((error) => error.field).join(", ");
    const summary = problem.detail ?? problem.title;
    const status = problem.status ? `${problem.status} ` : "";
    super(`${status}${problem.title}: ${summary}${fields ? ` (${fields})` : ""}`, options);
    this.name = "EngramError";
    this.status = problem.status;
    this.title = problem.title;
    this.detail = problem.detail ?? null;
    this.errors = errors;
    this.field = errors[0]?.field ?? null;
    this.requestId = problem.request_id ?? null;
    this.problem = problem;
  }
}

/** `waitForJob` gave up: the job was still queued or running when its time ran out. */
export class JobTimeoutError extends Error {
  readonly jobId: string;
  readonly lastStatus: string;

  constructor(jobId: string, lastStatus: string, waitedMs: number) {
    super(`job ${jobId} still ${lastStatus} after ${waitedMs} ms`);
    this.name = "JobTimeoutError";
    this.jobId = jobId;
    this.lastStatus = lastStatus;
  }
}
