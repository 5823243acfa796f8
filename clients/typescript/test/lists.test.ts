// The lists of entities, runs, procedures and arcs with a filter, against a live Engram.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import type { Arc, Procedure, Run } from "../src/index.js";
import { liveClient, unique } from "./support.js";

const engram = liveClient();

describe("list filters", () => {
  it("lists only the entities, runs, procedures and arcs a filter admits", async () => {
    const team = unique("team");
    const kept = await engram.createEntity({ canonical_name: unique("Ann"), entity_type: "person",
      metadata: { team } });
    await engram.createEntity({ canonical_name: unique("Bob"), entity_type: "person",
      metadata: { team: "other" } });
    const entities = await engram.listEntities({ filter: { "metadata.team": team } });
    assert.deepEqual(entities.items.map((entity) => entity.id), [kept.id]);

    const task = unique("triage");
    const run = await engram.request<Run>("POST", "/v1/runs",
      { json: { task_id: task, meta: { model: "small" } } });
    await engram.request<Run>("POST", "/v1/runs", { json: { task_id: task, meta: { model: "large" } } });
    const runs = await engram.listRuns({ task_id: task, filter: { "metadata.model": "small" } });
    assert.deepEqual(runs.items.map((item) => item.id), [run.id]);

    const agent = unique("ops");
    const steps = [{ step: 1, action: "run_tests" }];
    const procedure = await engram.request<Procedure>("POST", "/v1/procedures",
      { json: { agent_id: agent, name: "deploy", steps } });
    await engram.request<Procedure>("POST", "/v1/procedures",
      { json: { agent_id: agent, name: "rollback", steps } });
    const procedures = await engram.listProcedures({ agent_id: agent,
      filter: { name: { $contains: "dep" } } });
    assert.deepEqual(procedures.items.map((item) => item.id), [procedure.id]);

    const scope = unique("chat");
    const arc = await engram.request<Arc>("POST", "/v1/arcs",
      { json: { title: "Outage", arc_type: "incident", scope } });
    await engram.request<Arc>("POST", "/v1/arcs", { json: { title: "Launch", arc_type: "campaign", scope } });
    const arcs = await engram.listArcs({ filter: { scope, arc_type: "incident" } });
    assert.deepEqual(arcs.items.map((item) => item.id), [arc.id]);

    await assert.rejects(engram.listArcs({ filter: { butler: scope } }),
      (error: { status?: number; detail?: string | null }) =>
        error.status === 422 && /unknown field 'butler' for arcs/.test(String(error.detail)));
  });
});
