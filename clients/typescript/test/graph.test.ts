// Entities (resolve, merge) and links against a live Engram.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { liveClient, unique } from "./support.js";

const engram = liveClient();

describe("entities", () => {
  it("resolves a name by its alias and merges a duplicate into the entity", async () => {
    const name = unique("Annabel Durand");
    const ann = await engram.createEntity({ canonical_name: name, entity_type: "person",
      aliases: [`${name} alias`] });
    const duplicate = await engram.createEntity({ canonical_name: `${name} (work)`,
      entity_type: "person" });

    const candidates = await engram.resolveEntity({ name: `${name} alias`,
      entity_type: "person" });
    assert.equal(candidates[0]?.entity_id, ann.id);

    const merged = await engram.mergeEntities(ann.id, duplicate.id);
    assert.equal(merged.target_entity_id, ann.id);
    assert.ok(merged.target.aliases.includes(`${name} (work)`));
    assert.equal((await engram.getEntity(duplicate.id)).merged_into_id, ann.id);
  });
});

describe("links", () => {
  it("links two memories, lists the link and deletes it", async () => {
    const scope = unique("links");
    const cause = await engram.storeFact({ subject: "Eve", predicate: "job",
      content: "Eve is a nurse.", scope });
    const effect = await engram.storeRule({ content: "Do not call Eve during night shifts.",
      scope });
    const link = await engram.createLink({ source_type: "rule", source_id: effect.id,
      target_type: "fact", target_id: cause.id, relation: "derived_from", strength: 0.8 });
    assert.equal(link.relation, "derived_from");

    const listed = await engram.listLinks({ memory_type: "fact", memory_id: cause.id });
    assert.deepEqual(listed.items.map((item) => item.source_id), [effect.id]);

    await engram.deleteLink({ source_type: "rule", source_id: effect.id, target_type: "fact",
      target_id: cause.id });
    assert.deepEqual((await engram.listLinks({ memory_type: "fact", memory_id: cause.id })).items,
      []);
  });
});
