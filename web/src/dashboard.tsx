// The operator's dashboard: conversations, one conversation live, memory,
// tasks and schedules, settings. Hash routes keep it one static page.

import { render } from "preact";
import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import {
  api,
  ApiError,
  Conversation,
  Envelope,
  InboundRecord,
  Memory,
  MEMORY_TYPES,
  OutboxEntry,
  post,
  put,
  RunningProcess,
  remove,
  ScheduledJob,
  SEARCH_MODES,
  socketUrl,
  SpendLimit,
  SpendReport,
  SpendRow,
  Task,
  Usage,
  when,
  WorkerSummary,
} from "./api";
import { connect } from "./live";

const LIST_REFRESH_MS = 3000;

type Route =
  | { page: "conversations" }
  | { page: "conversation"; key: string }
  | { page: "memory" | "tasks" | "spend" | "settings" };

function route(hash: string): Route {
  const [, page = "", ...rest] = hash.replace(/^#/, "").split("/");
  if (page === "c" && rest.length) return { page: "conversation", key: decodeURIComponent(rest.join("/")) };
  if (page === "memory" || page === "tasks" || page === "spend" || page === "settings") return { page };
  return { page: "conversations" };
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return hash;
}

/// Loads `load()` now and whenever `reload` is called; errors are shown, 401 signs out.
function useLoad<T>(load: () => Promise<T>, deps: unknown[]): [T | null, string, () => void] {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState("");
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let current = true;
    load().then(
      (loaded) => current && (setValue(loaded), setError("")),
      (failure: Error) => {
        if (failure instanceof ApiError && failure.status === 401) dispatchEvent(new Event("signed-out"));
        if (current) setError(failure.message);
      },
    );
    return () => {
      current = false;
    };
  }, [...deps, tick]);
  return [value, error, useCallback(() => setTick((n) => n + 1), [])];
}

function Badge({ value }: { value: string }) {
  return <span class={`badge ${value}`}>{value}</span>;
}

function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError("");
    try {
      await post("/api/session", { token });
      onSignedIn();
    } catch (failure) {
      setError(failure instanceof ApiError && failure.status === 401 ? "That token is not right." : String(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="page narrow">
      <h1>edgebot dashboard</h1>
      <form onSubmit={submit} class="row" aria-label="Sign in">
        <label>
          Admin token
          <input id="token" type="password" autocomplete="current-password" required value={token}
            onInput={(event) => setToken(event.currentTarget.value)} />
        </label>
        <button class="primary" type="submit" disabled={busy}>Sign in</button>
      </form>
      {error && <p role="alert" class="error">{error}</p>}
    </main>
  );
}

function Nav({ current, onSignOut }: { current: string; onSignOut: () => void }) {
  const link = (href: string, label: string, page: string) => (
    <a href={href} aria-current={current === page ? "page" : undefined}>{label}</a>
  );
  return (
    <nav class="top" aria-label="Sections">
      <strong>edgebot</strong>
      {link("#/", "Conversations", "conversations")}
      {link("#/memory", "Memory", "memory")}
      {link("#/tasks", "Tasks & schedules", "tasks")}
      {link("#/spend", "Spend", "spend")}
      {link("#/settings", "Settings", "settings")}
      <a href="/chat/">Web chat</a>
      <button type="button" onClick={onSignOut}>Sign out</button>
    </nav>
  );
}

function Conversations() {
  const [search, setSearch] = useState("");
  const [query, setQuery] = useState("");
  useEffect(() => {
    const timer = setTimeout(() => setQuery(search), 250);
    return () => clearTimeout(timer);
  }, [search]);
  const [list, error, reload] = useLoad(
    () => api<Conversation[]>(`/api/conversations${query ? `?q=${encodeURIComponent(query)}` : ""}`),
    [query],
  );
  // New conversations appear while the list is open (one small query every few seconds).
  useEffect(() => {
    const timer = setInterval(reload, LIST_REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  return (
    <main class="page">
      <h1>Conversations</h1>
      <form class="row" role="search" onSubmit={(event) => event.preventDefault()}>
        <label>
          Search conversations
          <input id="conversation-search" type="search" value={search}
            onInput={(event) => setSearch(event.currentTarget.value)} />
        </label>
      </form>
      {error && <p role="alert" class="error">{error}</p>}
      {list && list.length === 0 && <p class="muted">No conversations yet.</p>}
      {list && list.length > 0 && (
        <div class="scroll">
          <table id="conversations">
            <thead>
              <tr><th>Conversation</th><th>Platform</th><th>Last activity</th><th>Messages</th><th>Engaged</th><th>Observed</th></tr>
            </thead>
            <tbody>
              {list.map((row) => (
                <tr key={row.conversation_key} data-key={row.conversation_key}>
                  <td>
                    <a href={`#/c/${encodeURIComponent(row.conversation_key)}`}>{row.title || row.conversation_key}</a>
                    {row.title && <div class="muted">{row.conversation_key}</div>}
                  </td>
                  <td>{row.platform}</td>
                  <td>{when(row.last_activity_at)}</td>
                  <td>{row.message_count}</td>
                  <td>{row.engaged_count}</td>
                  <td>{row.observed_count}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </main>
  );
}

interface ConversationView {
  processes: RunningProcess[];
  events: InboundRecord[];
  outbox: OutboxEntry[];
  workers: WorkerSummary[];
  envelopes: Envelope[];
  usage: Record<string, Usage>;
}

async function loadConversation(key: string): Promise<ConversationView> {
  const base = `/api/channels/${encodeURIComponent(key)}`;
  const [processes, events, outbox, workers, usage, envelopeLines] = await Promise.all([
    api<RunningProcess[]>(`${base}/processes`),
    api<InboundRecord[]>(`${base}/events`),
    api<OutboxEntry[]>(`${base}/outbox`),
    api<WorkerSummary[]>(`${base}/workers`),
    api<Record<string, Usage>>(`${base}/usage`),
    fetch(`${base}/envelopes?last=50`, { credentials: "same-origin" }).then((response) => response.text()),
  ]);
  const envelopes = envelopeLines
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Envelope);
  return { processes, events, outbox, workers, envelopes, usage };
}

type Line = { at: number; inbound?: InboundRecord; reply?: OutboxEntry };

function ConversationPage({ conversationKey }: { conversationKey: string }) {
  const [view, error, reload] = useLoad(() => loadConversation(conversationKey), [conversationKey]);
  const [live, setLive] = useState(false);
  useEffect(() => {
    let pending: number | undefined;
    const socket = connect(socketUrl(`/api/channels/${encodeURIComponent(conversationKey)}/live`), {
      // After a reconnect, catch up on whatever changed meanwhile.
      open: reload,
      message: () => {
        clearTimeout(pending);
        pending = setTimeout(reload, 100);
      },
      state: setLive,
    });
    return () => {
      clearTimeout(pending);
      socket.close();
    };
  }, [conversationKey]);
  const lines = useMemo<Line[]>(() => {
    if (!view) return [];
    const all: Line[] = [
      ...view.events.map((inbound) => ({ at: inbound.received_at, inbound })),
      ...view.outbox.map((reply) => ({ at: reply.created_at, reply })),
    ];
    return all.sort((a, b) => a.at - b.at);
  }, [view]);
  return (
    <main class="page">
      <p><a href="#/">← Conversations</a></p>
      <h1>{conversationKey}</h1>
      <p class="muted" id="live-state" aria-live="polite">{live ? "Live: updates as the conversation goes on" : "Connecting…"}</p>
      {error && <p role="alert" class="error">{error}</p>}
      {view && (
        <>
          <h2>Timeline</h2>
          {lines.length === 0 && <p class="muted">Nothing yet.</p>}
          <ol class="timeline" id="timeline">
            {lines.map((line) =>
              line.inbound ? (
                <li key={`in-${line.inbound.seq}`} class="inbound" data-delivery={line.inbound.delivery_id}>
                  <div>
                    <strong>{line.inbound.event.author?.name}</strong>{" "}
                    <span class="muted">{when(line.at)}</span>{" "}
                    <Badge value={line.inbound.decision} />{" "}
                    <span class="rung">rung: {line.inbound.reason}</span>{" "}
                    <span class="muted">({line.inbound.status})</span>
                  </div>
                  <div class="text">{line.inbound.event.text}</div>
                  {line.inbound.membership && <div class="muted">{line.inbound.membership}</div>}
                </li>
              ) : (
                <li key={`out-${line.reply!.id}`} class="reply" data-outbox={line.reply!.id}>
                  <div>
                    <strong>reply</strong> <span class="muted">{when(line.at)}</span> <Badge value={line.reply!.status} />
                    {line.reply!.attempts > 1 && <span class="muted"> {line.reply!.attempts} attempts</span>}
                  </div>
                  <div class="text">{line.reply!.text}</div>
                  {line.reply!.last_error && <div class="error">{line.reply!.last_error}</div>}
                </li>
              ),
            )}
          </ol>
          <h2>Running now</h2>
          {view.processes.length === 0 ? (
            <p class="muted">No branch or worker is running.</p>
          ) : (
            <div class="scroll">
              <table id="processes">
                <thead><tr><th>Process</th><th>Kind</th><th>Task</th><th>Latest status</th><th>Started</th><th>Last heard</th></tr></thead>
                <tbody>
                  {view.processes.map((process) => (
                    <tr key={process.id}>
                      <td>{process.id}</td>
                      <td>{process.kind}{process.waiting ? " (waiting for a follow-up)" : ""}</td>
                      <td class="text">{process.task}</td>
                      <td class="text">{process.status ?? "—"}</td>
                      <td>{when(process.started_at)}</td>
                      <td>{when(process.last_heard_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h2>Workers</h2>
          {view.workers.length === 0 ? (
            <p class="muted">No workers.</p>
          ) : (
            <div class="scroll">
              <table id="workers">
                <thead><tr><th>Worker</th><th>Task</th><th>State</th><th>Status</th><th>Segments</th><th>Tokens</th><th>Outcome</th></tr></thead>
                <tbody>
                  {view.workers.map((worker) => (
                    <tr key={worker.id} data-worker={worker.id}>
                      <td>{worker.id}</td>
                      <td class="text">{worker.task}</td>
                      <td class="worker-state"><Badge value={worker.cancelled ? "cancelled" : worker.state} /></td>
                      <td class="text">{worker.status ?? "—"}</td>
                      <td>{worker.segments}</td>
                      <td>{(worker.usage?.input_tokens ?? 0) + (worker.usage?.output_tokens ?? 0)}</td>
                      <td class="text">{worker.outcome ?? "—"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h2>Branches and workers: envelopes</h2>
          {view.envelopes.length === 0 ? (
            <p class="muted">None.</p>
          ) : (
            <div class="scroll">
              <table id="envelopes">
                <thead><tr><th>When</th><th>Type</th><th>From</th><th>To</th><th>Body</th></tr></thead>
                <tbody>
                  {view.envelopes.map((envelope) => (
                    <tr key={envelope.id}>
                      <td>{when(envelope.ts)}</td>
                      <td><Badge value={envelope.type} /></td>
                      <td>{envelope.from}</td>
                      <td>{envelope.to}</td>
                      <td class="text">{envelope.body.slice(0, 400)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h2>Token usage</h2>
          <div class="scroll">
            <table id="usage">
              <thead><tr><th>Process</th><th>Input tokens</th><th>Output tokens</th></tr></thead>
              <tbody>
                {Object.entries(view.usage).map(([process, spent]) => (
                  <tr key={process}>
                    <td>{process}</td>
                    <td>{spent?.input_tokens ?? 0}</td>
                    <td>{spent?.output_tokens ?? 0}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </main>
  );
}

/** Who sees a memory, in words. */
function scopeLabel(scope: string): string {
  if (scope === "shared") return "everyone";
  if (scope === "operators") return "operators only";
  return scope;
}

function MemoryPage() {
  const [form, setForm] = useState({ query: "", mode: "hybrid", type: "" });
  const [search, setSearch] = useState(form);
  const [notice, setNotice] = useState("");
  const [found, error, reload] = useLoad(() => {
    const params = new URLSearchParams({ mode: search.mode, limit: "50" });
    if (search.query) params.set("query", search.query);
    if (search.type) params.set("memory_type", search.type);
    return api<Memory[]>(`/api/memories?${params}`);
  }, [search]);
  const [bulletin] = useLoad(() => api<{ bulletin: string; built_at: number | null }>("/api/memory/bulletin"), []);
  const shown = (found ?? []).filter((memory) => !search.type || memory.memory_type === search.type);
  const forget = async (memory: Memory) => {
    await remove(`/api/memories/${encodeURIComponent(memory.id)}`);
    setNotice(`Deleted memory ${memory.id}.`);
    reload();
  };
  // Only here (and through the admin API) does a memory become shared: no chat can share or change one.
  const share = async (memory: Memory, shared: boolean) => {
    const now = await post<Memory>(`/api/memories/${encodeURIComponent(memory.id)}/${shared ? "share" : "unshare"}`);
    setNotice(shared ? `Shared memory ${memory.id} with every conversation.` : `Memory ${memory.id} is private to ${now.scope} again.`);
    reload();
  };
  return (
    <main class="page">
      <h1>Memory</h1>
      <form class="row" role="search" onSubmit={(event) => (event.preventDefault(), setSearch({ ...form }))}>
        <label>
          Search memories
          <input id="memory-query" type="search" value={form.query}
            onInput={(event) => setForm({ ...form, query: event.currentTarget.value })} />
        </label>
        <label>
          Mode
          <select id="memory-mode" value={form.mode} onChange={(event) => setForm({ ...form, mode: event.currentTarget.value })}>
            {SEARCH_MODES.map((mode) => <option value={mode}>{mode}</option>)}
          </select>
        </label>
        <label>
          Type
          <select id="memory-type" value={form.type} onChange={(event) => setForm({ ...form, type: event.currentTarget.value })}>
            <option value="">any</option>
            {MEMORY_TYPES.map((type) => <option value={type}>{type}</option>)}
          </select>
        </label>
        <button class="primary" type="submit">Search</button>
      </form>
      <p aria-live="polite" class="muted" id="memory-notice">{notice}</p>
      {error && <p role="alert" class="error">{error}</p>}
      <div class="scroll">
        <table id="memories">
          <thead><tr><th>Memory</th><th>Type</th><th>Importance</th><th>Seen by</th><th>Saved</th><th></th></tr></thead>
          <tbody>
            {shown.map((memory) => (
              <tr key={memory.id} data-memory={memory.id}>
                <td class="text">{memory.content}</td>
                <td>{memory.memory_type}</td>
                <td>{memory.importance.toFixed(2)}</td>
                <td>{scopeLabel(memory.scope)}</td>
                <td>{when(memory.created_at)}</td>
                <td>
                  {memory.scope === "shared"
                    ? <button type="button" aria-label={`Unshare memory ${memory.id}`} onClick={() => share(memory, false)}>Unshare</button>
                    : <button type="button" aria-label={`Share memory ${memory.id}`} onClick={() => share(memory, true)}>Share</button>}
                  <button type="button" aria-label={`Delete memory ${memory.id}`} onClick={() => forget(memory)}>Delete</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {found && shown.length === 0 && <p class="muted">No memories found.</p>}
      <h2>Bulletin</h2>
      <p class="muted">Built {when(bulletin?.built_at)}</p>
      <p class="text" id="bulletin">{bulletin?.bulletin || "No bulletin yet."}</p>
    </main>
  );
}

function TasksPage() {
  const [tasks, taskError] = useLoad(() => api<Task[]>("/api/tasks"), []);
  const [jobs, jobError] = useLoad(() => api<ScheduledJob[]>("/api/schedules"), []);
  return (
    <main class="page">
      <h1>Tasks</h1>
      {taskError && <p role="alert" class="error">{taskError}</p>}
      {tasks && tasks.length === 0 && <p class="muted">The task board is empty.</p>}
      {tasks && tasks.length > 0 && (
        <div class="scroll">
          <table id="tasks">
            <thead><tr><th>#</th><th>Title</th><th>Status</th><th>Priority</th><th>Attempts</th><th>Conversation</th></tr></thead>
            <tbody>
              {tasks.map((task) => (
                <tr key={task.id}>
                  <td>{task.id}</td><td>{task.title}</td><td><Badge value={task.status} /></td>
                  <td>{task.priority}</td><td>{task.attempts}</td>
                  <td><a href={`#/c/${encodeURIComponent(task.conversation_key)}`}>{task.conversation_key}</a></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h2>Schedules</h2>
      {jobError && <p role="alert" class="error">{jobError}</p>}
      {jobs && jobs.length === 0 && <p class="muted">No scheduled jobs.</p>}
      {jobs && jobs.length > 0 && (
        <div class="scroll">
          <table id="schedules">
            <thead>
              <tr><th>Job</th><th>Prompt</th><th>Status</th><th>Next run</th><th>Conversation</th><th>Created by</th></tr>
            </thead>
            <tbody>
              {jobs.map((job) => (
                <tr key={job.id}>
                  <td>{job.id}</td><td class="text">{job.prompt}</td><td><Badge value={job.status} /></td>
                  <td>{job.next_run ?? "—"}</td><td>{job.conversation}</td>
                  <td>{job.created_by?.name ?? "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </main>
  );
}

const limitText = (limit: SpendLimit) =>
  [limit.tokens === null ? "" : `${limit.tokens} tokens`, limit.usd === null ? "" : `$${limit.usd.toFixed(2)}`]
    .filter(Boolean)
    .join(" / ") || "none";

/// Raises (or lowers) one subject's daily limit.
function LimitForm({ scope, row, onSaved }: { scope: string; row: SpendRow; onSaved: () => void }) {
  const [tokens, setTokens] = useState(String(row.limit.tokens ?? ""));
  const [usd, setUsd] = useState(String(row.limit.usd ?? ""));
  const [error, setError] = useState("");
  const save = (event: Event) => {
    event.preventDefault();
    const number = (text: string) => (text.trim() === "" ? null : Number(text));
    put(`/api/spend/limits/${scope}/${encodeURIComponent(row.subject)}`, { tokens: number(tokens), usd: number(usd) })
      .then(() => (setError(""), onSaved()), (failure: Error) => setError(failure.message));
  };
  return (
    <form class="inline" onSubmit={save}>
      <input aria-label="Tokens per day" size={9} value={tokens} onInput={(e) => setTokens(e.currentTarget.value)} />
      <input aria-label="US dollars per day" size={5} value={usd} onInput={(e) => setUsd(e.currentTarget.value)} />
      <button type="submit">Set limit</button>
      {error && <span role="alert" class="error">{error}</span>}
    </form>
  );
}

function SpendTable({ id, scope, rows, onSaved }: { id: string; scope: string; rows: SpendRow[]; onSaved: () => void }) {
  if (rows.length === 0) return <p class="muted">Nothing spent yet today.</p>;
  return (
    <div class="scroll">
      <table id={id}>
        <thead><tr><th>Who</th><th>Tokens</th><th>Price</th><th>Calls</th><th>Limit</th><th>Change</th></tr></thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.subject}>
              <td>{row.name ? `${row.name} (${row.subject})` : row.subject}</td>
              <td>{row.tokens}</td><td>${row.usd.toFixed(4)}</td><td>{row.calls}</td>
              <td>{limitText(row.limit)}{row.overridden ? " (set by an operator)" : ""}</td>
              <td><LimitForm scope={scope} row={row} onSaved={onSaved} /></td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/// Today's spend per person and per conversation (UTC days), with the limits.
function SpendPage() {
  const [report, error, reload] = useLoad(() => api<SpendReport>("/api/spend"), []);
  if (error) return <main class="page"><p role="alert" class="error">{error}</p></main>;
  if (!report) return <main class="page"><p>Loading…</p></main>;
  return (
    <main class="page">
      <h1>Spend on {report.day} (UTC)</h1>
      <p class="muted" id="deployment-spend">
        Whole deployment: {report.deployment ? `${report.deployment.tokens} tokens, $${report.deployment.usd.toFixed(4)}` : "nothing yet"};
        limit {limitText(report.deployment?.limit ?? report.configured.deployment)}.
      </p>
      <h2>People</h2>
      <SpendTable id="spend-people" scope="person" rows={report.people} onSaved={reload} />
      <h2>Conversations</h2>
      <SpendTable id="spend-conversations" scope="conversation" rows={report.conversations} onSaved={reload} />
    </main>
  );
}

type Settings = Record<string, unknown> & { secrets_set: Record<string, boolean> };

interface Status {
  version: string;
  bindings: Record<string, boolean>;
  migrations: string[] | null;
  platforms: Record<string, { ready: boolean }>;
  [field: string]: unknown;
}

function Flags({ id, flags, yes, no }: { id: string; flags: Record<string, boolean>; yes: string; no: string }) {
  return (
    <dl id={id}>
      {Object.entries(flags).map(([name, on]) => (
        <div key={name}><dt>{name}</dt><dd class={on ? "sent" : "muted"}>{on ? yes : no}</dd></div>
      ))}
    </dl>
  );
}

function SettingsPage() {
  const [loaded, error] = useLoad(() => Promise.all([api<Settings>("/api/settings"), api<Status>("/api/status")]), []);
  if (error) return <main class="page"><p role="alert" class="error">{error}</p></main>;
  if (!loaded) return <main class="page"><p>Loading…</p></main>;
  const [{ secrets_set, ...settings }, { bindings, platforms, migrations, version, ...status }] = loaded;
  const ready = Object.fromEntries(Object.entries(platforms).map(([name, state]) => [name, state.ready]));
  return (
    <main class="page">
      <h1>Settings</h1>
      <p class="muted">edgebot {version}</p>
      <h2>Platforms</h2>
      <Flags id="platforms" flags={ready} yes="configured" no="not configured" />
      <h2>Secrets</h2>
      <Flags id="secrets" flags={secrets_set} yes="set" no="not set" />
      <h2>Bindings</h2>
      <Flags id="bindings" flags={bindings} yes="present" no="absent" />
      <h2>Configuration</h2>
      <pre class="scroll" id="configuration">{JSON.stringify(settings, null, 2)}</pre>
      <h2>Status</h2>
      <p class="muted">Migrations applied: {migrations?.join(", ") ?? "unknown"}</p>
      <pre class="scroll" id="status">{JSON.stringify(status, null, 2)}</pre>
    </main>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState<boolean | null>(null);
  const hash = useHash();
  useEffect(() => {
    api("/api/session").then(() => setSignedIn(true), () => setSignedIn(false));
    const signedOut = () => setSignedIn(false);
    addEventListener("signed-out", signedOut);
    return () => removeEventListener("signed-out", signedOut);
  }, []);
  if (signedIn === null) return <p class="page">Loading…</p>;
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  const current = route(hash);
  const signOut = () => remove("/api/session").finally(() => setSignedIn(false));
  return (
    <>
      <Nav current={current.page === "conversation" ? "conversations" : current.page} onSignOut={signOut} />
      {current.page === "conversations" && <Conversations />}
      {current.page === "conversation" && <ConversationPage conversationKey={current.key} />}
      {current.page === "memory" && <MemoryPage />}
      {current.page === "tasks" && <TasksPage />}
      {current.page === "spend" && <SpendPage />}
      {current.page === "settings" && <SettingsPage />}
    </>
  );
}

render(<App />, document.getElementById("app")!);
