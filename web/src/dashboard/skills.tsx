// The skills page: an agent's skills (name, description, version, enabled), installing one
// (a zip, or a SKILL.md written here), enabling and disabling, and each skill's versions
// with Restore. The prompt lists the enabled ones; a turn opens one when a task needs it.

import { useState } from "preact/hooks";
import { answer, api, post, when } from "../api";
import { useLoad } from "./common";
import { VersionsTable } from "./versions";

export interface Skill {
  name: string;
  version: number;
  description: string;
  enabled?: boolean;
  bytes: number;
  author: string;
  created_at: number;
  restored_from: number | null;
  paths: string[];
  saved?: boolean;
}

interface Skills {
  agent: string;
  skills: Skill[];
  limits: { files: number; file_bytes: number; total_bytes: number; skills_per_agent: number; versions_kept: number };
}

const TEMPLATE = "---\nname: my-skill\ndescription: One line saying when to use it.\n---\n\nThe instructions.\n";

/// POSTs a zip as it is (the api helper sends JSON only).
async function uploadZip<T>(path: string, file: File): Promise<T> {
  const response = await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { accept: "application/json", "content-type": "application/zip" },
    body: file,
  });
  return answer<T>(response);
}

export function SkillsPage() {
  const [agent, setAgent] = useState("default");
  const base = `/api/agents/${encodeURIComponent(agent)}/skills`;
  const [loaded, error, reload] = useLoad(() => api<Skills>(base), [base]);
  const [notice, setNotice] = useState("");
  const [failure, setFailure] = useState("");
  const [busy, setBusy] = useState(false);
  const [text, setText] = useState(TEMPLATE);
  const act = async (work: () => Promise<Skill>, done: (skill: Skill) => string) => {
    setBusy(true);
    setFailure("");
    setNotice("");
    try {
      setNotice(done(await work()));
      reload();
    } catch (error) {
      setFailure((error as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const installed = (skill: Skill) =>
    skill.saved === false ? `${skill.name} is unchanged.` : `Installed ${skill.name} as version ${skill.version}.`;
  const installZip = (event: Event) => {
    const input = event.currentTarget as HTMLInputElement;
    const file = input.files?.[0];
    if (file) act(() => uploadZip<Skill>(base, file), installed);
    input.value = "";
  };
  const installText = (event: Event) => {
    event.preventDefault();
    act(() => post<Skill>(base, { files: { "SKILL.md": text } }), installed);
  };
  return (
    <main class="page">
      <h1>Skills</h1>
      <p class="muted">
        The prompt lists each enabled skill by name and description; the model opens one with <code>open_skill</code>{" "}
        when a task needs it, and a worker's <code>run_code</code> finds its files under <code>skills/NAME/</code>.
      </p>
      <label>
        Agent <input id="skills-agent" value={agent} onChange={(event) => setAgent(event.currentTarget.value)} />
      </label>
      {error && <p role="alert" class="error">{error}</p>}
      {!loaded && !error && <p>Loading…</p>}
      {loaded && (
        <div class="scroll">
          <table id="skills">
            <thead><tr><th>Skill</th><th>Description</th><th>Version</th><th>Files</th><th>Enabled</th></tr></thead>
            <tbody>
              {loaded.skills.length === 0 && <tr><td colSpan={5} class="muted">No skills yet.</td></tr>}
              {loaded.skills.map((skill) => (
                <SkillRow key={skill.name} base={base} skill={skill} busy={busy} act={act} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h2>Install</h2>
      {loaded && (
        <p class="muted">
          At most {loaded.limits.files} files, {Math.round(loaded.limits.file_bytes / 1024)} KiB each,{" "}
          {Math.round(loaded.limits.total_bytes / 1024)} KiB in all; no secrets; no hidden files.
        </p>
      )}
      <label>
        A zip of the skill's folder <input id="skill-zip" type="file" accept=".zip,application/zip" disabled={busy}
          onChange={installZip} />
      </label>
      <form class="stack" onSubmit={installText} aria-label="Install a SKILL.md">
        <label for="skill-text">Or a SKILL.md alone</label>
        <textarea id="skill-text" rows={8} value={text} onInput={(event) => setText(event.currentTarget.value)} />
        <button class="primary" type="submit" disabled={busy}>Install</button>
      </form>
      <p id="skills-notice" role="status" class="muted">{notice}</p>
      {failure && <p role="alert" class="error">{failure}</p>}
    </main>
  );
}

function SkillRow({ base, skill, busy, act }: {
  base: string;
  skill: Skill;
  busy: boolean;
  act: (work: () => Promise<Skill>, done: (skill: Skill) => string) => void;
}) {
  const [open, setOpen] = useState(false);
  const path = `${base}/${skill.name}`;
  const toggle = () =>
    act(() => post<Skill>(`${path}/${skill.enabled ? "disable" : "enable"}`),
      (result) => `${result.name} is ${result.enabled ? "enabled" : "disabled"}.`);
  return (
    <>
      <tr data-skill={skill.name}>
        <td><button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>{skill.name}</button></td>
        <td>{skill.description}</td>
        <td>{skill.version}, by {skill.author}, {when(skill.created_at)}</td>
        <td>{skill.paths.join(", ")}</td>
        <td>
          <button type="button" disabled={busy} aria-label={`${skill.enabled ? "Disable" : "Enable"} ${skill.name}`}
            onClick={toggle}>{skill.enabled ? "Disable" : "Enable"}</button>
        </td>
      </tr>
      {open && (
        <tr><td colSpan={5}><Versions path={path} skill={skill} busy={busy} act={act} /></td></tr>
      )}
    </>
  );
}

function Versions({ path, skill, busy, act }: {
  path: string;
  skill: Skill;
  busy: boolean;
  act: (work: () => Promise<Skill>, done: (skill: Skill) => string) => void;
}) {
  const [versions, error] = useLoad(
    () => api<{ versions: Skill[] }>(`${path}/versions`).then((listed) => listed.versions),
    [path, skill.version],
  );
  const restore = (version: number) =>
    act(() => post<Skill>(`${path}/restore/${version}`),
      (result) => result.saved ? `Restored version ${version} as version ${result.version}.` : "Already that version.");
  if (error) return <p role="alert" class="error">{error}</p>;
  if (!versions) return <p>Loading…</p>;
  return (
    <VersionsTable id={`versions-${skill.name}`} name={skill.name} versions={versions} current={skill.version}
      heading="Files" describe={(version) => version.paths.join(", ")} busy={busy} restore={restore} />
  );
}
