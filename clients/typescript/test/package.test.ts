// The package as the Queen gets it: `npm pack`, installed into an empty
// project, imported at run time and type-checked by a consumer, so the
// exports, the declarations and the generated types all ship.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { tempDir } from "./harness.js";

// dist/ is fresh: pretest compiled it, so npm pack need not (--ignore-scripts).
const pkg = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

const consumer = `
import { QueenApiError, QueenClient, type ClaimView, type WatchEvent } from "@queen-app/client";

const q = new QueenClient({ baseUrl: "http://127.0.0.1:8081", token: "0123456789abcdef", source: "queen" });
export async function round(): Promise<string[]> {
  const { admitted, refusal } = await q.admission("hive/t27", [{ issue: 1 }, { issue: 2, owner_assigned: true }]);
  const held: string[] = (await q.heldPaths("hive/t27")).held.map((h) => h.path);
  const view: ClaimView = await q.upsertDispatch("hive/t27", 1, { started: true, owned_paths: ["a.go"], review_state: null });
  // @ts-expect-error: the server refuses a field it does not know, and so do the types
  await q.upsertDispatch("hive/t27", 1, { strated: true });
  // @ts-expect-error: a claim word is one of six
  await q.listClaims({ claim: "Running" });
  const inputs: unknown = (await q.audit({ limit: 1 })).entries[0]?.inputs?.["patch"];
  return [...held, String(admitted.length), refusal ?? "", view.claim, String(inputs)];
}
export function seen(ev: WatchEvent, e: unknown): string {
  if (e instanceof QueenApiError && e.status === 400) return e.field ?? "";
  return ev.type === "reset" ? ev.oldest : ev.entry.action + (ev.claim?.explain.join() ?? "");
}
`;

describe("the package", () => {
  it("installs from npm pack, imports, and type-checks a consumer against the generated types", () => {
    const dir = tempDir("queen-ts-pack-");
    execFileSync("npm", ["pack", "--ignore-scripts", "--pack-destination", dir], { cwd: pkg, stdio: "pipe" });
    const tgz = readdirSync(dir).find((f) => f.endsWith(".tgz"));
    assert.ok(tgz, "npm pack wrote no tarball");
    const app = join(dir, "app");
    execFileSync("mkdir", [app]);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "queen", private: true, type: "module" }));
    execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", join(dir, tgz)], { cwd: app, stdio: "pipe" });

    writeFileSync(join(app, "check.mjs"), 'const m = await import("@queen-app/client"); console.log(Object.keys(m).sort().join(","));');
    const out = execFileSync(process.execPath, ["check.mjs"], { cwd: app }).toString(); // node, or bun under bun test
    assert.equal(out.trim(), "QueenApiError,QueenClient,WatchProtocolError");

    writeFileSync(join(app, "round.ts"), consumer);
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, lib: ["ES2022", "DOM"], types: [] },
        files: ["round.ts"],
      }),
    );
    try {
      execFileSync(join(pkg, "node_modules", ".bin", "tsc"), ["-p", app], { cwd: app, stdio: "pipe" });
    } catch (e) {
      assert.fail("the consumer does not type-check:\n" + (e as { stdout?: Buffer }).stdout?.toString());
    }
  });

  it("builds and tests without Bun: npm ci installs no bun (103 of 149 MB), which stays optional", () => {
    const lock = JSON.parse(readFileSync(join(pkg, "package-lock.json"), "utf8")) as { packages: Record<string, unknown> };
    const bun = Object.keys(lock.packages).filter((p) => /(^|\/)(bun|@oven\/bun-[^/]*)$/.test(p));
    assert.deepEqual(bun, [], "package-lock.json installs Bun");
  });
});
