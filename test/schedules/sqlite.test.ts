import { SqliteScheduleStore } from "../../src/storage/sqlite/schedules.js";
import { onTempDatabase } from "../helpers/stores.js";
import { scheduleContract } from "./contract.js";

scheduleContract("sqlite", () => onTempDatabase((db) => new SqliteScheduleStore({ db })));
