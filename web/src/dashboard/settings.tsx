// The settings page: which secrets and bindings are set, the configuration and the status.

import { api } from "../api";
import { useLoad } from "./common";

export type Settings = Record<string, unknown> & { secrets_set: Record<string, boolean> };

export interface Status {
  version: string;
  bindings: Record<string, boolean>;
  migrations: string[] | null;
  platforms: Record<string, { ready: boolean }>;
  [field: string]: unknown;
}

export function Flags({ id, flags, yes, no }: { id: string; flags: Record<string, boolean>; yes: string; no: string }) {
  return (
    <dl id={id}>
      {Object.entries(flags).map(([name, on]) => (
        <div key={name}><dt>{name}</dt><dd class={on ? "sent" : "muted"}>{on ? yes : no}</dd></div>
      ))}
    </dl>
  );
}

/** One Discord Gateway shard's state, as `/api/status` shows it under `discord_gateway.shards`. */
interface Shard {
  shard: [number, number];
  connected?: boolean;
  session_id?: string | null;
  seq?: number | null;
  failure?: string | null;
  retiring?: boolean;
}

/** Every Gateway shard: which is connected, its seq, and why one stopped. */
function Shards({ gateway }: { gateway: unknown }) {
  const shards = (gateway as { shards?: Shard[] } | null)?.shards;
  if (!shards?.length) return null;
  return (
    <>
      <h2>Discord Gateway shards</h2>
      <table id="gateway-shards">
        <thead><tr><th>shard</th><th>state</th><th>seq</th><th>failure</th></tr></thead>
        <tbody>
          {shards.map((shard) => (
            <tr key={shard.shard.join("/")}>
              <td>{shard.shard[0]} of {shard.shard[1]}{shard.retiring ? " (retiring)" : ""}</td>
              <td class={shard.connected ? "sent" : "muted"}>{shard.connected ? "connected" : "not connected"}</td>
              <td>{shard.seq ?? ""}</td>
              <td>{shard.failure ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

export function SettingsPage() {
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
      <Shards gateway={status.discord_gateway} />
      <h2>Status</h2>
      <p class="muted">Migrations applied: {migrations?.join(", ") ?? "unknown"}</p>
      <pre class="scroll" id="status">{JSON.stringify(status, null, 2)}</pre>
    </main>
  );
}
