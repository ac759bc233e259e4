// The agents page: every agent (the default first), a new one, an agent's own Telegram bot,
// the rooms it answers (Slack workspaces, Discord channels), its web-chat invitation,
// deleting one. Bot tokens are written here and never shown again; an invitation is shown
// once, when it is made.

import { useState } from "preact/hooks";
import { api, post, put, remove } from "../api";
import { useLoad } from "./common";

interface Agent {
  id: string;
  name: string;
  settings: Record<string, unknown>;
  telegram_bot: string | null;
  rooms?: { slack_teams: string[]; discord_channels: string[] };
  web_invitation?: boolean;
}

const ids = (text: string) => text.split(/[\s,]+/).filter((id) => id !== "");

function RoomsForm({ agent, onSaved }: { agent: Agent; onSaved: () => void }) {
  const [teams, setTeams] = useState((agent.rooms?.slack_teams ?? []).join(", "));
  const [channels, setChannels] = useState((agent.rooms?.discord_channels ?? []).join(", "));
  const [error, setError] = useState("");
  const save = (event: Event) => {
    event.preventDefault();
    put(`/api/agents/${agent.id}/rooms`, { slack_teams: ids(teams), discord_channels: ids(channels) }).then(
      () => (setError(""), onSaved()),
      (failure: Error) => setError(failure.message),
    );
  };
  return (
    <form onSubmit={save} class="inline">
      <input aria-label="Slack workspaces" placeholder="Slack team ids (T…)" value={teams}
        onInput={(event) => setTeams(event.currentTarget.value)} />
      <input aria-label="Discord channels" placeholder="Discord channel ids" value={channels}
        onInput={(event) => setChannels(event.currentTarget.value)} />
      <button type="submit">Save rooms</button>
      {error && <span role="alert" class="error">{error}</span>}
    </form>
  );
}

function InvitationForm({ agent, onSaved }: { agent: Agent; onSaved: () => void }) {
  const [shown, setShown] = useState("");
  const [error, setError] = useState("");
  const make = () =>
    post<{ invitation: string }>(`/api/agents/${agent.id}/invitation`, {}).then(
      (made) => (setShown(made.invitation), setError(""), onSaved()),
      (failure: Error) => setError(failure.message),
    );
  const end = () => remove(`/api/agents/${agent.id}/invitation`).then(() => (setShown(""), onSaved()), onSaved);
  return (
    <span class="inline">
      <span class="muted">{agent.web_invitation ? "web chat: invitation set" : "web chat: no invitation"}</span>{" "}
      <button type="button" onClick={make}>{agent.web_invitation ? "New invitation" : "Make invitation"}</button>
      {agent.web_invitation && <button type="button" onClick={end}>End invitation</button>}
      {shown && <span> Shown once: <code class="invitation">{shown}</code></span>}
      {error && <span role="alert" class="error">{error}</span>}
    </span>
  );
}

function BotForm({ agent, onSaved }: { agent: Agent; onSaved: () => void }) {
  const [token, setToken] = useState("");
  const [secret, setSecret] = useState("");
  const [username, setUsername] = useState(agent.telegram_bot ?? "");
  const [error, setError] = useState("");
  const save = (event: Event) => {
    event.preventDefault();
    put(`/api/agents/${agent.id}/telegram`, { token, secret, username }).then(
      () => (setToken(""), setSecret(""), setError(""), onSaved()),
      (failure: Error) => setError(failure.message),
    );
  };
  return (
    <form onSubmit={save} class="inline">
      <input aria-label="Bot username" placeholder="bot username" value={username}
        onInput={(event) => setUsername(event.currentTarget.value)} />
      <input aria-label="Bot token" type="password" placeholder="bot token" value={token}
        onInput={(event) => setToken(event.currentTarget.value)} />
      <input aria-label="Webhook secret" type="password" placeholder="webhook secret" value={secret}
        onInput={(event) => setSecret(event.currentTarget.value)} />
      <button type="submit">Save bot</button>
      {error && <span role="alert" class="error">{error}</span>}
    </form>
  );
}

export function AgentsPage() {
  const [loaded, error, reload] = useLoad(() => api<{ agents: Agent[] }>("/api/agents"), []);
  const [id, setId] = useState("");
  const [name, setName] = useState("");
  const [problem, setProblem] = useState("");
  const create = (event: Event) => {
    event.preventDefault();
    post("/api/agents", { id, name: name || id }).then(
      () => (setId(""), setName(""), setProblem(""), reload()),
      (failure: Error) => setProblem(failure.message),
    );
  };
  if (error) return <main class="page"><p role="alert" class="error">{error}</p></main>;
  if (!loaded) return <main class="page"><p>Loading…</p></main>;
  return (
    <main class="page">
      <h1>Agents</h1>
      <ul class="people" id="agents">
        {loaded.agents.map((agent) => (
          <li key={agent.id}>
            <strong>{agent.name}</strong> <code>{agent.id}</code>{" "}
            <span class="muted">
              {agent.id === "default" ? "Telegram: TELEGRAM_BOT_TOKEN" : agent.telegram_bot
                ? `Telegram: @${agent.telegram_bot} at /webhooks/telegram/${agent.id}` : "no Telegram bot"}
            </span>
            {agent.id === "default" && (
              <span class="muted"> Rooms: every room no other agent claims; web chat: WEB_CHAT_TOKEN</span>
            )}
            {agent.id !== "default" && <BotForm agent={agent} onSaved={reload} />}
            {agent.id !== "default" && <RoomsForm agent={agent} onSaved={reload} />}
            {agent.id !== "default" && <InvitationForm agent={agent} onSaved={reload} />}
            {agent.id !== "default" && (
              <button type="button" onClick={() => remove(`/api/agents/${agent.id}`).then(reload, reload)}>Delete</button>
            )}
          </li>
        ))}
      </ul>
      <h2>New agent</h2>
      <form onSubmit={create} class="inline">
        <input aria-label="Agent id" placeholder="id (a-z, 0-9, -)" value={id}
          onInput={(event) => setId(event.currentTarget.value)} />
        <input aria-label="Agent name" placeholder="name" value={name}
          onInput={(event) => setName(event.currentTarget.value)} />
        <button class="primary" type="submit">Create</button>
      </form>
      {problem && <p role="alert" class="error">{problem}</p>}
    </main>
  );
}
