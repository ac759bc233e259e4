//! Tools that cost beyond the model's tokens: `run_code` starts a Dynamic
//! Worker per run, `browse` holds a browser for its page. Each run is priced
//! into the day's spend (so the budgets hold it like model calls) and capped
//! per worker and per conversation per UTC day. Pure: the Workers-facing
//! side counts the runs in D1 (`tool_runs`) and records the spend.

use super::rules::Spend;

crate::named! {
    /// A tool whose runs are counted, capped and priced.
    pub enum MeteredTool { RunCode = "run_code", Browse = "browse" }
}

/// Cloudflare's list prices (Workers Paid, beyond the included amounts), in
/// millionths of a US dollar.
/// A Dynamic Worker created with `load()`: one per run ($0.002).
const DYNAMIC_WORKER_MICRO_USD: u64 = 2_000;
/// A request ($0.30 per million) rounds up to one millionth.
const REQUEST_MICRO_USD: u64 = 1;
/// CPU time: $0.02 per million ms. The isolate's CPU is not reported back,
/// so its wall time (an upper bound) is priced.
const CPU_MICRO_USD_PER_SECOND: u64 = 20;
/// Browser time: $0.09 per hour is 25 millionths a second.
const BROWSER_MICRO_USD_PER_SECOND: u64 = 25;

/// How many runs of a tool one worker, and one conversation in a UTC day, may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub per_worker: u32,
    pub per_conversation_day: u32,
}

impl MeteredTool {
    /// What one run that took `wall_ms` costs.
    pub fn price(self, wall_ms: u64) -> Spend {
        let seconds = wall_ms.div_ceil(1_000).max(1);
        let micro_usd = match self {
            MeteredTool::RunCode => DYNAMIC_WORKER_MICRO_USD + REQUEST_MICRO_USD + CPU_MICRO_USD_PER_SECOND * seconds,
            MeteredTool::Browse => BROWSER_MICRO_USD_PER_SECOND * seconds,
        };
        Spend { micro_usd, ..Spend::default() }
    }

    /// The defaults: a worker runs code or browses as often as a task needs,
    /// a conversation a day's worth of such tasks.
    pub const fn default_caps(self) -> Caps {
        match self {
            MeteredTool::RunCode => Caps { per_worker: 25, per_conversation_day: 100 },
            MeteredTool::Browse => Caps { per_worker: 15, per_conversation_day: 60 },
        }
    }
}

/// Why another run may not start (the tool error the model reads), if it may not.
pub fn refusal(tool: MeteredTool, caps: Caps, by_worker: u32, in_conversation_today: u32) -> Option<String> {
    if by_worker >= caps.per_worker {
        return Some(format!(
            "error: this worker has used its {} runs of `{tool}`; finish with what you have",
            caps.per_worker
        ));
    }
    (in_conversation_today >= caps.per_conversation_day).then(|| {
        format!(
            "error: this conversation has used today's {} runs of `{tool}`; say so in your outcome",
            caps.per_conversation_day
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_costs_its_dynamic_worker_and_its_time_a_browse_its_browser_seconds() {
        assert_eq!(MeteredTool::RunCode.price(15).micro_usd, 2_021, "a Dynamic Worker, a request, a second");
        assert_eq!(MeteredTool::RunCode.price(30_000).micro_usd, 2_001 + 20 * 30);
        assert_eq!(MeteredTool::Browse.price(1_500).micro_usd, 50, "two started seconds");
        assert_eq!(MeteredTool::Browse.price(3_600_000).micro_usd, 90_000, "an hour is $0.09");
        assert_eq!(MeteredTool::Browse.price(0).tokens(), 0, "no tokens");
        crate::named::assert_spellings::<MeteredTool>(&["", "RunCode", "browser"]);
    }

    #[test]
    fn runs_stop_at_the_workers_cap_then_at_the_conversations() {
        let caps = Caps { per_worker: 2, per_conversation_day: 3 };
        assert_eq!(refusal(MeteredTool::RunCode, caps, 1, 2), None);
        let worker = refusal(MeteredTool::RunCode, caps, 2, 0).unwrap();
        assert!(worker.starts_with("error:") && worker.contains("this worker") && worker.contains("run_code"));
        let day = refusal(MeteredTool::Browse, caps, 0, 3).unwrap();
        assert!(day.contains("this conversation") && day.contains("browse"), "{day}");
    }
}
