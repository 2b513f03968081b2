import { describe, expect, it } from "vitest";
import { UserError } from "../../src/base/errors.js";
import { SqliteHistoryStore } from "../../src/storage/sqlite/history.js";
import { SqliteMemoryStore, SqliteRecallStore } from "../../src/storage/sqlite/memory.js";
import { onTempDatabase } from "../helpers/stores.js";
import { memoryContract } from "./contract.js";

memoryContract("sqlite", () =>
  onTempDatabase((db) => ({
    memory: new SqliteMemoryStore({ db }),
    recall: new SqliteRecallStore({ db }),
    history: new SqliteHistoryStore({ db }),
  })),
);

describe("SqliteRecallStore beside a JSONL history", () => {
  it("says a search needs the history in the database", async () => {
    const handle = await onTempDatabase((db) => new SqliteRecallStore({ db, searchable: false }));
    try {
      const search = handle.store.search({
        scope: { agentId: "pickle", persons: ["owner"] },
        text: "garden",
      });
      await expect(search).rejects.toThrow(UserError);
      await expect(search).rejects.toThrow(/history\.backend/);
    } finally {
      await handle.cleanup();
    }
  });
});
