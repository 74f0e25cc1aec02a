// The tests' real parts: the webhook binary built from this repository and a
// private redis-server on a free port, both as processes, as e2e/ runs them.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The module root: the nearest directory above this file holding go.mod. */
export const repoRoot = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "go.mod"))) {
    const up = dirname(dir);
    if (up === dir) throw new Error("harness: no go.mod above " + fileURLToPath(import.meta.url));
    dir = up;
  }
  return dir;
})();

const children = new Set<ChildProcess>();
const dirs: string[] = [];
process.on("exit", () => {
  for (const c of children) c.kill("SIGKILL");
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

let built: string | undefined;

/** Builds cmd/webhook and cmd/queenctl once per test process (go's cache makes the later ones quick). */
function binary(name: "webhook" | "queenctl"): string {
  if (!built) {
    const dir = tempDir("queen-ts-bin-");
    try {
      execFileSync("go", ["build", "-o", dir + "/", "./cmd/webhook", "./cmd/queenctl"], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
    } catch (e) {
      const err = e as { stderr?: Buffer; message: string };
      throw new Error(`harness: go build ./cmd/webhook ./cmd/queenctl failed: ${err.stderr?.toString() || err.message}`);
    }
    built = dir;
  }
  return join(built, name);
}

export function webhookBinary(): string {
  return binary("webhook");
}

/** A port nothing listens on now, for a process about to listen. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => (a && typeof a === "object" ? resolve(a.port) : reject(new Error("no port"))));
    });
  });
}

/** Polls cond until it holds; the limit only bounds a broken run. */
export async function eventually(what: string, cond: () => boolean | Promise<boolean>, limitMs = 20_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`not within ${limitMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

class Proc {
  out = "";
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;

  constructor(
    readonly name: string,
    private readonly cmd: string,
    private readonly args: string[],
    private readonly env: Record<string, string>,
  ) {}

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    const child = spawn(this.cmd, this.args, { env: this.env, stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    children.add(child);
    const keep = (b: Buffer) => {
      this.out += b.toString();
      if (this.out.length > 1 << 20) this.out = this.out.slice(-(1 << 19));
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    this.exited = new Promise((resolve) => child.once("exit", () => (children.delete(child), resolve())));
    return new Promise((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", (e) => reject(new Error(`${this.name}: cannot start ${this.cmd}: ${e.message}`)));
    });
  }

  async signal(sig: NodeJS.Signals): Promise<void> {
    if (!this.running) return;
    this.child?.kill(sig);
    if (sig === "SIGKILL" || sig === "SIGTERM") await this.exited;
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    const t = setTimeout(() => this.child?.kill("SIGKILL"), 15_000);
    await this.signal("SIGTERM");
    clearTimeout(t);
  }
}

/** A private redis-server keeping nothing on disk; a missing redis-server fails the test, never skips it. */
export class Redis {
  private proc: Proc | undefined;
  private constructor(readonly port: number) {}

  static async start(port?: number): Promise<Redis> {
    const r = new Redis(port ?? (await freePort()));
    await r.start();
    return r;
  }

  /** Reserves a port without starting, for a binary that must find Redis away. */
  static async reserve(): Promise<Redis> {
    return new Redis(await freePort());
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  async start(): Promise<void> {
    const dir = tempDir("queen-ts-redis-");
    this.proc = new Proc(
      "redis-server",
      "redis-server",
      ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
      { PATH: process.env.PATH ?? "" },
    );
    await this.proc.start();
    await eventually(`redis-server on ${this.port} ready`, () => {
      if (!this.proc?.running) throw new Error(`redis-server exited:\n${this.proc?.out}`);
      return this.proc.out.includes("Ready to accept connections");
    });
    // A deployment creates its ledger once, before the binaries start: the
    // API answers 503 (ledger missing) without it.
    execFileSync(binary("queenctl"), ["ledger", "init"], {
      env: { PATH: process.env.PATH ?? "", HOME: tempDir("queen-ts-ctl-"), QUEEN_REDIS_URL: this.url },
      stdio: ["ignore", "pipe", "pipe"],
    });
  }

  /** SIGSTOP: Redis hangs, as an overloaded or partitioned one does. */
  pause(): Promise<void> {
    return this.proc?.signal("SIGSTOP") ?? Promise.resolve();
  }

  resume(): Promise<void> {
    return this.proc?.signal("SIGCONT") ?? Promise.resolve();
  }

  async stop(): Promise<void> {
    await this.resume();
    await this.proc?.stop();
  }
}

/** Secrets of one test file, random so no test could lean on a known one. */
export const token = "ts-" + randomBytes(16).toString("hex");
const webhookSecret = randomBytes(16).toString("hex");

/** The built webhook on loopback ports, with the env it needs; GitHub is a closed port (the API needs none). */
export class Webhook {
  private proc: Proc | undefined;
  private constructor(
    readonly apiPort: number,
    private readonly env: Record<string, string>,
  ) {}

  static async start(redis: Redis, extra: Record<string, string> = {}, o: { waitReady?: boolean } = {}): Promise<Webhook> {
    const dir = tempDir("queen-ts-webhook-");
    const key = join(dir, "app.pem");
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    writeFileSync(key, privateKey.export({ type: "pkcs1", format: "pem" }), { mode: 0o600 });
    const apiPort = await freePort();
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "",
      HOME: dir,
      QUEEN_REDIS_URL: redis.url,
      GITHUB_APP_ID: "1",
      GITHUB_APP_PRIVATE_KEY_FILE: key,
      GITHUB_WEBHOOK_SECRET: webhookSecret,
      GITHUB_API_URL: `http://127.0.0.1:${await freePort()}/`,
      QUEEN_API_TOKEN: token,
      QUEEN_LISTEN: `127.0.0.1:${await freePort()}`,
      QUEEN_API_LISTEN: `127.0.0.1:${apiPort}`,
      ...extra,
    };
    const w = new Webhook(apiPort, env);
    await w.start(o);
    return w;
  }

  get url(): string {
    return `http://127.0.0.1:${this.apiPort}`;
  }

  get log(): string {
    return this.proc?.out ?? "";
  }

  /** Starts (again) on the same ports, waiting until /healthz answers, and /readyz unless told not to. */
  async start(o: { waitReady?: boolean } = {}): Promise<void> {
    this.proc = new Proc("webhook", webhookBinary(), [], this.env);
    await this.proc.start();
    const path = o.waitReady === false ? "/healthz" : "/readyz";
    await eventually(`webhook ${this.url}${path} answers 200`, async () => {
      if (!this.proc?.running) throw new Error(`webhook exited:\n${this.proc?.out}`);
      try {
        const res = await fetch(this.url + path);
        await res.arrayBuffer();
        return res.status === 200;
      } catch {
        return false;
      }
    });
  }

  /** SIGKILL, as a crash or an evicted pod. */
  kill(): Promise<void> {
    return this.proc?.signal("SIGKILL") ?? Promise.resolve();
  }

  stop(): Promise<void> {
    return this.proc?.stop() ?? Promise.resolve();
  }
}
