import { MemoryScheduleStore } from "../../src/storage/memory/schedules.js";
import { scheduleContract } from "./contract.js";

scheduleContract("memory", async () => {
  const store = new MemoryScheduleStore();
  return { store, reopen: async () => store, cleanup: async () => undefined };
});
