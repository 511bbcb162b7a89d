/**
 * Installs the timers of `./core_timers.ts` when imported. The CLI entry
 * (`cli.ts`) imports it first, so that no module it loads sets a timer
 * before they are in place.
 *
 * @example
 * ```ts ignore
 * import "./use_core_timers.ts";
 * ```
 *
 * @module
 */

import { installCoreTimers } from "./core_timers.ts";

installCoreTimers();
