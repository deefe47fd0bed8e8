//! The `procroute` command: the conformance suite and its helpers.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use procroute::key::{canonical, hermes};
use procroute::origin::RawOrigin;
use procroute_suite::conform::{self, Config};
use procroute_suite::gen::{self, Rng};

#[derive(Parser)]
#[command(
    name = "procroute",
    version,
    about = "Notifications from background processes land in the thread that started them: spec, model and conformance suite"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
// Parsed once at startup; the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Check the built-in implementation against every spec vector and law.
    Conform(ConformArgs),
    /// Explore every trace of a small scope up to a depth, breadth first,
    /// on the built-in implementation, judging every reached state (the
    /// first counterexample is a shortest one).
    Explore(ExploreArgs),
    /// Run trace files (stored vectors or saved counterexamples) against a
    /// harness and print each judged timeline.
    Replay(ReplayArgs),
    /// Judge a recorded run: a trace (a trace file, or `{threads, ops}`)
    /// and what a gateway reported for it (P-8), held to the oracle by the
    /// one judge without running anything; printed as `replay` prints.
    Judge(JudgeArgs),
    /// Build one self-contained HTML page from `conform` JSON reports
    /// (`--format json` or `--json-out`): an implementations × rules
    /// matrix, every failure with its rule's text, its counterexample drawn
    /// and its replay command, known failures linked to their findings.
    Report(ReportArgs),
    /// Serve the harness protocol on stdin/stdout with the built-in
    /// implementation.
    Harness(HarnessArgs),
    /// Print generated origins × policies with both dialects' keys as JSON
    /// lines (the input of the hermes-agent differential check).
    KeysCorpus {
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Number of generated origins; each is paired with every policy.
        #[arg(long, default_value_t = 10_000)]
        cases: usize,
    },
    /// Time procroute's key, parse and routing operations over a corpus
    /// (`keys-corpus` lines on stdin); prints JSON (median/min/max ns per
    /// call). The Rust side of spec/harnesses/hermes-agent/side_by_side.py.
    Timeit(TimeitArgs),
}

/// `conform --smoke`: generated traces, origins per key law, origins per
/// key-dialect family. 50 traces keep the 2 % coverage floor at one
/// trace per judged rule (tests/conform_runner.rs checks the smoke run
/// reaches every one).
const SMOKE: (usize, usize, usize) = (50, 50, 30);

/// The arguments of `procroute conform`.
#[derive(clap::Args)]
struct ConformArgs {
    /// A harness command (run with `sh -c`) speaking spec/PROTOCOL.md.
    /// Without it, the built-in implementation is tested through the
    /// same protocol (`procroute harness`).
    #[arg(long = "impl", value_name = "CMD")]
    implementation: Option<String>,
    /// Per-request timeout for the harness.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Seed for generated cases (a run is reproducible from its seed).
    #[arg(long, default_value_t = 0x5EED)]
    seed: u64,
    /// A quick check for a pre-commit hook: every vector and stored trace,
    /// 50 generated traces (the coverage floor still holds: every judged
    /// rule reached by one of them at least), 50 origins per key law, 30
    /// per key-dialect family, one failure shrunk per rule.
    #[arg(long, conflicts_with_all = ["cases", "law_cases", "dialect_cases"])]
    smoke: bool,
    /// Generated traces run through the harness and judged against the
    /// reference model.
    #[arg(long, default_value_t = 1000)]
    cases: usize,
    /// Generated origins per key law (built-in runs only).
    #[arg(long, default_value_t = 2000)]
    law_cases: usize,
    /// Longest generated trace, in steps (before quiescence).
    #[arg(long, default_value_t = 32)]
    max_steps: usize,
    /// Where failing traces are saved as trace files (default: the
    /// `procroute/conform` folder of the system's temporary directory;
    /// the report names every file).
    #[arg(long, value_name = "DIR")]
    save: Option<std::path::PathBuf>,
    /// Write the first failing trace's swimlane timeline here (SVG).
    #[arg(long)]
    svg: Option<std::path::PathBuf>,
    /// Validate every protocol message against spec/schema/protocol-v1.json.
    #[arg(long)]
    validate: bool,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Run only cases whose stable id matches (repeatable; `*` globs).
    #[arg(long)]
    only: Vec<String>,
    /// Skip cases whose stable id matches (repeatable; `*` globs).
    #[arg(long)]
    skip: Vec<String>,
    /// Run shard I of N (`--shard 2/4`), split by a stable hash of ids.
    #[arg(long)]
    shard: Option<String>,
    /// A file of case ids (or globs) that are expected to fail; they must
    /// still fail, and the report says when one starts passing. A line
    /// `ID  # FINDING SIG…` pins the case's violation signatures (a
    /// change fails the run); `flaky` forgives a pass, `?SIG` a
    /// violation that may come and go.
    #[arg(long)]
    known_failures: Option<std::path::PathBuf>,
    /// Generated origins per key-dialect law family (KEY-L1..L4), for a
    /// harness that lists `dialect_build` and `dialect_parse`.
    #[arg(long, default_value_t = 300)]
    dialect_cases: usize,
    /// At most this many harness runs to shrink one failing trace.
    #[arg(long, default_value_t = 500)]
    shrink_runs: usize,
    /// Fail unless every judged rule is exercised by at least this
    /// percentage of the generated traces (from the model's view).
    #[arg(long, default_value_t = 2.0)]
    min_coverage: f64,
    /// Shrink at most this many failing traces per broken rule (the
    /// rest are reported as found).
    #[arg(long, default_value_t = 3)]
    max_shrunk: usize,
    /// Harness processes that run the generated traces in parallel
    /// (default: the available cores); the report is the same for any
    /// number.
    #[arg(long)]
    jobs: Option<usize>,
    /// Also write the report as JSON to this file, whatever `--format`
    /// says (what `procroute report` reads).
    #[arg(long, value_name = "FILE")]
    json_out: Option<std::path::PathBuf>,
    /// Ignore the harness's generation profile (PROTOCOL P-13): every
    /// generated trace as the generator draws it, known findings and
    /// all.
    #[arg(long)]
    unsteered: bool,
}

/// The arguments of `procroute explore`.
#[derive(clap::Args)]
struct ExploreArgs {
    /// The declared scope: `default` (threads of one chat, restarts,
    /// outages, shutdown), `data` (two users of a topic, ids with `:`
    /// differing in case, bursts of output), `limits` (SPEC's numbers:
    /// both sides of the cooldown, strikes, the retry schedule); the
    /// counting scopes, few kinds of ops to reach SPEC's thresholds:
    /// `strikes` (three strikes and a promotion), `retries` (a head's
    /// six failed attempts, a second notification behind it), `storm`
    /// (17 processes, the breaker's window and pause).
    #[arg(long, default_value = "default", value_parser = clap::builder::PossibleValuesParser::new(procroute_suite::explore::Scope::NAMES))]
    scope: String,
    /// Operations per trace, before the quiescence suffix (default:
    /// the scope's own, 5 for `default`).
    #[arg(long)]
    depth: Option<usize>,
    /// Stop after this many seconds (the summary says how deep it got).
    #[arg(long)]
    seconds: Option<u64>,
    /// Include agents' reads (PROC-10) in the scope.
    #[arg(long)]
    reads: bool,
    /// The bug bank's copy only (tests/bug-bank/): explore with one bug of
    /// the bank switched on.
    #[arg(long)]
    fault: Option<String>,
    /// Write the counterexample, if one is found, here as a trace file.
    #[arg(long)]
    save: Option<std::path::PathBuf>,
    /// Explore through a harness command (run with `sh -c`) speaking
    /// spec/PROTOCOL.md: the scope's distinct traces (on the built-in
    /// reference, within the harness's declared constraints), level by
    /// level, judged and reported like `conform`.
    #[arg(long = "impl", value_name = "CMD")]
    implementation: Option<String>,
    /// With `--impl`: harness processes run in parallel (default: the
    /// available cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// With `--impl`: per-request timeout.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// With `--impl`: run shard I of N (`--shard 2/4`) of every level,
    /// split by a stable hash of the case ids (`explore/<depth>/<n>`).
    #[arg(long)]
    shard: Option<String>,
    /// With `--impl`: run only cases whose id matches (`*` globs).
    #[arg(long)]
    only: Vec<String>,
    /// With `--impl`: skip cases whose id matches (`*` globs).
    #[arg(long)]
    skip: Vec<String>,
    /// With `--impl`: validate every message against the schema.
    #[arg(long)]
    validate: bool,
    /// With `--impl`: go on after the first level with a failure.
    #[arg(long)]
    keep_going: bool,
    /// The report's format (without `--impl`: one case for the whole
    /// exploration, `explore/<scope>`; the summary goes to stderr).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// The arguments of `procroute replay`.
#[derive(clap::Args)]
struct ReplayArgs {
    /// Trace files (`spec/vectors/traces/*.json`, or what `conform`
    /// saved).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<std::path::PathBuf>,
    /// A harness command (run with `sh -c`); without it, the built-in
    /// implementation (`procroute harness`).
    #[arg(long = "impl", value_name = "CMD")]
    implementation: Option<String>,
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Validate every protocol message against the schema.
    #[arg(long)]
    validate: bool,
    /// Also write each judged report as JSON, to DIR or (without DIR)
    /// the `procroute/replay` folder of the system's temporary
    /// directory; the path is printed.
    #[arg(long, value_name = "DIR", num_args = 0..=1)]
    save: Option<Option<std::path::PathBuf>>,
    /// Print the reports as JSON instead of text (`--format json`).
    #[arg(long)]
    json: bool,
    /// `text` (timelines), `json` (the judged reports) or `junit` (one
    /// testcase per file).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// The arguments of `procroute judge`.
#[derive(clap::Args)]
struct JudgeArgs {
    /// The trace the gateway was given: a trace file (P-11) or `{threads,
    /// ops}` (P-8).
    #[arg(value_name = "TRACE")]
    trace: std::path::PathBuf,
    /// What it reported: `{deliveries, dead_letters}`, `{"trace": …}` or
    /// the answer line `{"seq": N, "result": {"trace": …}}` (P-8).
    #[arg(value_name = "OBSERVED")]
    observed: std::path::PathBuf,
    /// The delivery tick the gateway declares, in ms (P-14).
    #[arg(long, default_value_t = 0)]
    tick_ms: u64,
    /// The gateway declares SPEC D-1's read policy (P-15, PROC-11).
    #[arg(long)]
    read_acknowledges: bool,
    /// Print the judged report as JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// The arguments of `procroute report`.
#[derive(clap::Args)]
struct ReportArgs {
    /// `conform` JSON reports, one column each, in this order.
    #[arg(required = true)]
    reports: Vec<std::path::PathBuf>,
    /// Write the page here (default: standard output, unless `--badges`).
    #[arg(long, short)]
    out: Option<std::path::PathBuf>,
    /// Also write shields.io endpoint badges (JSON) into DIR: one per
    /// implementation and one per SPEC chapter it has cases in.
    #[arg(long, value_name = "DIR")]
    badges: Option<std::path::PathBuf>,
}

/// The arguments of `procroute harness`.
#[derive(clap::Args)]
struct HarnessArgs {
    /// The bug bank's copy only (tests/bug-bank/): reintroduce one bug of
    /// the bank (`--list-faults` names them).
    #[arg(long)]
    fault: Option<String>,
    /// Print the bank's faults, one `name rule` per line, and exit.
    #[arg(long)]
    list_faults: bool,
}

/// The arguments of `procroute timeit`.
#[derive(clap::Args)]
struct TimeitArgs {
    #[arg(long, default_value_t = 15)]
    rounds: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
    Markdown,
    /// JUnit XML, one testcase per case id (CI dashboards).
    Junit,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Explore(args) => explore_cmd(args),
        Command::Harness(args) => harness_cmd(args),
        Command::Conform(args) => conform_cmd(args),
        Command::Report(args) => report_cmd(args),
        Command::Replay(args) => replay_cmd(args),
        Command::Judge(args) => judge_cmd(args),
        Command::Timeit(args) => timeit_cmd(args),
        Command::KeysCorpus { seed, cases } => match keys_corpus(seed, cases) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("procroute: writing corpus: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

fn harness_cmd(args: HarnessArgs) -> ExitCode {
    let HarnessArgs { fault, list_faults } = args;
    if list_faults {
        for (name, rule) in procroute_suite::bank::faults() {
            let _ = writeln!(io::stdout(), "{name} {rule}");
        }
        return ExitCode::SUCCESS;
    }
    let config = match fault_config(fault) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("procroute harness: {e}");
            return ExitCode::from(2);
        }
    };
    let stdin = io::stdin();
    match conform::harness::serve_with(stdin.lock(), io::stdout().lock(), config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("procroute harness: {e}");
            ExitCode::FAILURE
        }
    }
}

fn conform_cmd(args: ConformArgs) -> ExitCode {
    match conform_run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("procroute: {e}");
            ExitCode::from(2)
        }
    }
}

/// `procroute conform`: the run, then the known failures applied, the
/// report written and printed. `Err` is a usage or I/O problem (exit 2).
fn conform_run(mut a: ConformArgs) -> Result<ExitCode, String> {
    if a.smoke {
        (a.cases, a.law_cases, a.dialect_cases) = SMOKE;
        a.max_shrunk = a.max_shrunk.min(1);
    }
    let shard = a
        .shard
        .as_deref()
        .map(conform::select::Selection::parse_shard)
        .transpose()?;
    let known_text = match &a.known_failures {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("--known-failures {}: {e}", path.display()))?,
        None => String::new(),
    };
    let known = conform::select::parse_known_failures(&known_text);
    let selection = conform::select::Selection {
        only: a.only,
        skip: a.skip,
        shard,
    };
    let (program, argv, with_laws) = match &a.implementation {
        Some(cmd) => ("sh".to_owned(), vec!["-c".to_owned(), cmd.clone()], false),
        None => {
            let exe = std::env::current_exe()
                .map_err(|e| format!("cannot find my own executable: {e}"))?;
            (exe.display().to_string(), vec!["harness".to_owned()], true)
        }
    };
    let jobs = a.jobs.unwrap_or_else(cores);
    let (mut report, started, restarts) = conform::run_protocol(
        &program,
        &argv,
        with_laws.then_some(Config {
            seed: a.seed,
            cases: a.law_cases,
        }),
        std::time::Duration::from_millis(a.timeout_ms),
        &selection,
        &conform::runner::TraceRun {
            seed: a.seed,
            cases: a.cases,
            max_steps: a.max_steps,
            save_dir: Some(
                a.save
                    .unwrap_or_else(|| conform::runner::default_save_dir("conform")),
            ),
            max_shrink_runs: a.shrink_runs,
            max_shrunk: a.max_shrunk,
            svg: a.svg,
            validate: a.validate,
            known: known.clone(),
            min_coverage: a.min_coverage,
            stored: true,
            jobs,
            unsteered: a.unsteered,
        },
        conform::dialect::DialectRun {
            seed: a.seed,
            cases: a.dialect_cases,
            jobs,
        },
    )?;
    let restarted = if restarts > 0 {
        format!(", {restarts} harness restart(s)")
    } else {
        String::new()
    };
    let who = format!("{}{restarted}", over_protocol(&started));
    let mut now_passing = conform::select::apply_known_failures(&mut report.outcomes, &known);
    let pins = conform::select::parse_pins(&known_text);
    let forgiven = conform::select::forgive_flaky(&mut now_passing, &pins);
    let changed = conform::select::check_pins(&mut report.outcomes, &pins);
    conform::select::tag_findings(
        &mut report.outcomes,
        &conform::select::parse_known_findings(&known_text),
    );
    conform::select::tag_upstream(
        &mut report.outcomes,
        &conform::select::parse_upstream_links(&known_text),
    );
    report.implementation = Some(started.implementation.clone());
    report.command = a.implementation.clone();
    report.findings = a
        .known_failures
        .as_ref()
        .map(|k| k.with_file_name("FINDINGS.md"))
        .filter(|f| f.is_file())
        .map(|f| f.display().to_string());
    if let Some(path) = &a.json_out {
        let json = serde_json::to_string_pretty(&report).unwrap_or_default() + "\n";
        std::fs::write(path, json).map_err(|e| format!("--json-out {}: {e}", path.display()))?;
    }
    let text = match a.format {
        Format::Text => report.render_text(&who),
        Format::Markdown => report.render_markdown(&who),
        Format::Json => serde_json::to_string_pretty(&report).unwrap_or_default() + "\n",
        Format::Junit => conform::junit::render("procroute conform", &who, &report.outcomes),
    };
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = io::stdout().write_all(text.as_bytes());
    for id in &now_passing {
        eprintln!("procroute: known failure {id} now passes: remove it from the list");
    }
    for why in changed.iter().chain(&forgiven) {
        eprintln!("procroute: {why}");
    }
    Ok(if report.unexpected() == 0 && now_passing.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn report_cmd(args: ReportArgs) -> ExitCode {
    let ReportArgs {
        reports,
        out,
        badges,
    } = args;
    let mut inputs = Vec::new();
    for path in &reports {
        match conform::html::Input::read(path) {
            Ok(i) => inputs.push(i),
            Err(e) => {
                eprintln!("procroute report: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(dir) = &badges {
        if let Err(e) = write_badges(dir, &inputs) {
            eprintln!("procroute report: --badges {}: {e}", dir.display());
            return ExitCode::from(2);
        }
        if out.is_none() {
            return ExitCode::SUCCESS;
        }
    }
    let page = conform::html::render(&inputs);
    match out {
        Some(path) => {
            if let Err(e) = std::fs::write(&path, page) {
                eprintln!("procroute report: {}: {e}", path.display());
                return ExitCode::from(2);
            }
            for i in &inputs {
                if let (Some(f), None) = (&i.report.findings, &i.findings) {
                    eprintln!(
                        "procroute report: {}: cannot read its findings {f}",
                        i.label
                    );
                }
            }
            eprintln!(
                "procroute report: wrote {} ({} implementations)",
                path.display(),
                inputs.len()
            );
        }
        None => {
            let _ = io::stdout().write_all(page.as_bytes());
        }
    }
    ExitCode::SUCCESS
}

/// Every report's badges into `dir`; each file name printed.
fn write_badges(dir: &std::path::Path, inputs: &[conform::html::Input]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let chapters = conform::badges::chapters(conform::html::SPEC);
    for input in inputs {
        for (name, badge) in conform::badges::badges(input, &chapters) {
            let path = dir.join(name);
            std::fs::write(
                &path,
                serde_json::to_string_pretty(&badge).unwrap_or_default() + "\n",
            )?;
            eprintln!("procroute report: wrote {}", path.display());
        }
    }
    Ok(())
}

fn replay_cmd(args: ReplayArgs) -> ExitCode {
    let ReplayArgs {
        files,
        implementation,
        timeout_ms,
        validate,
        save,
        json,
        format,
    } = args;
    let format = if json { Format::Json } else { format };
    if format == Format::Markdown {
        eprintln!("procroute replay: --format markdown: use text, json or junit");
        return ExitCode::from(2);
    }
    replay(&files, implementation, timeout_ms, validate, save, format)
}

fn timeit_cmd(args: TimeitArgs) -> ExitCode {
    let TimeitArgs { rounds } = args;
    let mut corpus = String::new();
    if let Err(e) = std::io::Read::read_to_string(&mut std::io::stdin(), &mut corpus) {
        eprintln!("procroute: reading the corpus: {e}");
        return ExitCode::from(2);
    }
    match procroute_suite::timing::run(&corpus, rounds.max(1)) {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("procroute: corpus {e}");
            ExitCode::from(2)
        }
    }
}

fn explore_cmd(args: ExploreArgs) -> ExitCode {
    match args {
        ExploreArgs {
            scope,
            depth,
            seconds,
            reads,
            fault,
            save,
            implementation: Some(cmd),
            jobs,
            timeout_ms,
            shard,
            only,
            skip,
            validate,
            keep_going,
            format,
        } => {
            if fault.is_some() {
                eprintln!("procroute explore: --fault is for the built-in router; with --impl, give the harness its fault (`procroute harness --fault NAME`)");
                return ExitCode::from(2);
            }
            let shard = match shard
                .as_deref()
                .map(conform::select::Selection::parse_shard)
            {
                Some(Err(e)) => {
                    eprintln!("procroute explore: {e}");
                    return ExitCode::from(2);
                }
                Some(Ok(s)) => Some(s),
                None => None,
            };
            let over = procroute_suite::explore::Over {
                jobs: jobs.unwrap_or_else(cores),
                timeout: std::time::Duration::from_millis(timeout_ms),
                selection: conform::select::Selection { only, skip, shard },
                validate,
                keep_going,
                deadline: seconds
                    .map(|s| std::time::Instant::now() + std::time::Duration::from_secs(s)),
            };
            explore_impl(&cmd, &scope_of(&scope, depth, reads), &over, save, format)
        }
        ExploreArgs {
            scope,
            depth,
            seconds,
            reads,
            fault,
            save,
            format,
            ..
        } => {
            let config = match fault_config(fault.clone()) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("procroute explore: {e}");
                    return ExitCode::from(2);
                }
            };
            explore(
                &scope_of(&scope, depth, reads),
                seconds,
                fault,
                save,
                &config,
                format,
            )
        }
    }
}

/// The built-in gateway's configuration, with `--fault NAME` switched on
/// (only in the bug bank's copy of the workspace, `procroute_suite::bank`).
fn fault_config(fault: Option<String>) -> Result<procroute::gateway::Config, String> {
    match fault {
        Some(name) => procroute_suite::bank::config(&name),
        None => Ok(procroute::gateway::Config::default()),
    }
}

/// How a harness is named in reports: `name version (language) over protocol vN`.
fn over_protocol(started: &conform::protocol::Started) -> String {
    let i = &started.implementation;
    let mut who = format!(
        "{} {} ({}) over protocol v{}",
        i.name, i.version, i.language, started.protocol,
    );
    for (what, url) in i.links() {
        who.push_str(&format!(", {what} {url}"));
    }
    who
}

/// The default number of harness workers: the available cores.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// The declared scope `name` (checked by clap), at `depth` if given.
fn scope_of(name: &str, depth: Option<usize>, reads: bool) -> procroute_suite::explore::Scope {
    let mut scope = procroute_suite::explore::Scope::named(name).unwrap_or_default();
    if let Some(d) = depth {
        scope.depth = d;
    }
    scope.reads |= reads;
    scope
}

/// `procroute explore --impl CMD`: the default scope's distinct traces to
/// `depth` through a harness, reported like `conform`.
fn explore_impl(
    cmd: &str,
    scope: &procroute_suite::explore::Scope,
    over: &procroute_suite::explore::Over,
    save: Option<std::path::PathBuf>,
    format: Format,
) -> ExitCode {
    use procroute_suite::explore::explore_over;
    let args = vec!["-c".to_owned(), cmd.to_owned()];
    let (report, started, s) = match explore_over("sh", &args, scope, over) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("procroute explore: {e}");
            return ExitCode::from(2);
        }
    };
    let who = over_protocol(&started);
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    let summary = format!(
        "explored {} on the reference: {} states, {} distinct (depth {} complete); sent {} traces of {} level(s) to {} harness process(es){}, {:.0} traces/s ({:.1} s)",
        scope.describe(),
        s.enumerated.explored,
        s.enumerated.distinct,
        s.enumerated.complete_depth,
        s.sent,
        s.levels_run,
        over.jobs.max(1),
        over.selection
            .shard
            .map_or(String::new(), |(i, n)| format!(" (shard {i}/{n})")),
        s.sent as f64 / secs,
        secs,
    );
    let text = match format {
        Format::Text => format!(
            "{}\n{summary}\n",
            report
                .render_text(&who)
                .replacen("procroute conform", "procroute explore", 1)
        ),
        Format::Markdown => format!(
            "{}\n{summary}\n",
            report
                .render_markdown(&who)
                .replacen("procroute conform", "procroute explore", 1)
        ),
        Format::Json => serde_json::to_string_pretty(&report).unwrap_or_default() + "\n",
        Format::Junit => conform::junit::render("procroute explore", &who, &report.outcomes),
    };
    let _ = io::stdout().write_all(text.as_bytes());
    if format == Format::Junit {
        eprintln!("{summary}");
    }
    if let (Some(path), Some((case, _, violations))) = (save, &s.first) {
        let file = procroute_suite::conform::trace::TraceFile {
            suite_version: procroute_suite::SUITE_VERSION.to_owned(),
            id: case.id.clone(),
            rules: Vec::new(),
            note: format!(
                "A shortest counterexample found by procroute explore --impl (depth {}).",
                case.depth
            ),
            found: Some(procroute_suite::conform::trace::file::Found {
                implementation: format!(
                    "{} {}",
                    started.implementation.name, started.implementation.version
                ),
                rule: violations[0].rule.clone(),
                violation: violations[0].detail.clone(),
                shrunk_from: None,
            }),
            trace: case.trace.clone(),
            expect: procroute_suite::conform::trace::file::Expect::observed(
                &procroute_suite::conform::trace::execute(&case.trace).unwrap_or_default(),
            ),
        };
        if let Err(e) = std::fs::write(&path, file.to_json()) {
            eprintln!("procroute explore: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        eprintln!(
            "saved: {} (replay: procroute replay {} --impl '{}')",
            path.display(),
            path.display(),
            cmd.replace('\'', "'\\''")
        );
    }
    if report.unexpected() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `procroute explore`: the default scope to `depth`, a summary, and the
/// shortest counterexample if there is one.
fn explore(
    scope: &procroute_suite::explore::Scope,
    seconds: Option<u64>,
    fault: Option<String>,
    save: Option<std::path::PathBuf>,
    config: &procroute::gateway::Config,
    format: Format,
) -> ExitCode {
    use procroute_suite::explore::explore;
    use std::fmt::Write as _;
    // The human summary: stdout for text, stderr beside a report.
    let mut human = String::new();
    let _ = writeln!(human, "exploring {}", scope.describe());
    let deadline = seconds.map(|s| std::time::Instant::now() + std::time::Duration::from_secs(s));
    let s = explore(scope, config, deadline);
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    let _ = writeln!(
        human,
        "{} states explored, {} distinct, {:.0} states/s, depth {} complete ({:.1} s)",
        s.explored,
        s.distinct,
        s.explored as f64 / secs,
        s.complete_depth,
        secs
    );
    if let Some((trace, violations)) = &s.counterexample {
        let result = procroute_suite::conform::trace::execute_with(trace, config.clone())
            .unwrap_or_default();
        let _ = writeln!(
            human,
            "\ncounterexample ({} ops before quiescence, a shortest one):\n{}",
            trace.ops.len()
                - procroute_suite::conform::trace::quiescence(trace.threads.len()).len(),
            conform::render::timeline_text(trace, &result)
        );
        for v in violations {
            let _ = writeln!(human, "  {}: {}", v.rule, v.detail);
        }
        if let Some(path) = save {
            let file = procroute_suite::conform::trace::TraceFile {
                suite_version: procroute_suite::SUITE_VERSION.to_owned(),
                id: format!("explore/{}", fault.as_deref().unwrap_or("builtin")),
                rules: Vec::new(),
                note: "A shortest counterexample found by procroute explore.".into(),
                found: Some(procroute_suite::conform::trace::file::Found {
                    implementation: fault.as_deref().map_or("procroute (built-in)".into(), |f| {
                        format!("procroute harness --fault {f}")
                    }),
                    rule: violations[0].rule.clone(),
                    violation: violations[0].detail.clone(),
                    shrunk_from: None,
                }),
                trace: trace.clone(),
                // What the built-in router, without a fault, reports.
                expect: procroute_suite::conform::trace::file::Expect::observed(
                    &procroute_suite::conform::trace::execute(trace).unwrap_or_default(),
                ),
            };
            if let Err(e) = std::fs::write(&path, file.to_json()) {
                eprintln!("procroute explore: {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            let _ = writeln!(human, "saved: {}", path.display());
        }
    }
    let _ = writeln!(human, "{} passed, {} failed", s.judged - s.failed, s.failed);
    if format == Format::Text {
        let _ = io::stdout().write_all(human.as_bytes());
    } else {
        // One case for the whole exploration: its id names the scope.
        let id = format!("explore/{}", scope.name);
        let outcome = match &s.counterexample {
            None => conform::Outcome::pass(id, &[]),
            Some((trace, violations)) => {
                let result = procroute_suite::conform::trace::execute_with(trace, config.clone())
                    .unwrap_or_default();
                let note = format!("a shortest counterexample, {}", scope.describe());
                conform::Outcome::check(
                    id,
                    &[violations[0].rule.as_str()],
                    Some(conform::runner::failure_detail(
                        violations, trace, &result, &note,
                    )),
                )
            }
        };
        let report = conform::Report::new(procroute_suite::SUITE_VERSION.to_owned(), vec![outcome]);
        let who = fault
            .as_deref()
            .map_or("procroute (built-in, in-process)".into(), |f| {
                format!("procroute (built-in, in-process) with fault {f}")
            });
        let text = match format {
            Format::Junit => conform::junit::render("procroute explore", &who, &report.outcomes),
            Format::Json => serde_json::to_string_pretty(&report).unwrap_or_default() + "\n",
            _ => report
                .render_markdown(&who)
                .replacen("procroute conform", "procroute explore", 1),
        };
        eprint!("{human}");
        let _ = io::stdout().write_all(text.as_bytes());
    }
    if s.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The harness to run: `sh -c CMD`, or this executable's `harness`.
fn harness_command(implementation: &Option<String>) -> Result<(String, Vec<String>), String> {
    match implementation {
        Some(cmd) => Ok(("sh".to_owned(), vec!["-c".to_owned(), cmd.clone()])),
        None => std::env::current_exe()
            .map(|exe| (exe.display().to_string(), vec!["harness".to_owned()]))
            .map_err(|e| format!("cannot find my own executable: {e}")),
    }
}

fn replay(
    files: &[std::path::PathBuf],
    implementation: Option<String>,
    timeout_ms: u64,
    validate: bool,
    save: Option<Option<std::path::PathBuf>>,
    format: Format,
) -> ExitCode {
    use procroute_suite::conform::trace::TraceFile;
    let json = format == Format::Json;
    let mut outcomes = Vec::new();
    let mut who = String::new();
    let (program, args) = match harness_command(&implementation) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("procroute: {e}");
            return ExitCode::from(2);
        }
    };
    let save_dir = save.map(|d| d.unwrap_or_else(|| conform::runner::default_save_dir("replay")));
    let timeout = std::time::Duration::from_millis(timeout_ms);
    let mut failed = false;
    let mut out = String::new();
    // One harness process for every file (a costly start-up, once).
    let mut replayer = conform::runner::Replayer::new(&program, &args, timeout, validate);
    for path in files {
        let file = match TraceFile::load(path) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("procroute replay: {e}");
                return ExitCode::from(2);
            }
        };
        let r = match replayer.replay(&file) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("procroute replay: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        };
        failed |= r.verdict == "fail";
        who = format!(
            "{} {} ({})",
            r.implementation.name, r.implementation.version, r.implementation.language
        );
        let rules: Vec<&str> = file.rules.iter().map(String::as_str).collect();
        outcomes.push(match (&r.skipped, r.violations.first()) {
            (Some(why), _) => conform::Outcome::skip(file.id.clone(), &rules, why.clone()),
            (None, None) => conform::Outcome::pass(file.id.clone(), &rules),
            (None, Some(head)) => conform::Outcome::check(
                file.id.clone(),
                &[head.rule.as_str()],
                Some(conform::runner::failure_detail(
                    &r.violations,
                    &file.trace,
                    &r.result,
                    &format!("replayed from {}", path.display()),
                )),
            ),
        });
        if json {
            out.push_str(&serde_json::to_string_pretty(&r).unwrap_or_default());
            out.push('\n');
        } else if format == Format::Text {
            out.push_str(&replay_text(&file, path, &r));
        }
        if let Some(dir) = &save_dir {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("trace");
            let dest = dir.join(format!("{stem}.replay.json"));
            let written = std::fs::create_dir_all(dir).and_then(|()| {
                std::fs::write(
                    &dest,
                    serde_json::to_string_pretty(&r).unwrap_or_default() + "\n",
                )
            });
            match written {
                Ok(()) if format == Format::Junit => eprintln!("saved {}", dest.display()),
                Ok(()) => out.push_str(&format!("saved {}\n", dest.display())),
                Err(e) => {
                    eprintln!("procroute replay: --save {}: {e}", dest.display());
                    return ExitCode::from(2);
                }
            }
        }
        out.push('\n');
    }
    if format == Format::Junit {
        out = conform::junit::render("procroute replay", &who, &outcomes);
    }
    let _ = io::stdout().write_all(out.as_bytes());
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// A judged trace as text: who, what it exercises, the timeline, the
/// verdict with every violation and its rule's words (`replay`, `judge`).
fn replay_text(
    file: &procroute_suite::conform::trace::TraceFile,
    path: &std::path::Path,
    r: &conform::runner::Replay,
) -> String {
    let mut out = format!(
        "{} ({}) against {} {} ({})\n",
        file.id,
        path.display(),
        r.implementation.name,
        r.implementation.version,
        r.implementation.language
    );
    out.push_str(&format!("exercises: {}\n", file.rules.join(", ")));
    if let Some(f) = &file.found {
        out.push_str(&format!(
            "found failing in {}: {}: {}\n",
            f.implementation, f.rule, f.violation
        ));
    }
    if let Some(why) = &r.skipped {
        out.push_str(&format!("verdict: SKIPPED ({why})\n"));
        return out;
    }
    out.push_str(&conform::render::timeline_text(&file.trace, &r.result));
    if r.violations.is_empty() {
        out.push_str("verdict: PASS\n");
    } else {
        out.push_str(&format!(
            "verdict: FAIL ({} violation(s))\n",
            r.violations.len()
        ));
        for v in &r.violations {
            out.push_str(&format!("  {}: {}\n", v.rule, v.detail));
        }
        out.push_str(&procroute_suite::model::judge::quotes(&r.violations));
    }
    if !r.differences.is_empty() {
        out.push_str("differs from the observations the file lists (informative):\n");
        for d in &r.differences {
            out.push_str(&format!("  {d}\n"));
        }
    }
    out
}

/// `procroute judge TRACE OBSERVED`: exit 0 when the record passes, 1
/// when it breaks a rule, 2 when a file cannot be read as what it should
/// be.
fn judge_cmd(args: JudgeArgs) -> ExitCode {
    use procroute_suite::conform::recorded;
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
    };
    let judged = read(&args.trace)
        .and_then(|t| {
            recorded::trace_from_json(&t).map_err(|e| format!("{}: {e}", args.trace.display()))
        })
        .and_then(|file| {
            let observed = read(&args.observed).and_then(|o| {
                recorded::observed_from_json(&o)
                    .map_err(|e| format!("{}: {e}", args.observed.display()))
            })?;
            let declared = procroute_suite::model::judge::Declared {
                tick_ms: args.tick_ms,
                read_acknowledges: if args.read_acknowledges {
                    procroute_suite::model::oracle::ReadAck::OwnThreadAfterDelivery
                } else {
                    procroute_suite::model::oracle::ReadAck::Never
                },
            };
            let r = recorded::judge(&file, observed, &declared);
            Ok((file, r))
        });
    let (file, r) = match judged {
        Ok(x) => x,
        Err(e) => {
            eprintln!("procroute judge: {e}");
            return ExitCode::from(2);
        }
    };
    let out = if args.json {
        serde_json::to_string_pretty(&r).unwrap_or_default() + "\n"
    } else {
        replay_text(&file, &args.observed, &r)
    };
    let _ = io::stdout().write_all(out.as_bytes());
    if r.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn keys_corpus(seed: u64, cases: usize) -> io::Result<()> {
    let mut rng = Rng::new(seed);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let profiles = [None, Some("coder")];
    for _ in 0..cases {
        let origin = gen::origin(&mut rng);
        for base in procroute::Policy::all_switches() {
            for profile in profiles {
                let policy = match profile {
                    Some(p) => base
                        .clone()
                        .with_profile(procroute::Profile::new(p).expect("static profile is valid")),
                    None => base.clone(),
                };
                let line = serde_json::json!({
                    "origin": RawOrigin::from(origin.clone()),
                    "policy": policy,
                    "hermes": hermes::build(&origin, &policy).map_err(|e| e.to_string()),
                    "canonical": canonical::build(&origin, &policy),
                });
                writeln!(out, "{line}")?;
            }
        }
    }
    out.flush()
}
