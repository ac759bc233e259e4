// `make deploy`: the first deployment and every later one, idempotently (see
// docs/deploy.md). Each step prints one line saying what it did or skipped.
//
// Inputs (all optional):
//   WRANGLER_CONFIG    the wrangler config            (default: wrangler.toml)
//   SECRETS_FILE       the production secrets file    (default: .prod.vars)
//   WORKER_URL         the Worker's public URL        (default: read from `wrangler deploy`)
//   EMAIL_ADDRESS      the address routed to the Worker (read from the secrets file, never uploaded)
//   TELEGRAM_API_BASE, DISCORD_API_BASE   platform API bases (default: the production vars)
//   TEAMS_TOKEN_URL                       the Microsoft token endpoint (default: the production vars)
//   VECTORIZE_DIMENSIONS                  the index width (default: from EMBEDDING_MODEL)
// The secrets file holds KEY=value lines; platform credentials are read from it only
// (never from the shell), so what is registered matches what the Worker gets.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ENV = "production";
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CONFIG = path.resolve(process.env.WRANGLER_CONFIG || path.join(ROOT, "wrangler.toml"));
const SECRETS = path.resolve(process.env.SECRETS_FILE || path.join(ROOT, ".prod.vars"));
// Keys of the secrets file that steer this script and are not Worker settings.
const DEPLOY_ONLY = new Set(["WORKER_URL", "EMAIL_ADDRESS"]);
// Widths of the embedding models edgebot supports (src/memory/embed.rs: local is 384).
const MODEL_DIMENSIONS = {
  local: 384,
  "workers-ai/@cf/baai/bge-small-en-v1.5": 384,
  "workers-ai/@cf/baai/bge-base-en-v1.5": 768,
  "workers-ai/@cf/baai/bge-large-en-v1.5": 1024,
  "openai/text-embedding-3-small": 1536,
  "openai/text-embedding-3-large": 3072,
};
// The metadata properties the memory search filters on (src/memory/vector_index.rs): a
// memory's type, and its scope (who may see it; vectors written before the index existed
// are re-written by the cron, which re-indexes them).
const METADATA_INDEXES = [
  { propertyName: "memory_type", indexType: "string" },
  { propertyName: "scope", indexType: "string" },
];
// What edgebot reads from Telegram (src/platforms/telegram/wire.rs ALLOWED_UPDATES, the same
// list): new messages, their edits, reactions (sent only when named) and presses of the
// approval buttons.
const TELEGRAM_UPDATES = ["message", "edited_message", "message_reaction", "callback_query"];

let failures = 0;
const say = (step, what) => console.log(`deploy: ${step}: ${what}`);
function die(message, output) {
  if (output) process.stderr.write(output.endsWith("\n") ? output : `${output}\n`);
  console.error(`deploy: error: ${message}`);
  process.exit(1);
}
const relative = (file) => {
  const name = path.relative(process.cwd(), file);
  return name && !name.startsWith("..") ? name : file;
};

/** Runs wrangler against the production environment; dies on failure unless `allowFailure`. */
function wrangler(args, { input = "", allowFailure = false } = {}) {
  const result = spawnSync("wrangler", [...args, "--config", CONFIG, "--env", ENV], {
    encoding: "utf8",
    input, // also makes stdin a pipe: wrangler never prompts
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) die(`could not run wrangler: ${result.error.message}`);
  const output = `${result.stdout}${result.stderr}`;
  if (result.status !== 0 && !allowFailure) die(`wrangler ${args.join(" ")} failed`, output);
  return { ok: result.status === 0, stdout: result.stdout, output };
}

/** The JSON a `--json` command printed (wrangler may print a warning before it). */
function jsonOf(text, what) {
  const start = text.search(/[[{]/);
  try {
    return JSON.parse(text.slice(start));
  } catch {
    return die(`could not read ${what}`, text);
  }
}

/** KEY=value lines: `#` comments, blank lines, optional `export ` and quotes. */
function readDotEnv(file) {
  const values = {};
  const lines = readFileSync(file, "utf8").split(/\r?\n/);
  for (const [number, raw] of lines.entries()) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    // The line is not echoed: it may be a secret.
    if (!match) die(`${relative(file)} line ${number + 1} is not KEY=value`);
    let value = match[2];
    const quoted = /^(["'])(.*)\1$/.exec(value);
    if (quoted) value = quoted[1] === '"' ? quoted[2].replace(/\\n/g, "\n") : quoted[2];
    else value = value.replace(/\s+#.*$/, "").trim();
    values[match[1]] = value;
  }
  return values;
}

/** Sets `database_id` of the production D1 binding named `name`, in the TOML text. */
function recordDatabaseId(text, name, id) {
  const lines = text.split("\n");
  const header = `[[env.${ENV}.d1_databases]]`;
  for (let start = 0; start < lines.length; start++) {
    if (lines[start].trim() !== header) continue;
    let end = start + 1;
    while (end < lines.length && !lines[end].trim().startsWith("[")) end++;
    const block = lines.slice(start + 1, end);
    if (!block.some((line) => new RegExp(`^\\s*database_name\\s*=\\s*"${name}"`).test(line))) continue;
    const at = block.findIndex((line) => /^\s*database_id\s*=/.test(line));
    if (at >= 0) lines[start + 1 + at] = lines[start + 1 + at].replace(/=\s*"[^"]*"/, `= "${id}"`);
    else lines.splice(start + 1, 0, `database_id = "${id}"`);
    return lines.join("\n");
  }
  return null;
}

async function http(method, url, { headers = {}, body } = {}) {
  try {
    const response = await fetch(url, {
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: response.status, ok: response.ok, json, text };
  } catch (error) {
    return { status: 0, ok: false, json: null, text: String(error.cause ?? error) };
  }
}

// 1. Logged in?
const whoami = wrangler(["whoami", "--json"], { allowFailure: true });
if (!whoami.ok && !/"loggedIn":\s*false/.test(whoami.output)) die("wrangler whoami failed", whoami.output);
const user = whoami.ok ? jsonOf(whoami.stdout, "wrangler whoami --json") : null;
if (!user?.loggedIn) {
  die(
    "not logged in to Cloudflare: run `make login` (`npx wrangler login` with Node 22), or set " +
      "CLOUDFLARE_API_TOKEN (and CLOUDFLARE_ACCOUNT_ID if the token sees several accounts); then rerun",
  );
}
say("login", `logged in (${user.authType ?? "token"}${user.email ? `, ${user.email}` : ""})`);

// The production environment as wrangler resolves it.
if (!existsSync(CONFIG)) die(`no wrangler config at ${CONFIG}`);
const { unstable_readConfig } = createRequire(import.meta.url)("wrangler");
let config = unstable_readConfig({ config: CONFIG, env: ENV });
const vars = config.vars ?? {};
const configName = relative(CONFIG);

// 1b. D1 shards: with D1_SHARDS over 1 (the secrets file, else the production vars),
// conversations' rows live in that many databases (docs/scale.md), bound as DB_SHARD_0…
// Each missing binding is added to the config; step 2 creates its database.
const shardSetting = (existsSync(SECRETS) ? readDotEnv(SECRETS).D1_SHARDS : undefined) ?? vars.D1_SHARDS ?? "1";
const shardCount = Number(shardSetting);
if (!Number.isInteger(shardCount) || shardCount < 1 || shardCount > 64 || (shardCount & (shardCount - 1)) !== 0) {
  die(`D1_SHARDS is ${shardSetting}: use a power of two from 1 to 64`);
}
if (shardCount === 1) {
  say("d1 shards", "1 (the shared DB), skipped");
} else {
  const bound = new Set((config.d1_databases ?? []).map((binding) => binding.binding));
  const missing = [...Array(shardCount).keys()].filter((shard) => !bound.has(`DB_SHARD_${shard}`));
  if (missing.length && !CONFIG.endsWith(".toml")) die(`bind DB_SHARD_${missing[0]} (and the rest) in ${configName}`);
  const blocks = missing.map(
    (shard) =>
      `\n[[env.${ENV}.d1_databases]]\nbinding = "DB_SHARD_${shard}"\ndatabase_name = "edgebot-shard-${shard}"\n` +
      `database_id = "00000000-0000-0000-0000-000000000000"\nmigrations_dir = "migrations"\n`,
  );
  if (blocks.length) {
    writeFileSync(CONFIG, `${readFileSync(CONFIG, "utf8").trimEnd()}\n${blocks.join("")}`);
    config = unstable_readConfig({ config: CONFIG, env: ENV });
  }
  say("d1 shards", `${shardCount}: ${blocks.length ? `bound ${missing.map((shard) => `DB_SHARD_${shard}`).join(", ")}` : "all bound, skipped"}`);
}

// 2. D1: create the database if missing, record its id in the config.
for (const binding of config.d1_databases ?? []) {
  const name = binding.database_name;
  const list = () => jsonOf(wrangler(["d1", "list", "--json"]).stdout, "wrangler d1 list --json");
  let database = list().find((db) => db.name === name);
  let did = "exists";
  if (!database) {
    wrangler(["d1", "create", name]);
    database = list().find((db) => db.name === name);
    if (!database) die(`d1 database ${name} was created but is not listed`);
    did = "created";
  }
  if (binding.database_id === database.uuid) {
    say(`d1 database ${name}`, `${did} (id ${database.uuid}), ${did === "exists" ? "skipped" : "recorded"}`);
    continue;
  }
  const text = readFileSync(CONFIG, "utf8");
  const updated = CONFIG.endsWith(".toml") ? recordDatabaseId(text, name, database.uuid) : null;
  if (updated === null) {
    die(`put database_id = "${database.uuid}" in the ${ENV} D1 binding of ${configName} (not found there)`);
  }
  writeFileSync(CONFIG, updated);
  say(`d1 database ${name}`, `${did} (id ${database.uuid}), recorded in ${configName} [env.${ENV}]`);
}

// 3. Queues: every queue the environment produces to, consumes or dead-letters into.
const queues = [
  ...(config.queues?.producers ?? []).map((producer) => producer.queue),
  ...(config.queues?.consumers ?? []).flatMap((consumer) => [consumer.queue, consumer.dead_letter_queue]),
].filter((queue, index, all) => queue && all.indexOf(queue) === index);
for (const queue of queues) {
  const info = wrangler(["queues", "info", queue], { allowFailure: true });
  if (info.ok) {
    say(`queue ${queue}`, "exists, skipped");
  } else if (/does not exist/.test(info.output)) {
    wrangler(["queues", "create", queue]);
    say(`queue ${queue}`, "created");
  } else {
    die(`wrangler queues info ${queue} failed`, info.output);
  }
}

// 3b. R2: every bucket the environment binds (the FILES bucket people's files go to).
for (const { bucket_name: bucket } of config.r2_buckets ?? []) {
  const info = wrangler(["r2", "bucket", "info", bucket], { allowFailure: true });
  if (info.ok) {
    say(`r2 bucket ${bucket}`, "exists, skipped");
  } else if (/does not exist/i.test(info.output)) {
    wrangler(["r2", "bucket", "create", bucket]);
    say(`r2 bucket ${bucket}`, "created");
  } else {
    die(`wrangler r2 bucket info ${bucket} failed`, info.output);
  }
}

// 4. Vectorize: only when the environment binds an index.
const vectorize = config.vectorize ?? [];
if (vectorize.length === 0) say("vectorize", `no vectorize binding in [env.${ENV}], skipped`);
if (vectorize.length > 0) {
  const model = vars.EMBEDDING_MODEL ?? "local";
  const dimensions = Number(process.env.VECTORIZE_DIMENSIONS || MODEL_DIMENSIONS[model]);
  if (!dimensions) die(`the width of EMBEDDING_MODEL ${model} is unknown: set VECTORIZE_DIMENSIONS`);
  const existing = jsonOf(wrangler(["vectorize", "list", "--json"]).stdout, "wrangler vectorize list --json");
  for (const { index_name: index } of vectorize) {
    const found = existing.find((candidate) => candidate.name === index);
    if (!found) {
      wrangler(["vectorize", "create", index, `--dimensions=${dimensions}`, "--metric=cosine"]);
      say(`vectorize index ${index}`, `created (${dimensions} dimensions, cosine)`);
    } else if (found.config?.dimensions !== dimensions) {
      die(
        `vectorize index ${index} has ${found.config?.dimensions} dimensions but ${model} gives ${dimensions}: ` +
          `delete it (wrangler vectorize delete ${index}) or change EMBEDDING_MODEL`,
      );
    } else {
      say(`vectorize index ${index}`, `exists (${dimensions} dimensions), skipped`);
    }
    const listed = wrangler(["vectorize", "list-metadata-index", index, "--json"]).stdout;
    const properties = jsonOf(listed, "wrangler vectorize list-metadata-index --json");
    for (const { propertyName, indexType } of METADATA_INDEXES) {
      if (properties.some((property) => property.propertyName === propertyName)) {
        say(`vectorize metadata index ${index}.${propertyName}`, "exists, skipped");
        continue;
      }
      wrangler([
        "vectorize",
        "create-metadata-index",
        index,
        `--property-name=${propertyName}`,
        `--type=${indexType}`,
      ]);
      say(`vectorize metadata index ${index}.${propertyName}`, `created (${indexType})`);
    }
  }
}

// 5. Remote migrations.
for (const binding of config.d1_databases ?? []) {
  const applied = wrangler(["d1", "migrations", "apply", binding.binding, "--remote"]).output;
  if (/No migrations to apply/.test(applied)) {
    say(`d1 migrations ${binding.binding}`, "none to apply, skipped");
  } else {
    const names = [...new Set(applied.match(/\b\d+_[\w.-]+?\.sql\b/g) ?? [])];
    say(`d1 migrations ${binding.binding}`, `applied ${names.length} (${names.join(", ")})`);
  }
}

// 6. Secrets: every non-empty key of the secrets file but the plain vars.
const secrets = existsSync(SECRETS) ? readDotEnv(SECRETS) : null;
const secretsName = relative(SECRETS);
if (!secrets) {
  say("secrets", `no ${secretsName}, skipped (copy .prod.vars.example to ${secretsName} and fill it in)`);
} else {
  const upload = {};
  const asVars = [];
  for (const [key, value] of Object.entries(secrets)) {
    if (DEPLOY_ONLY.has(key) || value === "") continue;
    if (key in vars) asVars.push(key);
    else upload[key] = value;
  }
  const keys = Object.keys(upload);
  if (keys.length > 0) wrangler(["secret", "bulk"], { input: JSON.stringify(upload) });
  say("secrets", keys.length ? `uploaded ${keys.length} from ${secretsName} (${keys.join(", ")})` : `none in ${secretsName}, skipped`);
  if (asVars.length > 0) {
    say("secrets", `not uploaded: ${asVars.join(", ")} (plain vars of [env.${ENV}.vars] in ${configName}; set them there)`);
  }
}
const secret = (key) => secrets?.[key] || "";
const setting = (key) => secret(key) || vars[key] || "";

// 7. Deploy.
const deployed = wrangler(["deploy"]).output;
const version = /Current Version ID:\s*(\S+)/.exec(deployed)?.[1];
// The targets follow "Deployed <name> triggers": the workers.dev URL, routes, schedules.
const lines = deployed.split(/\r?\n/);
const targets = lines.slice(lines.findIndex((line) => /^Deployed /.test(line)) + 1 || lines.length);
const shown = targets.map((line) => /^\s+(https?:\/\/\S+)\s*$/.exec(line)?.[1]).find(Boolean);
const workerUrl = (process.env.WORKER_URL || secret("WORKER_URL") || shown || "").replace(/\/+$/, "");
say(
  "worker",
  `deployed ${config.name}${version ? ` (version ${version})` : ""}` +
    (workerUrl ? ` at ${workerUrl}` : ", no URL in the output (set WORKER_URL to register the platforms)"),
);

// 8. Platforms.
const telegramBase = (process.env.TELEGRAM_API_BASE || vars.TELEGRAM_API_BASE || "https://api.telegram.org").replace(/\/+$/, "");
const discordBase = (process.env.DISCORD_API_BASE || vars.DISCORD_API_BASE || "https://discord.com/api/v10").replace(/\/+$/, "");

if (!workerUrl) {
  say("platforms", "no Worker URL, skipped");
} else {
  // Telegram: point the bot at the Worker with the webhook secret.
  const token = secret("TELEGRAM_BOT_TOKEN");
  const webhookSecret = secret("TELEGRAM_WEBHOOK_SECRET");
  if (!token || !webhookSecret) {
    say("telegram", `TELEGRAM_BOT_TOKEN and TELEGRAM_WEBHOOK_SECRET not both in ${secretsName}, skipped`);
  } else if (!/^[A-Za-z0-9_-]{1,256}$/.test(webhookSecret)) {
    say("telegram", "TELEGRAM_WEBHOOK_SECRET must be 1-256 of A-Z a-z 0-9 _ -, skipped");
    failures++;
  } else {
    const url = `${workerUrl}/webhooks/telegram`;
    const answer = await http("POST", `${telegramBase}/bot${token}/setWebhook`, {
      body: { url, secret_token: webhookSecret, allowed_updates: TELEGRAM_UPDATES },
    });
    if (answer.ok && answer.json?.ok) {
      say("telegram", `webhook set to ${url} (updates: ${TELEGRAM_UPDATES.join(", ")})`);
    } else {
      say("telegram", `setWebhook failed (${answer.status}: ${answer.json?.description ?? answer.text.slice(0, 200)})`);
      failures++;
    }
  }

  // Discord: the commands, the interactions endpoint, and the Gateway when on.
  const applicationId = secret("DISCORD_APPLICATION_ID");
  const botToken = secret("DISCORD_BOT_TOKEN");
  if (!applicationId || !botToken) {
    say("discord", `DISCORD_APPLICATION_ID and DISCORD_BOT_TOKEN not both in ${secretsName}, skipped`);
  } else {
    const registered = spawnSync(path.join(ROOT, "scripts", "register-discord-commands.sh"), {
      encoding: "utf8",
      env: {
        ...process.env,
        DISCORD_APPLICATION_ID: applicationId,
        DISCORD_BOT_TOKEN: botToken,
        DISCORD_API_BASE: discordBase,
      },
    });
    if (registered.status === 0) {
      say("discord", "commands registered (/ask and the 'Ask edgebot' message command)");
    } else {
      process.stderr.write(`${registered.stdout ?? ""}${registered.stderr ?? ""}`);
      say("discord", "registering the commands failed (output above)");
      failures++;
    }
    // Discord checks the URL with a signed PING, which needs DISCORD_PUBLIC_KEY in the Worker.
    const endpoint = `${workerUrl}/webhooks/discord`;
    const patched = await http("PATCH", `${discordBase}/applications/@me`, {
      headers: { authorization: `Bot ${botToken}` },
      body: { interactions_endpoint_url: endpoint },
    });
    if (patched.ok) say("discord", `interactions endpoint set to ${endpoint}`);
    else {
      say(
        "discord",
        `could not set the interactions endpoint (${patched.status}: ${patched.text.slice(0, 200)}); ` +
          `check DISCORD_PUBLIC_KEY, then rerun or set ${endpoint} in the Developer Portal`,
      );
      failures++;
    }
  }
  if (setting("DISCORD_GATEWAY") !== "on") {
    say("discord gateway", "DISCORD_GATEWAY is not on, skipped");
  } else if (!secret("ADMIN_TOKEN")) {
    say("discord gateway", `DISCORD_GATEWAY is on but ADMIN_TOKEN is not in ${secretsName}, skipped`);
  } else {
    const started = await http("POST", `${workerUrl}/api/discord/gateway`, {
      headers: { authorization: `Bearer ${secret("ADMIN_TOKEN")}` },
    });
    if (started.ok) say("discord gateway", "started (POST /api/discord/gateway)");
    else {
      say("discord gateway", `start failed (${started.status}: ${started.text.slice(0, 200)})`);
      failures++;
    }
  }

  // Slack: creating the app and installing it are manual.
  if (secret("SLACK_SIGNING_SECRET") && secret("SLACK_BOT_TOKEN")) {
    say("slack", `credentials uploaded; the app's request URLs must be ${workerUrl}/webhooks/slack`);
  } else {
    say("slack", `SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN not both in ${secretsName}, skipped. To add Slack:`);
    for (const [number, step] of [
      `make slack-manifest URL=${workerUrl}, then at https://api.slack.com/apps: Create New App > From a manifest, paste it`,
      "Install to Workspace",
      `copy Basic Information > Signing Secret to SLACK_SIGNING_SECRET, OAuth & Permissions > Bot User OAuth Token to SLACK_BOT_TOKEN (and the bot's user id to SLACK_BOT_USER_ID) in ${secretsName}`,
      "make deploy again, then in Event Subscriptions click Retry so Slack verifies the request URL",
    ].entries()) {
      console.log(`deploy:   ${number + 1}. ${step}`);
    }
  }

  // Teams: the Azure Bot's messaging endpoint, its Teams channel and the Teams app are
  // settings of your Azure and Teams accounts, not the bot's: they cannot be registered
  // here. What can be checked is that the app id and secret get a Bot Framework token.
  const teamsApp = secret("TEAMS_APP_ID");
  const teamsPassword = secret("TEAMS_APP_PASSWORD");
  const teamsEndpoint = `${workerUrl}/webhooks/teams`;
  if (teamsApp && teamsPassword) {
    const tenant = secret("TEAMS_TENANT_ID") || vars.TEAMS_TENANT_ID || "botframework.com";
    const tokenUrl = (
      process.env.TEAMS_TOKEN_URL || secret("TEAMS_TOKEN_URL") || vars.TEAMS_TOKEN_URL ||
      "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token"
    ).replace("{tenant}", tenant);
    const form = new URLSearchParams({
      grant_type: "client_credentials", client_id: teamsApp, client_secret: teamsPassword,
      scope: "https://api.botframework.com/.default",
    });
    let answer;
    try {
      const response = await fetch(tokenUrl, { method: "POST", body: form, signal: AbortSignal.timeout(30_000) });
      answer = { ok: response.ok, status: response.status, json: await response.json().catch(() => null) };
    } catch (error) {
      answer = { ok: false, status: 0, json: { error: String(error.cause ?? error) } };
    }
    if (answer.ok && answer.json?.access_token) {
      say("teams", `credentials work (a Bot Framework token was issued); the Azure Bot's messaging endpoint must be ${teamsEndpoint}`);
      console.log("deploy:   make deploy cannot set it: Azure portal > your Azure Bot > Configuration > Messaging endpoint");
    } else {
      say("teams", `TEAMS_APP_ID and TEAMS_APP_PASSWORD got no token (${answer.status}: ${answer.json?.error ?? "no answer"}); check them (and TEAMS_TENANT_ID for a single-tenant bot)`);
      failures++;
    }
  } else {
    say("teams", `TEAMS_APP_ID and TEAMS_APP_PASSWORD not both in ${secretsName}, skipped. To add Microsoft Teams (see docs/teams.md):`);
    for (const [number, step] of [
      "Azure portal: Create a resource > Azure Bot (a new Microsoft App ID); in Channels, add Microsoft Teams",
      `in its Configuration, set Messaging endpoint to ${teamsEndpoint}; Manage Password > New client secret`,
      `copy the Microsoft App ID to TEAMS_APP_ID and the secret's value to TEAMS_APP_PASSWORD in ${secretsName} (and TEAMS_TENANT_ID for a single-tenant bot)`,
      "Teams Developer Portal: Apps > New app > App features > Bot, enter the App ID; publish or preview it in Teams",
      "make deploy again, which checks the credentials",
    ].entries()) {
      console.log(`deploy:   ${number + 1}. ${step}`);
    }
  }

  // WhatsApp: the app's webhook subscription through the Graph API (an app
  // access token is `{app-id}|{app-secret}`); Meta checks the callback with
  // the verify-token handshake, answered by the deployed Worker. Adding the
  // WhatsApp product and the phone number stays in Meta's console.
  const whatsappBase = (process.env.WHATSAPP_API_BASE || vars.WHATSAPP_API_BASE || "https://graph.facebook.com/v21.0").replace(/\/+$/, "");
  const appId = setting("WHATSAPP_APP_ID");
  const appSecret = secret("WHATSAPP_APP_SECRET");
  const verifyToken = secret("WHATSAPP_VERIFY_TOKEN");
  const callback = `${workerUrl}/webhooks/whatsapp`;
  if (!appId || !appSecret || !verifyToken) {
    say("whatsapp", `WHATSAPP_APP_ID, WHATSAPP_APP_SECRET and WHATSAPP_VERIFY_TOKEN not all set, skipped (or set ${callback} in Meta's console: docs/whatsapp.md)`);
  } else {
    const subscribed = await http("POST", `${whatsappBase}/${encodeURIComponent(appId)}/subscriptions`, {
      headers: { authorization: `Bearer ${appId}|${appSecret}` },
      body: { object: "whatsapp_business_account", callback_url: callback, verify_token: verifyToken, fields: "messages" },
    });
    if (subscribed.ok && subscribed.json?.success) say("whatsapp", `webhook subscribed: ${callback} (field: messages)`);
    else {
      say("whatsapp", `subscribing the webhook failed (${subscribed.status}: ${(subscribed.json?.error?.message ?? subscribed.text).slice(0, 200)})`);
      failures++;
    }
  }

  // The plain webhook: nothing to register; the calling system is told where to POST.
  if (secret("WEBHOOK_SECRET") && setting("WEBHOOK_CALLBACK_URL")) {
    say("webhook", `ready: the calling system POSTs to ${workerUrl}/webhooks/plain; replies go to WEBHOOK_CALLBACK_URL`);
  } else {
    say("webhook", `WEBHOOK_SECRET and WEBHOOK_CALLBACK_URL not both set, skipped (docs/webhook.md)`);
  }
  // Email: Email Routing's rule that hands EMAIL_ADDRESS's mail to this Worker (docs/email.md).
  // Turning Email Routing on changes the zone's MX records, so that stays a click.
  const emailAddress = secret("EMAIL_ADDRESS");
  const emailDomain = emailAddress.split("@")[1] ?? "";
  if (!emailAddress) {
    say("email", `EMAIL_ADDRESS not in ${secretsName}, skipped (see docs/email.md)`);
  } else if (!emailDomain) {
    say("email", `EMAIL_ADDRESS is not an address, skipped`);
  } else {
    const rules = wrangler(["email", "routing", "rules", "list", emailDomain], { allowFailure: true });
    if (!rules.ok) {
      say("email", `Email Routing is not on for ${emailDomain}, skipped: turn it on in the dashboard (Email > Email Routing), then make deploy again`);
    } else if (rules.output.toLowerCase().includes(emailAddress.toLowerCase())) {
      say("email", `a rule for ${emailAddress} exists, skipped`);
    } else {
      wrangler([
        "email", "routing", "rules", "create", emailDomain, `--name=${config.name} ${emailAddress}`,
        "--match-type=literal", "--match-field=to", `--match-value=${emailAddress}`,
        "--action-type=worker", `--action-value=${config.name}`,
      ]);
      say("email", `routed ${emailAddress} to ${config.name}`);
    }
  }

  // "Add to Slack": each workspace installs through the OAuth flow (docs/slack.md).
  if (setting("SLACK_CLIENT_ID") && secret("SLACK_CLIENT_SECRET") && secret("SLACK_TOKEN_KEY")) {
    say(
      "slack installs",
      `workspaces install at ${workerUrl}/slack/install; the app's redirect URL must be ${workerUrl}/slack/oauth/callback (Manage Distribution lets other workspaces install)`,
    );
  }
}

if (failures > 0) {
  console.error(`deploy: error: ${failures} platform step(s) failed (see above)`);
  process.exit(1);
}
say("done", workerUrl || config.name);
