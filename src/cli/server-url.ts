/** Where a command finds the workspace's running server over HTTP. */
import { UserError } from "../base/errors.js";
import { hostPort } from "../base/host.js";
import type { Config } from "../config/index.js";
import { localBaseUrl } from "../http/token-file.js";
import { runningServer } from "../storage/workspace-lock.js";

/**
 * `http://host:port` of the workspace's server for a client on this host: as the running
 * server announced it, else from `http:` of picklebot.yaml.
 *
 * @throws UserError naming `served` ("the event stream") when `http.enabled` is false.
 */
export function serverBaseUrl(config: Config, served: string): string {
  const announced = runningServer(config.history.path)?.http;
  if (announced) return localBaseUrl(announced);
  if (!config.http.enabled) {
    throw new UserError(
      `${served} is served over HTTP, which is off (http.enabled: false in picklebot.yaml); turn it on and restart the server`,
    );
  }
  return localBaseUrl(hostPort(config.http.host, config.http.port));
}
