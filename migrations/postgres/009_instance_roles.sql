-- Per-instance credentials (`picklebot cluster add-instance`, src/storage/postgres/
-- instance-roles.ts): which PostgreSQL role is which instance, and row-level policies
-- that let an instance's role change only what is its own. The admin role, which owns the
-- tables, bypasses them (it is needed only for migrations and add/remove-instance); roles
-- that are not in instance_roles keep full access, as before this migration.
--
-- What an instance role may change (on top of its table grants):
-- - jobs: read all; insert queued jobs; change a queued job (claim it for itself, wake it,
--   ask it to stop); change a running job it holds (checkpoint, complete, retry, fail,
--   park); delete done and failed jobs (the leader's pruning). The lock token still fences
--   every change to a running job. Requeueing the running jobs of an instance whose row
--   expired or is gone (the leader's recovery) goes through picklebot_recover_jobs.
-- - instances: write its own row; delete its own row or an expired one.
-- - leases: take or renew a lease for itself only; release its own.

CREATE TABLE instance_roles (
  role name PRIMARY KEY,
  instance_id text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- The instance id of the connected role, or NULL for any role not made by add-instance.
CREATE FUNCTION picklebot_instance_id() RETURNS text
  LANGUAGE sql STABLE
  AS $$ SELECT instance_id FROM instance_roles WHERE role = current_user $$;

-- Whether instance `id` has a row whose heartbeat has not expired.
CREATE FUNCTION picklebot_instance_alive(id text) RETURNS boolean
  LANGUAGE sql STABLE
  AS $$ SELECT EXISTS (SELECT 1 FROM instances i WHERE i.id = $1
    AND i.heartbeat_at >= now() - i.ttl_ms * interval '1 millisecond') $$;

ALTER TABLE jobs ENABLE ROW LEVEL SECURITY;

CREATE POLICY jobs_other_roles ON jobs
  USING (picklebot_instance_id() IS NULL) WITH CHECK (picklebot_instance_id() IS NULL);
CREATE POLICY jobs_read ON jobs FOR SELECT USING (true);
CREATE POLICY jobs_enqueue ON jobs FOR INSERT
  WITH CHECK (state = 'queued' AND locked_by IS NULL);
CREATE POLICY jobs_change ON jobs FOR UPDATE
  USING (state = 'queued' OR (state = 'running' AND locked_by = picklebot_instance_id()))
  WITH CHECK ((state = 'running' AND locked_by = picklebot_instance_id())
    OR (state IN ('queued', 'done', 'failed') AND locked_by IS NULL));
CREATE POLICY jobs_prune ON jobs FOR DELETE USING (state IN ('done', 'failed'));

ALTER TABLE instances ENABLE ROW LEVEL SECURITY;

CREATE POLICY instances_other_roles ON instances
  USING (picklebot_instance_id() IS NULL) WITH CHECK (picklebot_instance_id() IS NULL);
CREATE POLICY instances_read ON instances FOR SELECT USING (true);
CREATE POLICY instances_register ON instances FOR INSERT
  WITH CHECK (id = picklebot_instance_id());
CREATE POLICY instances_heartbeat ON instances FOR UPDATE
  USING (id = picklebot_instance_id()) WITH CHECK (id = picklebot_instance_id());
CREATE POLICY instances_remove ON instances FOR DELETE
  USING (id = picklebot_instance_id() OR NOT picklebot_instance_alive(id));

ALTER TABLE leases ENABLE ROW LEVEL SECURITY;

CREATE POLICY leases_other_roles ON leases
  USING (picklebot_instance_id() IS NULL) WITH CHECK (picklebot_instance_id() IS NULL);
CREATE POLICY leases_read ON leases FOR SELECT USING (true);
CREATE POLICY leases_take ON leases FOR INSERT WITH CHECK (holder = picklebot_instance_id());
-- Every row is open to the update (the acquire statement's own WHERE picks free or own
-- leases): an INSERT … ON CONFLICT DO UPDATE raises an error, instead of changing nothing,
-- when the row it meets fails the policy, and a process that is not the leader meets a
-- live lease every few seconds. So a role can take a live lease; never for another.
CREATE POLICY leases_renew ON leases FOR UPDATE
  USING (true) WITH CHECK (holder = picklebot_instance_id());
CREATE POLICY leases_release ON leases FOR DELETE USING (holder = picklebot_instance_id());

-- Requeues, due at once, the running jobs of `workers` (recording the interrupted attempt)
-- that the caller may take back: every one for the admin and other roles that may update
-- jobs; for an instance
-- role, its own and those of instances without a live row. Runs as the owner of the
-- tables, so it is the one way an instance role changes a job another instance holds;
-- the caller is its login role (session_user: an instance role can switch to no other).
CREATE FUNCTION picklebot_recover_jobs(workers text[], error text, now bigint)
  RETURNS SETOF text
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT
  AS $$
    WITH caller AS (SELECT (SELECT instance_id FROM instance_roles WHERE role = session_user) AS id)
    UPDATE jobs SET state = 'queued', run_at = LEAST(run_at, now), last_error = error,
      errors = (errors::jsonb || jsonb_build_array(jsonb_build_object(
        'attempt', attempts, 'at', now, 'message', error)))::text,
      locked_by = NULL, locked_at = NULL, lock_token = NULL, updated_at = now
    FROM caller
    WHERE jobs.state = 'running' AND jobs.locked_by = ANY (workers)
      AND ((caller.id IS NULL AND has_table_privilege(session_user, 'jobs', 'UPDATE'))
        OR jobs.locked_by = caller.id
        OR NOT picklebot_instance_alive(jobs.locked_by))
    RETURNING jobs.id
  $$;
