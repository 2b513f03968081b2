import { SqliteOutboxStore } from "../../src/storage/sqlite/outbox.js";
import { SqlitePairingStore } from "../../src/storage/sqlite/pairing.js";
import { onTempDatabase } from "../helpers/stores.js";
import { outboxContract, pairingContract } from "./outbox-pairing.contract.js";

outboxContract("sqlite", () => onTempDatabase((db) => new SqliteOutboxStore({ db })));
pairingContract("sqlite", () => onTempDatabase((db) => new SqlitePairingStore({ db })));
