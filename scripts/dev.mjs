// `make dev`: the Worker on http://localhost:$PORT with no settings at all.
// Writes .dev.vars with fresh random tokens when there is none (never over an
// existing one), applies local D1 migrations, runs `wrangler dev`, and once the
// Worker answers, prints where to go and what is still missing, in the
// Worker's own words (`/health`, `/api/status`).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";

const port = process.env.PORT || "8787";
const base = `http://localhost:${port}`;
const VARS = ".dev.vars";

/** A token of 32 URL-safe characters: long enough for every check the Worker makes. */
const token = () => randomBytes(24).toString("base64url");

if (!existsSync(VARS)) {
  const generated = [
    "# Written by `make dev` with fresh random tokens; edit freely, it is never overwritten.",
    "# The dashboard's sign-in (and the admin API's bearer token).",
    `ADMIN_TOKEN=${token()}`,
    "# The web chat's invitation: whoever has it may chat at /chat/.",
    `WEB_CHAT_TOKEN=${token()}`,
    "# What Telegram sends back with every webhook (give it to setWebhook as secret_token).",
    `TELEGRAM_WEBHOOK_SECRET=${token()}`,
    "",
    readFileSync(".dev.vars.example", "utf8"),
  ].join("\n");
  writeFileSync(VARS, generated, { mode: 0o600 });
  console.log(`dev: wrote ${VARS} with new random tokens`);
}

/** The settings .dev.vars gives (the last line of a name wins, as wrangler reads it). */
function readVars() {
  const vars = {};
  for (const line of readFileSync(VARS, "utf8").split("\n")) {
    const found = /^\s*([A-Z0-9_]+)\s*=\s*(.*?)\s*$/.exec(line);
    if (found) vars[found[1]] = found[2].replace(/^(['"])(.*)\1$/, "$2");
  }
  return vars;
}

const migrated = spawnSync("wrangler", ["d1", "migrations", "apply", "DB", "--local"], { stdio: "inherit" });
if (migrated.status !== 0) process.exit(migrated.status ?? 1);

const wrangler = spawn("wrangler", ["dev", "--port", port, "--test-scheduled"], { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => wrangler.kill(signal));
wrangler.on("exit", (code) => process.exit(code ?? 0));

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function get(path, headers = {}) {
  const response = await fetch(`${base}${path}`, { headers });
  return { status: response.status, body: await response.json().catch(() => ({})) };
}

async function announce() {
  let health;
  for (let tries = 0; tries < 1200 && !health; tries++) {
    await sleep(500);
    health = await get("/health").catch(() => undefined);
  }
  if (!health) return console.log("dev: the Worker did not answer /health");
  const vars = readVars();
  const lines = ["", `edgebot is running on ${base}`];
  if (health.status !== 200) {
    // A setting the Worker refuses: every request says why; say it here too.
    lines.push(`  REFUSED: ${health.body.error ?? JSON.stringify(health.body)}`, `  Fix it in ${VARS}; wrangler reloads it.`);
    return console.log(lines.join("\n") + "\n");
  }
  if (vars.ADMIN_TOKEN) {
    lines.push(`  dashboard: ${base}/dashboard/  (sign in with ADMIN_TOKEN from ${VARS}: ${vars.ADMIN_TOKEN})`);
  } else {
    lines.push(`  dashboard: ${base}/dashboard/  (set ADMIN_TOKEN in ${VARS} to sign in)`);
  }
  if (vars.WEB_CHAT_TOKEN) {
    lines.push(`  web chat:  ${base}/chat/#invite=${encodeURIComponent(vars.WEB_CHAT_TOKEN)}`);
  } else {
    lines.push(`  web chat:  ${base}/chat/  (operators only: WEB_CHAT_TOKEN is not set)`);
  }
  const status = vars.ADMIN_TOKEN ? await get("/api/status", { authorization: `Bearer ${vars.ADMIN_TOKEN}` }).catch(() => undefined) : undefined;
  const setup = status?.body?.setup;
  if (setup) {
    if (!setup.model.ready) lines.push(`  missing:   ${setup.model.explain}`);
    for (const platform of setup.unconnected_platforms) lines.push(`  not connected: ${platform}`);
  }
  console.log(lines.join("\n") + "\n");
}

announce();
