// The admin API as the pages use it: same-origin JSON calls carrying the
// session cookie. A 401 is its own error so pages can show the sign-in form.

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  return answer<T>(await fetch(path, { credentials: "same-origin", ...init, headers }));
}

/** A response's JSON, or an ApiError with the server's `error` (or the status). */
export async function answer<T>(response: Response): Promise<T> {
  const text = await response.text();
  if (!response.ok) {
    let message = `${response.status}`;
    try {
      message = (JSON.parse(text) as { error?: string }).error ?? message;
    } catch {
      // not JSON: keep the status
    }
    throw new ApiError(response.status, message);
  }
  return (text ? JSON.parse(text) : null) as T;
}

export const post = <T>(path: string, body: unknown = {}) =>
  api<T>(path, { method: "POST", body: JSON.stringify(body) });

export const remove = <T>(path: string) => api<T>(path, { method: "DELETE" });

export const put = <T>(path: string, body: unknown) => api<T>(path, { method: "PUT", body: JSON.stringify(body) });

/// The socket URL for a path of this site (ws: or wss: as the page).
export function socketUrl(path: string): string {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${path}`;
}

export function when(ms: number | null | undefined): string {
  return ms ? new Date(ms).toLocaleString() : "—";
}

export interface Conversation {
  conversation_key: string;
  platform: string;
  title: string | null;
  last_activity_at: number;
  message_count: number;
  engaged_count: number;
  observed_count: number;
}

export interface InboundRecord {
  seq: number;
  delivery_id: string;
  decision: string;
  reason: string;
  status: string;
  received_at: number;
  membership?: string;
  event: { text: string; author: { name: string; is_bot: boolean }; message_id: string };
}

export interface OutboxEntry {
  id: string;
  turn: number;
  piece: number;
  text: string;
  status: string;
  attempts: number;
  last_error: string | null;
  created_at: number;
}

export interface Usage {
  input_tokens?: number;
  output_tokens?: number;
}

export interface RunningProcess {
  id: string;
  kind: string;
  task: string;
  status: string | null;
  started_at: number;
  last_heard_at: number;
  waiting: boolean;
}

export interface WorkerSummary {
  id: string;
  state: string;
  cancelled: boolean;
  task: string;
  segments: number;
  status: string | null;
  outcome: string | null;
  usage: Usage;
}

/** One file of a conversation's workspace (`GET /api/conversations/{key}/workspace`). */
export interface WorkspaceEntry {
  path: string;
  bytes: number;
  read_only: boolean;
  modified: number;
}

export interface WorkspaceListing {
  entries: WorkspaceEntry[];
  quotas: { files: number; bytes: number; file_bytes: number };
}

export interface Envelope {
  id: string;
  ts: number;
  from: string;
  to: string;
  type: string;
  body: string;
}

export interface Task {
  id: number;
  conversation_key: string;
  title: string;
  status: string;
  priority: string;
  attempts: number;
  worker_id: string | null;
}

export interface ScheduledJob {
  id: string;
  conversation: string;
  prompt: string;
  status: string;
  next_run: string | null;
  created_by: { id: string | null; name: string | null };
}

/// A daily limit: null means no limit of that kind.
export interface SpendLimit {
  tokens: number | null;
  usd: number | null;
}

/// One person's, conversation's or the deployment's spend on a day.
export interface SpendRow {
  subject: string;
  name: string;
  tokens: number;
  usd: number;
  calls: number;
  limit: SpendLimit;
  overridden: boolean;
}

export interface SpendReport {
  day: string;
  people: SpendRow[];
  conversations: SpendRow[];
  /// Per agent (its limit: its settings' daily_micro_usd, or an operator's override).
  agents: SpendRow[];
  deployment: SpendRow | null;
  configured: Record<"person" | "conversation" | "deployment", SpendLimit>;
}

export interface Memory {
  id: string;
  memory_type: string;
  content: string;
  importance: number;
  created_at: number;
  access_count: number;
  /** Who sees it: a conversation's key (private to it), "shared" (every conversation)
   * or "operators" (learned who knows where: operators only). */
  scope: string;
}

export const MEMORY_TYPES = ["fact", "preference", "decision", "identity", "event", "observation", "goal", "todo"];
export const SEARCH_MODES = ["hybrid", "recent", "important", "typed"];

/// One thing the bot knows about a person.
export interface PersonNote {
  text: string;
  at_ms: number;
  /** "bot" (a branch's person_note) or "operator". */
  by: string;
}

/// A platform id a person is known by ("telegram:42", "slack:U1").
export interface PlatformId {
  platform_key: string;
  display_name: string;
  last_seen_at: number | null;
}

export interface Person {
  id: string;
  display_name: string;
  time_zone: string | null;
  language: string | null;
  is_bot: boolean;
  notes: PersonNote[];
  /// The operator's role and bio for this person (never set by the person or the bot).
  role: string | null;
  bio: string | null;
  platform_ids: PlatformId[];
  created_at: number;
  updated_at: number;
}

export const MAX_NOTES_PER_PERSON = 20;
export const MAX_NOTE_CHARS = 200;
export const MAX_ROLE_CHARS = 80;
export const MAX_BIO_CHARS = 500;

/// How the Worker signs in to an MCP server: only the names of the Worker secrets
/// holding a token or a client secret, never their values.
export interface McpAuth {
  kind: "none" | "bearer" | "oauth";
  token_secret?: string;
  token_url?: string;
  client_id?: string;
  client_secret_secret?: string;
  scope?: string;
}

export interface McpTool {
  name: string;
  /** The name the model sees (mcp_<server>_<tool>). */
  exposed_name: string;
  description: string;
  read_only: boolean;
  exposed: boolean;
  needs_approval: boolean;
}

export interface McpServer {
  name: string;
  url: string;
  auth: McpAuth;
  /** null: every listed tool. */
  expose: string[] | null;
  /** The operator's overrides, per tool. */
  approval: Record<string, boolean>;
  /** Branches may use its tools that need no approval. */
  branches: boolean;
  tools: McpTool[];
  tools_at: number | null;
  down_until: number | null;
  last_error: string | null;
  calls: number;
}

/// What PUT /api/mcp/servers/{name} takes.
export interface McpServerConfig {
  url: string;
  auth: McpAuth;
  expose: string[] | null;
  approval: Record<string, boolean>;
  branches: boolean;
}

/// Server names: lowercase letters, digits and underscores, up to 20.
export const MCP_SERVER_NAME = "[a-z0-9_]{1,20}";

/// A tool call or a task waiting for (or given) a person's approval.
export interface Approval {
  id: string;
  conversation_key: string;
  kind: "tool" | "task";
  what: string;
  /** JSON text. */
  arguments: string;
  asker_name: string;
  asker_id: string;
  status: "waiting" | "approved" | "denied" | "timed_out";
  expires_at: number | null;
  decided_by: string | null;
  decided_at: number | null;
  created_at: number;
}
