/**
 * The dashboard: a Peer's network, conversations, transfers and traffic,
 * live, in a local web page (the same one `awp web` serves).
 *
 * Kept apart from the main entry so that the library does not load the
 * page's bundle unless asked.
 *
 * @example
 * ```ts ignore
 * import { Peer } from "jsr:@awp/peer";
 * import { serveDashboard } from "jsr:@awp/peer/web";
 * const peer = await Peer.open({ home: "/tmp/agent", name: "builder" });
 * const web = await serveDashboard(
 *   { peer, self: () => ({ key: peer.key, name: "builder", addrs: [] }) },
 *   { port: 7788 },
 * );
 * console.log(`dashboard at ${web.url}`);
 * ```
 *
 * @module
 */

export {
  DashboardFeed,
  type DashboardFeedOptions,
  type DashboardSource,
  type FeedEvent,
  type PeerCounts,
} from "./dashboard_feed.ts";
export type * from "./dashboard_types.ts";
export { readConversation } from "./read_conversation.ts";
export {
  type DashboardServer,
  type DashboardServerOptions,
  serveDashboard,
} from "./serve_dashboard.ts";
