-- Retention in every backend (issue 14): the leader deletes delivered outbox entries
-- after queue.job_retention_h, as it deletes finished jobs. Instance roles made by
-- `picklebot cluster add-instance` before this migration get DELETE on outbox, which new
-- ones get from INSTANCE_GRANTS (src/storage/postgres/instance-roles.ts).
DO $$
DECLARE
  entry record;
BEGIN
  FOR entry IN
    SELECT r.role FROM instance_roles r JOIN pg_roles p ON p.rolname = r.role
  LOOP
    EXECUTE format('GRANT DELETE ON outbox TO %I', entry.role);
  END LOOP;
END $$;
