/**
 * The table of `awp` commands: each row is a {@link Command} (summary,
 * usage, flags, help and a small handler) that talks to the daemon over
 * the control socket with the shared call-and-print helper of
 * {@link ./command.ts} and prints the answer for a person, or as JSON
 * under `--json`. The rows live with their kind: the daemon's own
 * commands, a conversation's, other agents', sharing, the coding-agent
 * profile's, SAMVAD.
 *
 * @module
 */

import type { Command } from "./command.ts";
import { DAEMON_COMMANDS } from "./daemon_commands.ts";
import { MESSAGE_COMMANDS } from "./message_commands.ts";
import { PEER_COMMANDS } from "./peer_commands.ts";
import { PROFILE_COMMANDS } from "./profile_commands.ts";
import { SHARING_COMMANDS } from "./sharing_commands.ts";
import { SAMVAD_COMMAND } from "../samvad/cli.ts";

const { mirrored, ...sharing } = SHARING_COMMANDS;

/**
 * Every command, by name, in the order `awp help` lists them.
 *
 * @example
 * ```ts
 * import { COMMANDS } from "./commands.ts";
 * console.log(COMMANDS.send.usage.startsWith("awp send")); // true
 * ```
 */
export const COMMANDS: Record<string, Command> = {
  ...DAEMON_COMMANDS,
  ...MESSAGE_COMMANDS,
  ...PEER_COMMANDS,
  ...sharing,
  ...PROFILE_COMMANDS,
  mirrored,
  samvad: SAMVAD_COMMAND,
};
