/** The cluster at a glance, for `picklebot status` and the dashboard's overview. */
import type { InstanceRow, LeaseHolder, Storage } from "../ports/index.js";

/** The instances of a cluster and its leader, as read at `now`. */
export interface ClusterStatus {
  instances: InstanceRow[];
  leader: LeaseHolder | null;
  /** When this was read: heartbeat ages are relative to it. */
  now: number;
}

/** The cluster's instances and leader (PostgreSQL mode), or null for a single process. */
export async function describeCluster(storage: Storage): Promise<ClusterStatus | null> {
  if (!storage.cluster) return null;
  const { store } = storage.cluster;
  return { instances: await store.instances(), leader: await store.leader(), now: Date.now() };
}
