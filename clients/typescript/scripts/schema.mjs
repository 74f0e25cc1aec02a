// src/schema.ts is what openapi-typescript makes of docs/openapi.yaml, with
// the options below (their one home). `write` regenerates it; `check` fails
// when it differs, so the types cannot drift from the description.
//
// --default-non-nullable false: a request field with a default (a
// candidate's owner_assigned, a push's dry_run) stays optional, as the server
// takes it. --empty-objects-unknown: an open object (an audit entry's inputs)
// is unknown, not Record<string, never>.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const spec = join(root, "..", "..", "docs", "openapi.yaml");
const committed = join(root, "src", "schema.ts");
const options = ["--default-non-nullable", "false", "--empty-objects-unknown"];

function generate(out) {
  execFileSync(join(root, "node_modules", ".bin", "openapi-typescript"), [spec, "-o", out, ...options], {
    stdio: ["ignore", "ignore", "inherit"],
  });
}

const mode = process.argv[2];
if (mode === "write") {
  generate(committed);
  console.log("schema: wrote src/schema.ts from docs/openapi.yaml");
} else if (mode === "check") {
  const dir = mkdtempSync(join(tmpdir(), "queen-ts-schema-"));
  try {
    const fresh = join(dir, "schema.ts");
    generate(fresh);
    const want = readFileSync(fresh, "utf8");
    const have = readFileSync(committed, "utf8");
    if (want !== have) {
      const a = have.split("\n");
      const b = want.split("\n");
      let i = 0;
      while (i < a.length && i < b.length && a[i] === b[i]) i++;
      console.error(`check-types: src/schema.ts differs from docs/openapi.yaml from line ${i + 1}:`);
      console.error(`  src/schema.ts:  ${a[i] ?? "(end of file)"}`);
      console.error(`  generated now:  ${b[i] ?? "(end of file)"}`);
      console.error("run `npm run generate-types` in clients/typescript and commit src/schema.ts");
      process.exitCode = 1;
    } else {
      console.log("check-types: src/schema.ts matches docs/openapi.yaml");
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else {
  console.error("usage: node scripts/schema.mjs write|check");
  process.exitCode = 2;
}
