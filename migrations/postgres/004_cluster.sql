-- The processes of a cluster and its leader (src/cluster/). Times are the database's
-- clock (now()), so hosts with skewed clocks still agree on who expired.

-- One row per running `picklebot server`. UNLOGGED: after a PostgreSQL crash the table is
-- empty, and every live process writes its row again at its next heartbeat.
CREATE UNLOGGED TABLE instances (
  id text PRIMARY KEY,
  hostname text NOT NULL,
  pid integer NOT NULL,
  version text NOT NULL,
  -- The agents this process can run: it claims only their jobs.
  agents text[] NOT NULL,
  concurrency integer NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  -- The process's own instance TTL: it is dead once heartbeat_at is older than this.
  ttl_ms integer NOT NULL
);

-- The leader lease: one row per lease name, held until expires_at unless renewed.
CREATE TABLE leases (
  name text PRIMARY KEY,
  holder text NOT NULL,
  acquired_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
