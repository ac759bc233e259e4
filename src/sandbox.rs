//! `run_code`: JavaScript the model writes, run in a fresh isolate of the
//! Worker Loader binding, with no network, no env and no bindings but a narrow
//! in-memory workspace. `rules` (pure) the limits, the request, the report and
//! the text the model reads; `loop_guard` (pure) the rewrite that bounds loops
//! where no CPU limit is enforced; `network` (pure) the tokens of runs that
//! may fetch; `arguments` (pure) the tool's type; `egress` the Worker's side of
//! a run's fetches (through the fetch guard);
//! `loader` the binding, reached through JS interop; `tools` the call; `api`
//! the operator's route that runs a module on a conversation's workspace.

pub mod arguments;
pub mod loop_guard;
pub mod network;
pub mod rules;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod egress;
#[cfg(target_arch = "wasm32")]
pub mod loader;
#[cfg(target_arch = "wasm32")]
pub mod tools;
