// One conversation, live: its processes, inbound events, outbox, workers, envelopes and usage.

import { useEffect, useMemo, useState } from "preact/hooks";
import { api, Envelope, InboundRecord, OutboxEntry, RunningProcess, socketUrl, Usage, when, WorkerSummary } from "../api";
import { connect } from "../live";
import { useLoad, Badge } from "./common";
import { OverrideEditor } from "./identity";

export interface ConversationView {
  processes: RunningProcess[];
  events: InboundRecord[];
  outbox: OutboxEntry[];
  workers: WorkerSummary[];
  envelopes: Envelope[];
  usage: Record<string, Usage>;
}

export async function loadConversation(key: string): Promise<ConversationView> {
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
