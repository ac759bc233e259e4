//! `make simulate`: a day of 1M, 10M and 100M messages, with a peak minute of
//! 3x the mean, against each Cloudflare component's documented limit, before
//! (today's layout: one D1, one queue, one Gateway shard, one Vectorize index)
//! and after (N D1 databases, K Gateway shards, Q queues, V indexes), and the
//! price per 1,000 observed, engaged and branching messages.
//!
//! Every per-message cost is MEASURED: `benches/cost.rs` (`make bench`)
//! counts what each kind of message makes the Worker do and writes
//! `target/bench/cost.json`; this reads it (the spaced cases: quiet
//! conversations, one message each, the index's 5 s flush included). The
//! arithmetic is in `benches/common/scale.rs` (tested by `cargo test --test
//! pricing`); the documented limits are there with their pages, the rates in
//! `benches/pricing.rs`. What is left here is the workload's shape, each an
//! argument:
//!
//! ```text
//! make simulate ARGS="--d1 8 --shards 4 --queues 2 --indexes 1"
//!   --costs FILE       measured costs (default target/bench/cost.json)
//!   --before FILE      costs measured on the build to compare with (default: --costs)
//!   --d1 N --shards K --queues Q --indexes V
//!                      the sharded layout (default: the smallest that keeps
//!                      each sharded component at or under 50% at 100M a day)
//!   --mix O,E,B        shares of observed, engaged, branching (default 0.80,0.17,0.03)
//!   --peak X           the peak minute over the mean (default 3)
//!   --hottest M        the busiest conversation's messages a day (default 100000)
//!   --discord S        the share of messages over the Discord Gateway (default 0.3)
//!   --guilds G         Discord guilds (default: conversations x S / 4 channels a
//!                      guild, conversations = messages / 100 a day)
//!   --isolates I       isolates serving turns per 1M messages a day, each
//!                      keeping its own agent snapshots (default 10: 1,000 at 100M)
//!   --agents A         the deployment's agents (default 1)
//!   --fresh S          SHARED_READS_FRESH_MS in seconds (default 30, production's)
//! ```

#[allow(dead_code)]
#[path = "pricing.rs"]
mod pricing;
// Its tests run under `cargo test --test pricing`.
#[allow(dead_code)]
#[path = "common/scale.rs"]
mod scale;

use std::path::{Path, PathBuf};

use scale::{Case, Layout, Snapshots, Use, Workload, TODAY};
use serde_json::Value;

const PROJECT_ROOT: &str = env!("CARGO_MANIFEST_DIR");
const COST_FILE: &str = "target/bench/cost.json";
const DAYS: [f64; 3] = [1e6, 10e6, 100e6];
/// Workload shape defaults (assumptions, printed; see the arguments above).
const MIX: [f64; 3] = [0.80, 0.17, 0.03];
const PEAK: f64 = 3.0;
const HOTTEST_CONVERSATION: f64 = 100_000.0;
const DISCORD_SHARE: f64 = 0.3;
const MESSAGES_PER_CONVERSATION: f64 = 100.0;
const CHANNELS_PER_GUILD: f64 = 4.0;
/// Isolates serving turns per 1M messages a day (each keeps its own agent
/// snapshots): a guess, printed, an argument. Cloudflare does not publish how
/// many isolates a load takes; the Durable Objects of one class share an
/// isolate where they share a machine.
const ISOLATES_PER_MILLION: f64 = 10.0;
const AGENTS: f64 = 1.0;
/// Production's `SHARED_READS_FRESH_MS` (wrangler.toml), in seconds.
const SNAPSHOT_FRESH_S: f64 = 30.0;
/// cortex.rs maintain prunes memories unread for 30 days (a vector's lifetime).
const VECTOR_LIFETIME_DAYS: f64 = 30.0;
/// The cases `make simulate` needs from the cost file.
const KINDS: [(&str, &str); 3] =
    [("observed_spaced", "observed"), ("engaged_spaced", "engaged"), ("branch_spaced", "branching")];

/// What `benches/cost.rs` measured, one file.
struct Measured {
    path: PathBuf,
    when: String,
    machine: String,
    build: String,
    /// Observed, engaged, branching, per message.
    kinds: [Case; 3],
    /// The statements of one agent snapshot read (0: a build without them).
    snapshot_statements: f64,
}

impl Measured {
    fn load(path: &Path) -> Measured {
        let Ok(text) = std::fs::read_to_string(path) else {
            eprintln!(
                "make simulate: no measured costs at {}.\nRun the measurement first: `make artifacts && cargo bench \
                 --bench cost` (it writes {COST_FILE}; a few minutes), or pass --costs FILE.",
                path.display()
            );
            std::process::exit(2);
        };
        let file: Value = serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let kinds = KINDS.map(|(key, _)| {
            let Some(per_message) = file["cases"][key]["per_message"].as_object() else {
                eprintln!(
                    "make simulate: {} has no case {key}; measure again with `cargo bench --bench cost`",
                    path.display()
                );
                std::process::exit(2);
            };
            Case(per_message.iter().map(|(name, value)| (name.clone(), value.as_f64().unwrap_or(0.0))).collect())
        });
        let text = |key: &str| file[key].as_str().unwrap_or("?").to_string();
        Measured {
            path: path.to_path_buf(),
            when: text("measured_at"),
            machine: text("machine"),
            build: text("build"),
            kinds,
            snapshot_statements: file["snapshot_statements"].as_f64().unwrap_or(0.0),
        }
    }

    fn mix(&self, shares: [f64; 3]) -> Case {
        Case::blend(&[(&self.kinds[0], shares[0]), (&self.kinds[1], shares[1]), (&self.kinds[2], shares[2])])
    }

    fn describe(&self) -> String {
        let path = self.path.strip_prefix(PROJECT_ROOT).unwrap_or(&self.path);
        format!("{} (measured {} on build {}, {})", path.display(), self.when, self.build, self.machine)
    }
}

struct Args {
    costs: PathBuf,
    before: Option<PathBuf>,
    layout: [Option<f64>; 4],
    mix: [f64; 3],
    peak: f64,
    hottest: f64,
    discord: f64,
    guilds: Option<f64>,
    isolates_per_million: f64,
    agents: f64,
    fresh_s: f64,
}

fn parse_args() -> Args {
    let mut args = Args {
        costs: Path::new(PROJECT_ROOT).join(COST_FILE),
        before: None,
        layout: [None; 4],
        mix: MIX,
        peak: PEAK,
        hottest: HOTTEST_CONVERSATION,
        discord: DISCORD_SHARE,
        guilds: None,
        isolates_per_million: ISOLATES_PER_MILLION,
        agents: AGENTS,
        fresh_s: SNAPSHOT_FRESH_S,
    };
    // `cargo bench` adds `--bench`.
    let given: Vec<String> = std::env::args().skip(1).filter(|arg| arg != "--bench").collect();
    let number = |name: &str, value: &str| -> f64 {
        value.parse().unwrap_or_else(|_| panic!("{name} takes a number, not {value:?}"))
    };
    for pair in given.chunks(2) {
        let [name, value] = pair else { panic!("{} takes a value", pair[0]) };
        match name.as_str() {
            "--costs" => args.costs = value.into(),
            "--before" => args.before = Some(value.into()),
            "--d1" => args.layout[0] = Some(number(name, value)),
            "--shards" => args.layout[1] = Some(number(name, value)),
            "--queues" => args.layout[2] = Some(number(name, value)),
            "--indexes" => args.layout[3] = Some(number(name, value)),
            "--peak" => args.peak = number(name, value),
            "--hottest" => args.hottest = number(name, value),
            "--discord" => args.discord = number(name, value),
            "--guilds" => args.guilds = Some(number(name, value)),
            "--isolates" => args.isolates_per_million = number(name, value),
            "--agents" => args.agents = number(name, value),
            "--fresh" => args.fresh_s = number(name, value).max(1.0),
            "--mix" => {
                let shares: Vec<f64> = value.split(',').map(|share| number(name, share)).collect();
                let [observed, engaged, branch] = shares[..] else { panic!("--mix takes three shares: O,E,B") };
                let sum = observed + engaged + branch;
                args.mix = [observed / sum, engaged / sum, branch / sum];
            }
            other => panic!("unknown argument {other} (see benches/simulate.rs)"),
        }
    }
    args
}

fn workload(args: &Args, daily: f64, measured: &Measured) -> Workload {
    let conversations = daily / MESSAGES_PER_CONVERSATION;
    Workload {
        daily,
        peak: args.peak,
        hottest_conversation: args.hottest.min(daily),
        guilds: args.guilds.unwrap_or(conversations * args.discord / CHANNELS_PER_GUILD),
        discord_share: args.discord,
        vector_lifetime_days: VECTOR_LIFETIME_DAYS,
        snapshots: Snapshots {
            isolates: (args.isolates_per_million * daily / 1e6).max(1.0),
            agents: args.agents,
            fresh_s: args.fresh_s,
            statements: measured.snapshot_statements,
        },
    }
}

fn human(value: f64) -> String {
    match value.abs() {
        v if v >= 1e9 => format!("{:.1}G", value / 1e9),
        v if v >= 1e6 => format!("{:.1}M", value / 1e6),
        v if v >= 1e4 => format!("{:.0}k", value / 1e3),
        v if v >= 100.0 => format!("{value:.0}"),
        v if v >= 1.0 => format!("{value:.1}"),
        _ => format!("{value:.3}"),
    }
}

fn print_limits() {
    println!(
        "Documented limits (developers.cloudflare.com unless named; prices: benches/pricing.rs, checked {}):",
        pricing::VERIFIED
    );
    for limit in [scale::D1_QUERIES, scale::DO_REQUESTS, scale::QUEUE_MESSAGES, scale::VECTORS, scale::GUILDS_PER_SHARD]
    {
        println!("  {:>8} {:<13} {}", human(limit.value), limit.unit, limit.source);
    }
    println!();
}

/// The measured costs the projection uses, per message.
fn print_costs(label: &str, measured: &Measured, mix: [f64; 3]) {
    const SHOWN: [(&str, &str); 10] = [
        ("d1_queries", "D1 stmts"),
        ("d1_shard_queries", "on shards"),
        ("d1_calls", "D1 calls"),
        ("d1_rows_written", "D1 rows w"),
        ("do_requests", "DO req"),
        ("do_rows_read", "DO rows r"),
        ("do_rows_written", "DO rows w"),
        ("queue_sends", "queue msg"),
        ("model_calls", "model"),
        ("worker_cpu_ms", "CPU ms"),
    ];
    println!("{label}: {}", measured.describe());
    print!("  {:<22}", "per message");
    SHOWN.iter().for_each(|(_, title)| print!("{title:>10}"));
    println!("{:>12}", "$ per 1,000");
    let blended = measured.mix(mix);
    let rows = measured.kinds.iter().zip(KINDS).map(|(case, (_, name))| (name.to_string(), case));
    let mix_label = format!("day's mix {:.0}/{:.0}/{:.0}", mix[0] * 100.0, mix[1] * 100.0, mix[2] * 100.0);
    for (name, case) in rows.chain([(mix_label, &blended)]) {
        print!("  {name:<22}");
        SHOWN.iter().for_each(|(key, _)| {
            print!("{:>10.2}", if *key == "worker_cpu_ms" { case.cpu_ms() } else { case.get(key) })
        });
        println!("{:>12.5}", scale::price_per_thousand(case));
    }
    println!();
}

/// `guilds_grow`: the guild count follows the volume (not given as an argument).
fn print_day(mix: &Case, workload: &Workload, layout: &Layout, guilds_grow: bool) -> Vec<Use> {
    let mean = workload.daily / 86_400.0;
    println!(
        "  -- {:.0}M messages a day: mean {mean:.0}/s, peak minute {:.0}/s; {} guilds --",
        workload.daily / 1e6,
        mean * workload.peak,
        human(workload.guilds)
    );
    let uses = scale::uses(mix, workload, layout);
    for each in &uses {
        let flag = if each.fraction() >= 1.0 {
            "OVER THE LIMIT"
        } else if each.over_half() {
            "over 50%"
        } else {
            ""
        };
        // Every load but the hottest conversation's grows with the day's volume.
        let fixed = each.component.starts_with("hottest") || (each.component.ends_with("(guilds)") && !guilds_grow);
        let full_at = match fixed || each.load <= 0.0 {
            true => "-".to_string(),
            false => format!("{}/day", human(workload.daily / each.fraction())),
        };
        println!(
            "    {:<46} {:>9} of {:>7} {:<13} {:>7.1}%  full at {full_at:<10} {flag}",
            each.component,
            human(each.load),
            human(each.limit.value),
            each.limit.unit,
            each.fraction() * 100.0
        );
    }
    uses
}

/// What this build has of a sharded layout, as wrangler.toml's production
/// environment binds it and docs/configuration.md documents it.
fn built(layout: &Layout) -> Vec<String> {
    let read = |path: &str| std::fs::read_to_string(Path::new(PROJECT_ROOT).join(path)).unwrap_or_default();
    let (wrangler, settings) = (read("wrangler.toml"), read("docs/configuration.md").to_lowercase());
    let bound = |table: &str| wrangler.lines().filter(|line| line.trim() == table).count() as f64;
    let documented = |word: &str| settings.lines().any(|line| line.contains("shard") && line.contains(word));
    let status = |name: &str, wanted: f64, today: (f64, &str), word: &str| {
        let (count, what) = today;
        let state = if wanted <= count || documented(word) { "built" } else { "NOT BUILT YET" };
        let setting =
            if documented(word) { "a shard setting in docs/configuration.md" } else { "no shard setting documented" };
        format!("{name}: {wanted:.0} wanted, {state} ({what}: {count:.0}; {setting})")
    };
    let production = "wrangler.toml's production environment binds";
    vec![
        status("D1 databases", layout.d1, (bound("[[env.production.d1_databases]]"), production), "d1"),
        status(
            "Gateway shards",
            layout.gateway_shards,
            (1.0, "shards by default (DISCORD_SHARDS or Discord's recommendation: more)"),
            "gateway",
        ),
        status("queues", layout.queues, (bound("[[env.production.queues.producers]]"), production), "queue"),
        status(
            "Vectorize indexes",
            layout.vector_indexes,
            (bound("[[env.production.vectorize]]"), production),
            "vector",
        ),
    ]
}

fn main() {
    let args = parse_args();
    let after = Measured::load(&args.costs);
    let before = args.before.as_deref().map_or_else(|| Measured::load(&args.costs), Measured::load);
    println!("edgebot at scale: make simulate (benches/simulate.rs), per-message costs measured by benches/cost.rs\n");
    print_limits();
    println!(
        "Workload (arguments): mix observed/engaged/branching {:.0}/{:.0}/{:.0}%; peak minute {}x the mean; the busiest \
         conversation {}/day; {:.0}% of messages over the Discord Gateway; guilds {}.\n",
        args.mix[0] * 100.0,
        args.mix[1] * 100.0,
        args.mix[2] * 100.0,
        args.peak,
        human(args.hottest),
        args.discord * 100.0,
        args.guilds.map_or_else(|| format!("= conversations ({MESSAGES_PER_CONVERSATION} messages/day each) x the Discord share / {CHANNELS_PER_GUILD} channels"), human),
    );
    println!(
        "Agent snapshots (arguments): {} isolates per 1M messages a day serving turns, {} agent(s), each snapshot read \
         again every {} s; {:.0} statements a read (measured; a build without snapshots reads per message).\n",
        args.isolates_per_million, args.agents, args.fresh_s, after.snapshot_statements
    );
    print_costs("BEFORE costs", &before, args.mix);
    if args.before.is_some() {
        print_costs("AFTER costs", &after, args.mix);
    }
    let (mix_before, mix_after) = (before.mix(args.mix), after.mix(args.mix));
    let smallest = scale::smallest_layout(&mix_after, &workload(&args, 100e6, &after));
    let [d1, shards, queues, indexes] = args.layout;
    let layout = Layout {
        d1: d1.unwrap_or(smallest.d1),
        gateway_shards: shards.unwrap_or(smallest.gateway_shards),
        queues: queues.unwrap_or(smallest.queues),
        vector_indexes: indexes.unwrap_or(smallest.vector_indexes),
    };
    println!("== BEFORE: today's layout (1 D1, 1 queue, 1 Gateway shard, 1 Vectorize index), BEFORE costs ==");
    for daily in DAYS {
        print_day(&mix_before, &workload(&args, daily, &before), &TODAY, args.guilds.is_none());
    }
    println!(
        "\n== AFTER: {:.0} D1 / {:.0} Gateway shards / {:.0} queues / {:.0} Vectorize indexes{}, AFTER costs ==",
        layout.d1,
        layout.gateway_shards,
        layout.queues,
        layout.vector_indexes,
        if args.layout.iter().all(Option::is_none) { " (the smallest keeping each under 50% at 100M/day)" } else { "" }
    );
    for line in built(&layout) {
        println!("  {line}");
    }
    let mut at_100m = Vec::new();
    for daily in DAYS {
        at_100m = print_day(&mix_after, &workload(&args, daily, &after), &layout, args.guilds.is_none());
    }
    let over: Vec<&str> = at_100m.iter().filter(|each| each.over_half()).map(|each| each.component).collect();
    let (price_before, price_after) = (scale::price_per_thousand(&mix_before), scale::price_per_thousand(&mix_after));
    println!("\nGoals (issue 37):");
    println!(
        "  no component over 50% at 100M/day (AFTER): {}",
        if over.is_empty() { "met".to_string() } else { format!("NOT met: {}", over.join("; ")) }
    );
    println!(
        "  blended price per 1,000 messages: before ${price_before:.5}, after ${price_after:.5} ({:.0}% of before; goal about 50%){}",
        100.0 * price_after / price_before,
        if args.before.is_none() { " - one cost file given: pass --before FILE to compare two builds" } else { "" }
    );
    let [observed, engaged, _] = &after.kinds;
    let [observed_before, engaged_before, _] = &before.kinds;
    println!(
        "  D1 statements per observed message: {:.2} (goal 0); D1 round trips per engaged DM: {:.2}, reads \
         included (goal: at most one commit)",
        observed.get("d1_queries"),
        engaged.get("d1_calls")
    );
    println!(
        "  DO rows written: observed {:.1} -> {:.1}, engaged {:.1} -> {:.1} (goal: about half)",
        observed_before.get("do_rows_written"),
        observed.get("do_rows_written"),
        engaged_before.get("do_rows_written"),
        engaged.get("do_rows_written")
    );
    println!(
        "  the Worker's own CPU per observed inbound, follow-ups included: {:.2} ms (goal 0.3 ms; benches/cpu.rs \
         profiles the ack alone)",
        observed.cpu_ms()
    );
    println!(
        "  not projected (not measured by the counters): storage sizes (D1 10 GB a database, DO 10 GB an object), \
         queue consumer concurrency (needs job durations), model tokens."
    );
}
