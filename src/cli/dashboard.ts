/**
 * `picklebot dashboard`: the link that logs the owner's browser in to the workspace's
 * dashboard. The link holds the access token, so it is printed only to a terminal;
 * anywhere else (a pipe, a file, a log) the command refuses and says where the token is.
 */
import { join } from "node:path";
import { Command } from "commander";
import { UserError } from "../base/errors.js";
import type { Config } from "../config/index.js";
import { clientToken, GENERATED_TOKEN_FILE, loginLink } from "../http/token-file.js";
import { loadWorkspace } from "./context.js";
import { printLine } from "./output.js";
import { serverBaseUrl } from "./server-url.js";

/** The `dashboard` command. */
export function dashboardCommand(): Command {
  return new Command("dashboard")
    .description(
      "print the link that logs your browser in to the dashboard (to a terminal only: it holds the access token)",
    )
    .action((_options: unknown, command: Command) => {
      const { config } = loadWorkspace(command);
      printLine(ownerLoginLink(config, process.stdout.isTTY === true));
    });
}

/**
 * The login link of the workspace's dashboard.
 *
 * @throws UserError when the dashboard is off, no token exists yet, or the output is not
 * a terminal; each says what to do instead.
 */
function ownerLoginLink(config: Config, toTerminal: boolean): string {
  if (!config.http.dashboard) {
    throw new UserError(
      "the dashboard is off (http.dashboard: false in picklebot.yaml); set it to true and restart the server",
    );
  }
  const base = serverBaseUrl(config, "the dashboard");
  const file = join(config.history.path, GENERATED_TOKEN_FILE);
  const token = clientToken(config.http.token, config.history.path);
  if (token === null) {
    throw new UserError(
      `no access token yet: picklebot server generates one into ${file} when it starts (or set http.token in picklebot.yaml); start the server, then run picklebot dashboard again`,
    );
  }
  if (!toTerminal) {
    const where = config.http.token === undefined ? `cat ${file}` : "http.token in picklebot.yaml";
    throw new UserError(
      `the login link holds the access token, so it is printed only to a terminal, and this output is not one; run picklebot dashboard in a terminal, or open ${base}/login and enter the token (${where})`,
    );
  }
  return loginLink(base, token);
}
