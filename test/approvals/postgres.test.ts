import { describe } from "vitest";
import { PostgresApprovalStore } from "../../src/storage/postgres/approvals.js";
import { postgresSkipReason, useMigratedDatabase } from "../helpers/postgres.js";
import { onTestDatabase } from "../helpers/stores.js";
import { approvalContract } from "./contract.js";

const skipReason = await postgresSkipReason();

describe.skipIf(skipReason !== null)("approval store on PostgreSQL", () => {
  const database = useMigratedDatabase("approvals");
  approvalContract("postgres", () =>
    onTestDatabase(
      database(),
      ["approval_requests", "approval_grants"],
      (pool) => new PostgresApprovalStore({ pool }),
    ),
  );
});
