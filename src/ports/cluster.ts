/**
 * The cluster ports of distributed mode (PostgreSQL): the processes sharing one database,
 * the leader lease, the rescue of dead processes' jobs, and `/stop` across processes.
 *
 *   register ─► heartbeat every heartbeat_s ─► deregister (graceful stop, jobs finished)
 *   silent for its TTL ─► the leader removes it and requeues its running jobs, in one
 *   transaction (the claim already counted the attempt)
 */

/** What a process says about itself in its row. */
export interface InstanceInfo {
  /** Letters, digits, `-` and `_`, at most 64 (`cluster.instance_id`). */
  id: string;
  hostname: string;
  pid: number;
  /** picklebot's version. */
  version: string;
  /** The agents it can run: it claims only their jobs. */
  agents: string[];
  /** Jobs it runs at once (`workers.agent_concurrency`). */
  concurrency: number;
  /** Silent this long, it is taken for dead (`cluster.instance_ttl_s`). */
  ttlMs: number;
}

/** A registered process, as `picklebot status` lists it. Times are epoch ms. */
export interface InstanceRow extends InstanceInfo {
  startedAt: number;
  heartbeatAt: number;
}

/** The lease's holder, while it is valid. */
export interface LeaseHolder {
  holder: string;
  acquiredAt: number;
  expiresAt: number;
}

/** What one reaping pass did. */
export interface ReapResult {
  /** Instances removed because their heartbeat expired. */
  instances: string[];
  /** Running jobs requeued (theirs, and any left by a process without a row). */
  jobs: number;
}

/** The processes of a cluster, its leader lease, and the upkeep the leader does. */
export interface ClusterStore {
  /**
   * Writes this process's row. Throws UserError when a live process already uses the id;
   * takes the row over when it expired, or when its process is gone from this host.
   */
  register(info: InstanceInfo): Promise<void>;
  /** Refreshes this process's heartbeat; false when another process holds the id now. */
  heartbeat(info: InstanceInfo): Promise<boolean>;
  /** Removes this process's row (graceful stop, after its jobs finished). */
  deregister(info: InstanceInfo): Promise<void>;
  /** Every registered process. */
  instances(): Promise<InstanceRow[]>;
  /**
   * Removes instances whose heartbeat expired and requeues their running jobs, in one
   * transaction; also requeues jobs of ids without a row claimed before `orphanedBefore`.
   */
  reapExpired(orphanedBefore: number): Promise<ReapResult>;
  /** Takes the leader lease for `holder`, or renews it; false while another holds it. */
  acquireLeadership(holder: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up, so that another process need not wait for it to expire. */
  releaseLeadership(holder: string): Promise<void>;
  /** The current leader, or null when the lease is free or expired. */
  leader(): Promise<LeaseHolder | null>;
}

/** Aborts the running job of a session key wherever it runs. */
export interface SessionStopper {
  /** True when a job of the key was running (and is being stopped). */
  stop(sessionKey: string): Promise<boolean>;
}

/** Carries `/stop` to the process that runs the session's job. */
export interface StopRelay {
  /**
   * Listens for stops sent by other processes, passing each key to `stopHere` (true when
   * it aborted a job of that key here); returns the cluster-wide stopper. `onError` hears
   * of a lost listening connection (it reconnects on its own) and of a `stopHere` that
   * threw; neither ends the listening.
   */
  start(stopHere: (sessionKey: string) => boolean, onError: (error: Error) => void): SessionStopper;
  /** Stops listening. */
  close(): Promise<void>;
}

/** Who may lead. */
export interface Leadership {
  /** Takes or renews the lease for `holder`; false while another process holds it. */
  acquire(holder: string): Promise<boolean>;
  /** Gives the lease up. */
  release(holder: string): Promise<void>;
  /** How often the lease is renewed, and a follower tries to take it. */
  readonly renewMs: number;
}
