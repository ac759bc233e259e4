// One conversation, live: its processes, inbound events, outbox, workers, workspace, envelopes and usage.

import { useEffect, useMemo, useState } from "preact/hooks";
import {
  api,
  Envelope,
  InboundRecord,
  OutboxEntry,
  RunningProcess,
  socketUrl,
  Usage,
  when,
  WorkerSummary,
  WorkspaceListing,
} from "../api";
import { connect } from "../live";
import { useLoad, Badge } from "./common";
import { OverrideEditor } from "./identity";

export interface ConversationView {
  processes: RunningProcess[];
  events: InboundRecord[];
  outbox: OutboxEntry[];
  workers: WorkerSummary[];
  workspace: WorkspaceListing;
  envelopes: Envelope[];
  usage: Record<string, Usage>;
}

export async function loadConversation(key: string): Promise<ConversationView> {
  const base = `/api/channels/${encodeURIComponent(key)}`;
  const [processes, events, outbox, workers, workspace, usage, envelopeLines] = await Promise.all([
    api<RunningProcess[]>(`${base}/processes`),
    api<InboundRecord[]>(`${base}/events`),
    api<OutboxEntry[]>(`${base}/outbox`),
    api<WorkerSummary[]>(`${base}/workers`),
    api<WorkspaceListing>(`/api/conversations/${encodeURIComponent(key)}/workspace`),
    api<Record<string, Usage>>(`${base}/usage`),
    fetch(`${base}/envelopes?last=50`, { credentials: "same-origin" }).then((response) => response.text()),
  ]);
  const envelopes = envelopeLines
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Envelope);
  return { processes, events, outbox, workers, workspace, envelopes, usage };
}

export type Line = { at: number; inbound?: InboundRecord; reply?: OutboxEntry };

export function ConversationPage({ conversationKey }: { conversationKey: string }) {
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
      <OverrideEditor conversationKey={conversationKey} />
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
          <WorkspaceSection conversationKey={conversationKey} listing={view.workspace} reload={reload} />
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

/** A size for people: 512 B, 3.4 KB, 1.2 MB. */
function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** The conversation's workspace: its workers' files and the attachments (read-only). */
function WorkspaceSection(props: { conversationKey: string; listing: WorkspaceListing; reload: () => void }) {
  const [error, setError] = useState<string | null>(null);
  const own = props.listing.entries.filter((entry) => !entry.read_only);
  const used = own.reduce((sum, entry) => sum + entry.bytes, 0);
  const forget = async () => {
    if (!confirm(`Forget the workspace of ${props.conversationKey}? Its ${own.length} file(s) are deleted.`)) return;
    try {
      await api(`/api/conversations/${encodeURIComponent(props.conversationKey)}/workspace`, { method: "DELETE" });
      setError(null);
      props.reload();
    } catch (failure) {
      setError(String(failure));
    }
  };
  return (
    <>
      <h2>Workspace</h2>
      <p class="muted">
        {own.length} of {props.listing.quotas.files} files, {size(used)} of {size(props.listing.quotas.bytes)}; attachments are
        read-only. Kept 30 days after a file was last written.
      </p>
      {error && <p role="alert" class="error">{error}</p>}
      {props.listing.entries.length === 0 ? (
        <p class="muted">No files.</p>
      ) : (
        <div class="scroll">
          <table id="workspace">
            <thead><tr><th>Path</th><th>Size</th><th>Modified</th><th>Access</th></tr></thead>
            <tbody>
              {props.listing.entries.map((entry) => (
                <tr key={entry.path} data-path={entry.path}>
                  <td class="text">{entry.path}</td>
                  <td>{size(entry.bytes)}</td>
                  <td>{when(entry.modified)}</td>
                  <td>{entry.read_only ? "read-only" : "workers"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {own.length > 0 && <button type="button" id="forget-workspace" onClick={forget}>Forget the workspace</button>}
    </>
  );
}

/** Who sees a memory, in words. */
