// The spend page: today's spending per person, conversation and deployment, and the limits.

import { useState } from "preact/hooks";
import { api, put, SpendLimit, SpendReport, SpendRow } from "../api";
import { useLoad } from "./common";

export const limitText = (limit: SpendLimit) =>
  [limit.tokens === null ? "" : `${limit.tokens} tokens`, limit.usd === null ? "" : `$${limit.usd.toFixed(2)}`]
    .filter(Boolean)
    .join(" / ") || "none";

/// Raises (or lowers) one subject's daily limit.
export function LimitForm({ scope, row, onSaved }: { scope: string; row: SpendRow; onSaved: () => void }) {
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

export function SpendTable({ id, scope, rows, onSaved }: { id: string; scope: string; rows: SpendRow[]; onSaved: () => void }) {
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
export function SpendPage() {
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
      <h2>Agents</h2>
      <SpendTable id="spend-agents" scope="agent" rows={report.agents ?? []} onSaved={reload} />
    </main>
  );
}
