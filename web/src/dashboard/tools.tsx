// The Tools page: the MCP servers the bot may call (which of their tools it sees and
// which need a person's approval first), and the approvals asked for in conversations.
// Approvals are decided in the conversation, never here: this page only shows them.

import { useEffect, useState } from "preact/hooks";
import { api, Approval, MCP_SERVER_NAME, McpAuth, McpServer, McpServerConfig, post, put, remove, when } from "../api";
import { useLoad, Badge } from "./common";
import { ToolServer } from "./tool_server";

const AUTH_KINDS: { kind: McpAuth["kind"]; label: string }[] = [
  { kind: "none", label: "none" },
  { kind: "bearer", label: "bearer token" },
  { kind: "oauth", label: "OAuth client credentials" },
];

const AUTH_FIELDS = ["token_secret", "token_url", "client_id", "client_secret_secret", "scope"] as const;

/// The auth as shown and sent back: its kind and the names it carries, nothing else.
function authNames(auth: McpAuth): McpAuth {
  const names: McpAuth = { kind: auth.kind };
  for (const field of AUTH_FIELDS) if (auth[field]) names[field] = auth[field];
  return names;
}

function AuthSummary({ auth }: { auth: McpAuth }) {
  if (auth.kind === "bearer") return <>bearer token from secret <code>{auth.token_secret ?? "—"}</code></>;
  if (auth.kind === "oauth") {
    return (
      <>
        OAuth client credentials: client <code>{auth.client_id ?? "—"}</code> at {auth.token_url ?? "—"}, secret from{" "}
        <code>{auth.client_secret_secret ?? "—"}</code>{auth.scope ? <>, scope <code>{auth.scope}</code></> : null}
      </>
    );
  }
  return <>none</>;
}

function Status({ server }: { server: McpServer }) {
  const down = server.down_until !== null && server.down_until > Date.now();
  return (
    <span class="mcp-status">
      {down ? <Badge value="down" /> : <Badge value="up" />}
      {down && <> until {when(server.down_until)}</>}
      {server.last_error && <span class={down ? "error" : "muted"}> {down ? "" : "last error: "}{server.last_error}</span>}
    </span>
  );
}

interface Choices {
  exposed: Record<string, boolean>;
  approval: Record<string, boolean>;
  branches: boolean;
}

function choices(server: McpServer): Choices {
  return {
    exposed: Object.fromEntries(server.tools.map((tool) => [tool.name, tool.exposed])),
    approval: Object.fromEntries(server.tools.map((tool) => [tool.name, tool.needs_approval])),
    branches: server.branches,
  };
}

function ServerCard({ server, onChanged, onRemoved }: {
  server: McpServer;
  onChanged: (server: McpServer, notice: string) => void;
  onRemoved: (name: string) => void;
}) {
  const [chosen, setChosen] = useState(() => choices(server));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  useEffect(() => setChosen(choices(server)), [server]);
  const path = `/api/mcp/servers/${encodeURIComponent(server.name)}`;
  const run = async (work: () => Promise<void>) => {
    setBusy(true);
    setError("");
    try {
      await work();
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setBusy(false);
    }
  };
  const save = (event: Event) => {
    event.preventDefault();
    const names = server.tools.map((tool) => tool.name);
    const exposed = names.filter((name) => chosen.exposed[name]);
    // "Every listed tool" stays so while every tool is still checked, so tools the server lists later show up too.
    const expose = server.expose === null && exposed.length === names.length ? null : exposed;
    const body: McpServerConfig = {
      url: server.url,
      auth: authNames(server.auth),
      expose,
      approval: Object.fromEntries(names.map((name) => [name, !!chosen.approval[name]])),
      branches: chosen.branches,
    };
    run(async () => onChanged(await put<McpServer>(path, body), `Saved ${server.name}.`));
  };
  const refresh = () =>
    run(async () => {
      const refreshed = await post<McpServer>(`${path}/refresh`);
      onChanged(refreshed, `Listed the tools of ${server.name} again: ${refreshed.tools.length} tool(s).`);
    });
  const drop = () => {
    if (!confirm(`Remove the MCP server ${server.name}? The bot will no longer see its tools.`)) return;
    run(async () => {
      await remove(path);
      onRemoved(server.name);
    });
  };
  const toggle = (field: "exposed" | "approval", tool: string, on: boolean) =>
    setChosen((current) => ({ ...current, [field]: { ...current[field], [tool]: on } }));
  const id = `server-${server.name}`;
  return (
    <li data-server={server.name}>
      <h3 id={id}>{server.name}</h3>
      <dl class="facts">
        <div><dt>URL</dt><dd class="ids">{server.url}</dd></div>
        <div><dt>Auth</dt><dd><AuthSummary auth={server.auth} /></dd></div>
        <div><dt>Status</dt><dd><Status server={server} /></dd></div>
        <div><dt>Tools listed</dt><dd>{when(server.tools_at)}</dd></div>
        <div><dt>Calls</dt><dd>{server.calls}</dd></div>
      </dl>
      <form onSubmit={save} aria-labelledby={id}>
        {server.tools.length === 0
          ? <p class="muted">No tools listed yet: refresh the tools once the server is reachable.</p>
          : (
            <div class="scroll">
              <table class="mcp-tools">
                <thead><tr><th>Tool</th><th>Description</th><th>Read-only</th><th>Exposed</th><th>Needs approval</th></tr></thead>
                <tbody>
                  {server.tools.map((tool) => (
                    <tr key={tool.name} data-tool={tool.name}>
                      <td>{tool.name}<div class="muted">{tool.exposed_name}</div></td>
                      <td class="text">{tool.description}</td>
                      <td>{tool.read_only ? "yes" : "no"}</td>
                      <td>
                        <input type="checkbox" class="expose" aria-label={`Expose ${tool.name}`} checked={!!chosen.exposed[tool.name]}
                          onChange={(event) => toggle("exposed", tool.name, event.currentTarget.checked)} />
                      </td>
                      <td>
                        <input type="checkbox" class="needs-approval" aria-label={`${tool.name} needs approval`}
                          checked={!!chosen.approval[tool.name]}
                          onChange={(event) => toggle("approval", tool.name, event.currentTarget.checked)} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        <label class="check">
          <input type="checkbox" class="branches" checked={chosen.branches}
            onChange={(event) => setChosen({ ...chosen, branches: event.currentTarget.checked })} />
          Branches may use its tools that need no approval
        </label>
        <div class="actions">
          <button class="primary" type="submit" disabled={busy} aria-label={`Save ${server.name}`}>Save</button>
          <button type="button" disabled={busy} aria-label={`Refresh the tools of ${server.name}`} onClick={refresh}>Refresh tools</button>
          <button type="button" disabled={busy} aria-label={`Remove ${server.name}`} onClick={drop}>Remove</button>
        </div>
      </form>
      {error && <p role="alert" class="error">{error}</p>}
    </li>
  );
}

const EMPTY_FORM = {
  name: "", url: "", kind: "none" as McpAuth["kind"], token_secret: "", token_url: "", client_id: "",
  client_secret_secret: "", scope: "", branches: false,
};

function AddServer({ existing, onAdded }: { existing: string[]; onAdded: (server: McpServer, notice: string) => void }) {
  const [form, setForm] = useState(EMPTY_FORM);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const set = (field: keyof typeof EMPTY_FORM) => (event: { currentTarget: HTMLInputElement | HTMLSelectElement }) =>
    setForm({ ...form, [field]: event.currentTarget.value });
  const submit = async (event: Event) => {
    event.preventDefault();
    const name = form.name.trim();
    if (existing.includes(name) && !confirm(`There is already a server named ${name}. Replace it?`)) return;
    const auth: McpAuth = { kind: form.kind };
    if (form.kind === "bearer") auth.token_secret = form.token_secret.trim();
    if (form.kind === "oauth") {
      auth.token_url = form.token_url.trim();
      auth.client_id = form.client_id.trim();
      auth.client_secret_secret = form.client_secret_secret.trim();
      if (form.scope.trim()) auth.scope = form.scope.trim();
    }
    const body: McpServerConfig = { url: form.url.trim(), auth, expose: null, approval: {}, branches: form.branches };
    setBusy(true);
    setError("");
    try {
      const added = await put<McpServer>(`/api/mcp/servers/${encodeURIComponent(name)}`, body);
      setForm(EMPTY_FORM);
      onAdded(added, `Added ${added.name}: ${added.tools.length} tool(s) listed.`);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <h3 id="add-server-title">Add a server</h3>
      <form class="stack" id="add-server" onSubmit={submit} aria-labelledby="add-server-title">
        <label>
          Name (lowercase letters, digits and underscores, up to 20)
          <input id="mcp-name" required pattern={MCP_SERVER_NAME} maxLength={20} autocomplete="off" value={form.name}
            onInput={set("name")} />
        </label>
        <label>
          URL
          <input id="mcp-url" type="url" required placeholder="https://mcp.example.com/mcp" value={form.url} onInput={set("url")} />
        </label>
        <label>
          Authentication
          <select id="mcp-auth" value={form.kind} onChange={set("kind")}>
            {AUTH_KINDS.map((option) => <option value={option.kind}>{option.label}</option>)}
          </select>
        </label>
        {form.kind === "bearer" && (
          <label>
            Token secret name
            <input id="mcp-token-secret" required placeholder="MCP_TRACKER_TOKEN" autocomplete="off" value={form.token_secret}
              aria-describedby="mcp-secret-hint" onInput={set("token_secret")} />
          </label>
        )}
        {form.kind === "oauth" && (
          <>
            <label>
              Token URL
              <input id="mcp-token-url" type="url" required value={form.token_url} onInput={set("token_url")} />
            </label>
            <label>
              Client id
              <input id="mcp-client-id" required autocomplete="off" value={form.client_id} onInput={set("client_id")} />
            </label>
            <label>
              Client secret's secret name
              <input id="mcp-client-secret" required placeholder="MCP_TRACKER_SECRET" autocomplete="off"
                value={form.client_secret_secret} aria-describedby="mcp-secret-hint" onInput={set("client_secret_secret")} />
            </label>
            <label>
              Scope (optional)
              <input id="mcp-scope" value={form.scope} onInput={set("scope")} />
            </label>
          </>
        )}
        {form.kind !== "none" && (
          <p class="muted" id="mcp-secret-hint">
            A Worker secret whose name starts with MCP_, set with <code>wrangler secret put</code>. Only its name is kept
            here; the value never leaves the Worker.
          </p>
        )}
        <label class="check">
          <input id="mcp-branches" type="checkbox" checked={form.branches}
            onChange={(event) => setForm({ ...form, branches: event.currentTarget.checked })} />
          Branches may use read-only tools
        </label>
        <div class="actions">
          <button class="primary" type="submit" disabled={busy}>Add server</button>
        </div>
      </form>
      {error && <p role="alert" class="error" id="add-server-error">{error}</p>}
    </>
  );
}

function Servers() {
  const [loaded, error] = useLoad(() => api<McpServer[]>("/api/mcp/servers"), []);
  const [servers, setServers] = useState<McpServer[] | null>(null);
  const [notice, setNotice] = useState("");
  useEffect(() => setServers(loaded), [loaded]);
  const changed = (server: McpServer, text: string) => {
    setServers((current) => {
      const list = current ?? [];
      return list.some((other) => other.name === server.name)
        ? list.map((other) => (other.name === server.name ? server : other))
        : [...list, server];
    });
    setNotice(text);
  };
  const removed = (name: string) => {
    setServers((current) => (current ?? []).filter((other) => other.name !== name));
    setNotice(`Removed ${name}.`);
  };
  return (
    <section aria-labelledby="mcp-title">
      <h2 id="mcp-title">MCP servers</h2>
      <p aria-live="polite" class="muted" id="mcp-notice">{notice}</p>
      {error && <p role="alert" class="error">{error}</p>}
      {servers && servers.length === 0 && <p class="muted">No MCP servers yet.</p>}
      <ul class="people" id="mcp-servers">
        {(servers ?? []).map((server) => (
          <ServerCard key={server.name} server={server} onChanged={changed} onRemoved={removed} />
        ))}
      </ul>
      <AddServer existing={(servers ?? []).map((server) => server.name)} onAdded={changed} />
    </section>
  );
}

const ARGUMENTS_SHOWN = 80;

function Decision({ approval }: { approval: Approval }) {
  if (approval.status === "waiting") {
    return <>{approval.expires_at ? `waits until ${when(approval.expires_at)}` : "waits"}</>;
  }
  if (!approval.decided_by && !approval.decided_at) return <>—</>;
  return <>{approval.decided_by ?? "—"}<div class="muted">{when(approval.decided_at)}</div></>;
}

function Approvals() {
  const [approvals, error, reload] = useLoad(() => api<Approval[]>("/api/approvals"), []);
  return (
    <section aria-labelledby="approvals-title">
      <div class="row">
        <h2 id="approvals-title">Approvals</h2>
        <button type="button" id="approvals-reload" onClick={reload}>Reload</button>
      </div>
      <p class="muted">Tool calls and tasks that wait for a person's yes. They are decided in the conversation that asked.</p>
      {error && <p role="alert" class="error">{error}</p>}
      {approvals && approvals.length === 0 && <p class="muted">No approvals asked for yet.</p>}
      {approvals && approvals.length > 0 && (
        <div class="scroll">
          <table id="approvals">
            <thead>
              <tr><th>Asked</th><th>Conversation</th><th>What</th><th>Arguments</th><th>Asked by</th><th>Status</th><th>Decided</th></tr>
            </thead>
            <tbody>
              {approvals.map((approval) => (
                <tr key={approval.id} data-approval={approval.id}>
                  <td>{when(approval.created_at)}</td>
                  <td>
                    <a href={`#/c/${encodeURIComponent(approval.conversation_key)}`}>{approval.conversation_key}</a>
                  </td>
                  <td>{approval.what}<div class="muted">{approval.kind}</div></td>
                  <td>
                    <code class="arguments" title={approval.arguments}>
                      {approval.arguments.length > ARGUMENTS_SHOWN ? `${approval.arguments.slice(0, ARGUMENTS_SHOWN)}…` : approval.arguments}
                    </code>
                  </td>
                  <td title={approval.asker_id}>{approval.asker_name || approval.asker_id}</td>
                  <td><Badge value={approval.status} /></td>
                  <td><Decision approval={approval} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export function ToolsPage() {
  return (
    <main class="page">
      <h1>Tools</h1>
      <Servers />
      <Approvals />
      <ToolServer />
    </main>
  );
}
