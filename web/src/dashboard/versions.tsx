// A document's saved versions (who, when, what it began with) with Restore:
// one table for the identity documents and the skills.

import { when } from "../api";

export interface Saved {
  version: number;
  author: string;
  created_at: number | null;
  restored_from: number | null;
}

export function VersionsTable<V extends Saved>({ id, name, versions, current, heading, describe, busy, restore }: {
  id: string;
  /// What is restored, as the buttons' labels say it.
  name: string;
  versions: V[];
  current: number;
  /// The column that tells the versions apart, and its cell.
  heading: string;
  describe: (version: V) => string;
  busy: boolean;
  restore: (version: number) => void;
}) {
  return (
    <table id={id}>
      <thead><tr><th>Version</th><th>Author</th><th>When</th><th>{heading}</th><th>Restore</th></tr></thead>
      <tbody>
        {versions.map((version) => (
          <tr key={version.version} data-version={version.version}>
            <td>{version.version}{version.restored_from !== null ? ` (from ${version.restored_from})` : ""}</td>
            <td>{version.author}</td>
            <td>{when(version.created_at)}</td>
            <td class="text">{describe(version)}</td>
            <td>
              {version.version === current ? <span class="muted">current</span> : (
                <button type="button" disabled={busy} aria-label={`Restore ${name} version ${version.version}`}
                  onClick={() => restore(version.version)}>Restore</button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
