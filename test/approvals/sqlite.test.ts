import { SqliteApprovalStore } from "../../src/storage/sqlite/approvals.js";
import { onTempDatabase } from "../helpers/stores.js";
import { approvalContract } from "./contract.js";

approvalContract("sqlite", () => onTempDatabase((db) => new SqliteApprovalStore({ db })));
