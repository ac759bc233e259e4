// The Tools page's "Tool server" section: the clients other agents use to reach this
// agent over MCP (POST /mcp). A new client's token is shown once, right after it is made;
// revoking one refuses its token at once.

import { useState } from "preact/hooks";
import { api, post, remove, when } from "../api";
import { useLoad, Badge } from "./common";

interface McpClient {
  id: string;
  name: string;
  agent: string;
  tools: string[];
  conversations: string[];
  rate_per_minute: number;
  daily_budget_usd: number;
  created_at: number;
  revoked_at: number | null;
  calls: number;
  last_call_at: number | null;
  spent_today_usd: number;
}

const TOOLS = ["ask", "post", "search_memories", "list_tasks"];

function NewClient({ onCreated }: { onCreated: (token: string) => void }) {
  const [name, setName] = useState("");
  const [tools, setTools] = useState<string[]>(TOOLS);
  const [conversations, setConversations] = useState("");
  const [rate, setRate] = useState("60");
  const [budget, setBudget] = useState("1.00");
  const [error, setError] = useState("");
  const submit = async (event: Event) => {
    event.preventDefault();
    setError("");
    try {
      const created = await post<{ token: string }>("/api/mcp-clients", {
        name,
        tools,
        conversations: conversations.split(/[\s,]+/).filter((key) => key !== ""),
        rate_per_minute: Number(rate),
        daily_budget_usd: Number(budget),
      });
      setName("");
      onCreated(created.token);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    }
  };
  const toggle = (tool: string, on: boolean) =>
    setTools((current) => (on ? [...current.filter((known) => known !== tool), tool] : current.filter((known) => known !== tool)));
  return (
    <form id="mcp-client-new" onSubmit={submit}>
      <label>Name <input required value={name} onInput={(event) => setName(event.currentTarget.value)} /></label>
      <fieldset>
        <legend>Tools</legend>
        {TOOLS.map((tool) => (
          <label key={tool}>
            <input type="checkbox" checked={tools.includes(tool)} onChange={(event) => toggle(tool, event.currentTarget.checked)} /> {tool}
          </label>
        ))}
      </fieldset>
      <label>Conversations (keys) <input value={conversations} placeholder="telegram:4242"
        onInput={(event) => setConversations(event.currentTarget.value)} /></label>
      <label>Requests a minute <input type="number" min="1" value={rate} onInput={(event) => setRate(event.currentTarget.value)} /></label>
      <label>Daily budget (USD) <input type="number" min="0" step="0.01" value={budget}
        onInput={(event) => setBudget(event.currentTarget.value)} /></label>
      <button type="submit">Create client</button>
      {error && <p role="alert" class="error">{error}</p>}
    </form>
  );
}

export function ToolServer() {
  const [clients, error, reload] = useLoad(() => api<McpClient[]>("/api/mcp-clients"), []);
  const [token, setToken] = useState("");
  const revoke = async (client: McpClient) => {
    if (!confirm(`Revoke the token of ${client.name}? It is refused from now on.`)) return;
    await remove(`/api/mcp-clients/${encodeURIComponent(client.id)}`);
    reload();
  };
  return (
    <section aria-labelledby="tool-server-title">
      <div class="row">
        <h2 id="tool-server-title">Tool server</h2>
        <button type="button" id="mcp-clients-reload" onClick={reload}>Reload</button>
      </div>
      <p class="muted">Other agents reach this one over MCP at <code>/mcp</code> with a client's bearer token.</p>
      {error && <p role="alert" class="error">{error}</p>}
      {token && (
        <p role="status" id="mcp-client-token">
          The new client's token, shown this once: <code>{token}</code>
        </p>
      )}
      <NewClient onCreated={(created) => { setToken(created); reload(); }} />
      {clients && clients.length > 0 && (
        <div class="scroll">
          <table id="mcp-clients">
            <thead>
              <tr><th>Client</th><th>Tools</th><th>Conversations</th><th>Limits</th><th>Calls</th><th>Spent today</th><th>Status</th><th></th></tr>
            </thead>
            <tbody>
              {clients.map((client) => (
                <tr key={client.id} data-client={client.id}>
                  <td>{client.name}<div class="muted">{client.id} · {client.agent}</div></td>
                  <td>{client.tools.join(", ") || "—"}</td>
                  <td>{client.conversations.join(", ") || "—"}</td>
                  <td>{client.rate_per_minute}/min, ${client.daily_budget_usd.toFixed(2)}/day</td>
                  <td>{client.calls}<div class="muted">{when(client.last_call_at)}</div></td>
                  <td>${client.spent_today_usd.toFixed(4)}</td>
                  <td>{client.revoked_at ? <Badge value="revoked" /> : <Badge value="active" />}</td>
                  <td>{!client.revoked_at && <button type="button" onClick={() => revoke(client)}>Revoke</button>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
