export { QueenClient, type CallOptions, type ClientOptions, type ListClaimsOptions, type OverrideOptions, type AuditOptions } from "./client.js";
export { QueenApiError } from "./errors.js";
export type { RetryInfo, RetryOptions } from "./retry.js";
export type { ChangeEvent, ReconnectInfo, ResetEvent, WatchEvent, WatchOptions } from "./watch.js";
export { WatchProtocolError } from "./watch.js";
export type * from "./types.js";
export type { components, operations, paths } from "./schema.js";
