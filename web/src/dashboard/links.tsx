// The links page: which agent may message which (`/api/links`), read-only here;
// an operator adds and removes links through the admin API (docs/links.md).
// Link conversations (`link:{self}:{peer}`) show under Conversations like any other.

import { api } from "../api";
import { useLoad } from "./common";

export interface Link {
  from: string;
  to: string;
  kind: "hierarchical" | "peer";
  direction: "one_way" | "two_way";
}

export function LinksPage() {
  const [loaded, error] = useLoad(() => api<{ links: Link[] }>("/api/links"), []);
  if (error) return <main class="page"><p role="alert" class="error">{error}</p></main>;
  if (!loaded) return <main class="page"><p>Loading…</p></main>;
  return (
    <main class="page">
      <h1>Links between agents</h1>
      {loaded.links.length === 0 ? (
        <p class="muted">No links: agents do not message each other.</p>
      ) : (
        <table id="links">
          <thead><tr><th>From</th><th>To</th><th>Kind</th><th>Direction</th></tr></thead>
          <tbody>
            {loaded.links.map((link) => (
              <tr key={`${link.from}|${link.to}`}>
                <td>{link.from}</td>
                <td>{link.to}</td>
                <td>{link.kind}</td>
                <td>{link.direction === "one_way" ? "one way" : "both ways"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
