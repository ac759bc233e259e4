// Tasks and schedules: the task board and the scheduled jobs, read-only.

import { api, ScheduledJob, Task } from "../api";
import { useLoad, Badge } from "./common";

export function TasksPage() {
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
