// Fails when src/schema.ts is not what openapi-typescript makes of
// docs/openapi.yaml now: regenerate with `npm run generate-types`.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const spec = join(root, "..", "..", "docs", "openapi.yaml");
const committed = join(root, "src", "schema.ts");
const dir = mkdtempSync(join(tmpdir(), "queen-ts-schema-"));
try {
  const fresh = join(dir, "schema.ts");
  execFileSync(join(root, "node_modules", ".bin", "openapi-typescript"), [spec, "-o", fresh], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const want = readFileSync(fresh, "utf8");
  const have = readFileSync(committed, "utf8");
  if (want !== have) {
    const a = have.split("\n");
    const b = want.split("\n");
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    console.error(`check-types: src/schema.ts differs from docs/openapi.yaml from line ${i + 1}:`);
    console.error(`  src/schema.ts:      ${a[i] ?? "(end of file)"}`);
    console.error(`  generated now:      ${b[i] ?? "(end of file)"}`);
    console.error("run `npm run generate-types` in clients/typescript and commit src/schema.ts");
    process.exitCode = 1;
  } else {
    console.log("check-types: src/schema.ts matches docs/openapi.yaml");
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
