// The web chat: one browser session is one conversation with the agent.
// Messages go over a WebSocket to the conversation's channel object; a
// reconnect asks for the conversation again, and each message is kept once
// by its id, so nothing shows twice and nothing typed is lost.

import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError, post, socketUrl } from "./api";
import { connect, Live } from "./live";

interface Line {
  id: string;
  role: "user" | "assistant";
  author: string;
  text: string;
  at: number;
  pending?: boolean;
  /** A question waiting for someone's approval: open while it can still be decided. */
  approval?: { id: string; open: boolean } | null;
}

type Incoming =
  | { type: "history"; messages: Line[]; working: boolean }
  | ({ type: "message" } & Line)
  | { type: "working"; on: boolean }
  | { type: "draft"; author: string; text: string }
  | { type: "reaction"; id: string; emoji: string }
  | { type: "error"; id?: string; message: string };

interface Session {
  conversation: string;
  role: string;
}

/// A file uploaded and waiting for the next message.
interface Upload {
  upload: string;
  name: string;
  size: number;
}

/// Files one message may carry (the Worker's FILES_PER_MESSAGE).
const FILES_PER_MESSAGE = 4;

/// What the page sends for one message (kept until the server confirms it).
interface Outgoing {
  text: string;
  files: string[];
}

/// A message's text as the chat shows it (as the Worker's `chat_text`).
function chatText(text: string, files: number): string {
  if (files === 0) return text;
  const noted = files === 1 ? "[1 file]" : `[${files} files]`;
  return text.trim() ? `${text}\n${noted}` : noted;
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1048576) return `${Math.ceil(bytes / 1024)} KB`;
  return `${(bytes / 1048576).toFixed(1)} MB`;
}

/// Links the bot sends to the conversation's files (same-origin, signed).
const FILE_LINK = /\/api\/files\/[A-Za-z0-9._~%&=?\/-]+/g;

/// A message's text with its file links as links; the rest stays text
/// (Preact escapes it), so nothing in a message becomes markup.
function Text({ text }: { text: string }) {
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(FILE_LINK)) {
    const start = match.index ?? 0;
    parts.push(text.slice(last, start));
    parts.push(<a href={match[0]} download>{match[0].split("?")[0].split("/").pop()}</a>);
    last = start + match[0].length;
  }
  parts.push(text.slice(last));
  return <span class="text">{parts}</span>;
}

/// Approve and Deny under a line asking for approval. The server pushes the line
/// again, closed and with the outcome, so this only has to send the choice.
function ApprovalButtons({ id }: { id: string }) {
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(false);
  const [error, setError] = useState("");
  const [answer, setAnswer] = useState("");
  const decide = async (choice: "approve" | "deny") => {
    setBusy(true);
    setError("");
    try {
      const response = await fetch(`/api/chat/approvals/${encodeURIComponent(id)}`, {
        method: "POST",
        body: JSON.stringify({ choice }),
        credentials: "same-origin",
        headers: { "content-type": "application/json", accept: "application/json" },
      });
      const reply = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(reply.error ?? `failed (${response.status})`);
      setDone(true);
      setAnswer(typeof reply.message === "string" ? reply.message : "");
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="approval">
      <button type="button" class="approve" disabled={busy || done} onClick={() => decide("approve")}>Approve</button>
      <button type="button" class="deny" disabled={busy || done} onClick={() => decide("deny")}>Deny</button>
      {error && <span role="alert" class="error approval-error">{error}</span>}
      {answer && <span class="muted approval-answer">{answer}</span>}
    </div>
  );
}

/// Merges lines by id (a server copy replaces a pending one), in time order.
function merge(lines: Line[], incoming: Line[]): Line[] {
  const byId = new Map(lines.map((line) => [line.id, line]));
  // A line sent again (an approval once decided) keeps its place.
  for (const line of incoming) {
    const known = byId.get(line.id);
    byId.set(line.id, known ? { ...line, at: known.at } : line);
  }
  return [...byId.values()].sort((a, b) => a.at - b.at);
}

/** The invitation a link carries after `#invite=` (a fragment never reaches the server), taken out of the address. */
function invitationInLink(): string {
  const found = /^#invite=(.+)$/.exec(location.hash);
  if (!found) return "";
  history.replaceState(null, "", location.pathname + location.search);
  return decodeURIComponent(found[1]);
}

function Join({ onJoined }: { onJoined: (session: Session) => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const join = async (token: string) => {
    try {
      onJoined(await post<Session>("/api/chat/session", { token }));
    } catch (failure) {
      setError(failure instanceof ApiError && failure.status === 401 ? "That token is not right." : String(failure));
    }
  };
  const submit = (event: Event) => {
    event.preventDefault();
    join(token);
  };
  // A link with its invitation (`make dev` prints one) joins at once.
  useEffect(() => {
    const invited = invitationInLink();
    if (invited) join(invited);
  }, []);
  return (
    <main class="page narrow">
      <h1>edgebot chat</h1>
      <form class="row" onSubmit={submit} aria-label="Join the chat">
        <label>
          Invitation or admin token
          <input id="invite" type="password" required value={token} onInput={(event) => setToken(event.currentTarget.value)} />
        </label>
        <button class="primary" type="submit">Start chatting</button>
      </form>
      {error && <p role="alert" class="error">{error}</p>}
    </main>
  );
}

function Chat({ session }: { session: Session }) {
  const [lines, setLines] = useState<Line[]>([]);
  const [working, setWorking] = useState(false);
  const [connected, setConnected] = useState(false);
  const [draft, setDraft] = useState("");
  // The reply the agent is writing (streamed); its message replaces it.
  const [writing, setWriting] = useState("");
  const [attached, setAttached] = useState<Upload[]>([]);
  const [uploading, setUploading] = useState(false);
  const [uploadError, setUploadError] = useState("");
  const [refused, setRefused] = useState("");
  const socket = useRef<Live | null>(null);
  // Typed but not yet confirmed by the server: sent again after a reconnect.
  const unconfirmed = useRef(new Map<string, Outgoing>());
  const list = useRef<HTMLOListElement>(null);

  useEffect(() => {
    const live = connect(socketUrl("/api/chat/socket"), {
      open: () => {
        live.send(JSON.stringify({ type: "hello" }));
        for (const [id, message] of unconfirmed.current) live.send(JSON.stringify({ type: "send", id, ...message }));
      },
      message: (data) => {
        const message = data as Incoming;
        if (message.type === "history") {
          setLines((current) => merge(current, message.messages));
          setWorking(message.working);
          setWriting("");
        } else if (message.type === "message") {
          unconfirmed.current.delete(message.id.replace(/^in:web:/, ""));
          setLines((current) => merge(current, [message]));
          if (message.role === "assistant") {
            setWorking(false);
            setWriting("");
          }
        } else if (message.type === "working") {
          setWorking(message.on);
          if (!message.on) setWriting("");
        } else if (message.type === "draft") {
          setWriting(message.text);
        } else if (message.type === "error") {
          // A message the server refused is not sent again, and the page says why.
          if (message.id) {
            unconfirmed.current.delete(message.id);
            setLines((current) => current.filter((line) => line.id !== `in:web:${message.id}`));
          }
          setRefused(message.message);
        }
      },
      state: setConnected,
    });
    socket.current = live;
    return () => live.close();
  }, []);

  useEffect(() => {
    list.current?.lastElementChild?.scrollIntoView({ block: "end" });
  }, [lines]);

  const send = (event: Event) => {
    event.preventDefault();
    const text = draft.trim();
    const files = attached.map((file) => file.upload);
    if ((!text && files.length === 0) || uploading) return;
    const id = crypto.randomUUID();
    unconfirmed.current.set(id, { text, files });
    // Shown at once; the server's copy (same id) replaces it.
    const shown = chatText(text, files.length);
    setLines((current) => merge(current, [{ id: `in:web:${id}`, role: "user", author: "you", text: shown, at: Date.now(), pending: true }]));
    setRefused("");
    socket.current?.send(JSON.stringify({ type: "send", id, text, files }));
    setDraft("");
    setAttached([]);
    setUploadError("");
  };

  const upload = async (input: HTMLInputElement) => {
    const file = input.files?.[0];
    input.value = "";
    if (!file) return;
    setUploading(true);
    setUploadError("");
    try {
      const response = await fetch("/api/chat/files", {
        method: "POST",
        body: file,
        credentials: "same-origin",
        headers: { "x-file-name": encodeURIComponent(file.name) },
      });
      const answer = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(answer.error ?? `upload failed (${response.status})`);
      setAttached((current) => [...current, answer as Upload]);
    } catch (failure) {
      setUploadError(`${file.name}: ${failure instanceof Error ? failure.message : String(failure)}`);
    } finally {
      setUploading(false);
    }
  };

  return (
    <div class="chat">
      <header>
        <h1>edgebot</h1>
        <span class="muted">as {session.role}</span>
        <span class="muted" id="connection">{connected ? "connected" : "reconnecting…"}</span>
      </header>
      <ol ref={list} id="messages" aria-live="polite" aria-label="Conversation">
        {lines.map((line) => (
          <li key={line.id} data-id={line.id} data-approval={line.approval?.id}
            class={`${line.role}${line.pending ? " pending" : ""}`}>
            <span class="visually-hidden">{line.role === "user" ? "You" : line.author}: </span>
            <Text text={line.text} />
            {line.approval?.open && <ApprovalButtons key={line.approval.id} id={line.approval.id} />}
          </li>
        ))}
      </ol>
      {/* Visual only: screen readers hear the finished message in the list above. */}
      {writing && (
        <p class="assistant writing" id="writing" aria-hidden="true">
          <span class="text">{writing}</span>
        </p>
      )}
      <p class="working muted" id="working" aria-live="polite">{working ? "edgebot is thinking…" : ""}</p>
      {(attached.length > 0 || uploading || uploadError) && (
        <div class="attached">
          <ul id="attached" aria-label="Files for the next message">
            {attached.map((file) => (
              <li key={file.upload}>
                <span>{file.name} ({size(file.size)})</span>
                <button type="button" aria-label={`Remove ${file.name}`}
                  onClick={() => setAttached((current) => current.filter((other) => other.upload !== file.upload))}>×</button>
              </li>
            ))}
            {uploading && <li class="muted">Uploading…</li>}
          </ul>
          {uploadError && <p role="alert" class="error" id="upload-error">{uploadError}</p>}
        </div>
      )}
      {refused && <p role="alert" class="error" id="send-error">{refused}</p>}
      <form onSubmit={send} aria-label="Send a message">
        <span class="file">
          <input id="file" type="file" class="visually-hidden" disabled={uploading || attached.length >= FILES_PER_MESSAGE}
            onChange={(event) => upload(event.currentTarget)} />
          <label for="file" class="button" title="Attach a file">
            <span aria-hidden="true">+</span><span class="visually-hidden">Attach a file</span>
          </label>
        </span>
        <label class="visually-hidden" for="message">Message</label>
        <textarea id="message" rows={2} value={draft} onInput={(event) => setDraft(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === "Enter" && !event.shiftKey) send(event);
          }} />
        <button class="primary" type="submit" id="send" disabled={uploading}>Send</button>
      </form>
    </div>
  );
}

function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  useEffect(() => {
    (async () => {
      try {
        setSession(await api<Session>("/api/chat/session"));
      } catch {
        // No chat yet: a signed-in operator starts one at once.
        const operator = await api("/api/session").then(() => true, () => false);
        setSession(operator ? await post<Session>("/api/chat/session").catch(() => null) : null);
      }
    })();
  }, []);
  if (session === undefined) return <p class="page">Loading…</p>;
  if (session === null) return <Join onJoined={setSession} />;
  return <Chat session={session} />;
}

render(<App />, document.getElementById("app")!);
