// Names for the generated types of docs/openapi.yaml (src/schema.d.ts): each
// answer is taken from its route's 200 (202 for a push), so the client's
// types follow the description and cannot drift from it.
import type { components, operations } from "./schema.js";

type Schemas = components["schemas"];
type JSONOf<R> = R extends { content: { "application/json": infer B } } ? B : never;
type Answer<Op extends keyof operations, Code extends keyof operations[Op]["responses"]> = JSONOf<
  operations[Op]["responses"][Code]
>;
type Body<Op extends keyof operations> = operations[Op] extends {
  requestBody?: { content: { "application/json": infer B } };
}
  ? B
  : never;
type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;

/** The Queen-owned fields of a dispatch row; absent keeps, null clears. */
export type DispatchPatch = Body<"put_dispatch">;
/** A claim view with what the write did (`outcome`). */
export type ClaimAnswer = Answer<"put_dispatch", 200>;
/** A claim view with its keep, explanation and recent history. */
export type ClaimDetail = Answer<"get_claim", 200>;
/** One page of claim views. */
export type ClaimList = Answer<"list_claims", 200>;
/** A claim view as listed. */
export type ClaimView = ClaimList["claims"][number];
export type ListClaimsQuery = Query<"list_claims">;
export type HeldPaths = Answer<"held_paths", 200>;
export type HeldPath = HeldPaths["held"][number];
export type AdmissionRequest = Body<"admission">;
export type Candidate = AdmissionRequest["candidates"][number];
export type Admission = Answer<"admission", 200>;
export type OverrideAnswer = Answer<"free", 200>;
export type Deleted = Answer<"delete_dispatch", 200>;
export type ExportPush = Answer<"export_push", 202>;
export type AuditList = Answer<"audit", 200>;
export type AuditQuery = Query<"audit">;
export type AuditEntry = AuditList["entries"][number];
export type ClaimWord = Schemas["ClaimWord"];
/** The review_state words the Queen writes; any other is kept and read as "other". */
export type ReviewWord = Schemas["ReviewWord"];
/** A field a write kept but the rules do not read as its writer may mean (`warnings` of a write's answer). */
export type Warning = Schemas["Warning"];
/** The body of every error answer. */
export type ErrorBody = Schemas["Error"];
/** The data of a `change` event of GET /v1/events. */
export type ChangeData = Schemas["ChangeEvent"];
/** The data of a `reset` event of GET /v1/events. */
export type ResetData = Schemas["ResetEvent"];
