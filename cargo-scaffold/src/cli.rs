//! The command line, as clap derives it. Values that the library knows how
//! to parse (formats, modes, rates) stay strings here and are checked by the
//! subcommands, so that a bad value is one line naming the flag and the fix.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Run scaffold evals and work with their results and sessions.
#[derive(Debug, Parser)]
#[command(
    name = "cargo-scaffold",
    bin_name = "cargo scaffold",
    version,
    about = "Run scaffold evals and work with their stored results and sessions",
    long_about = "Run scaffold evals and work with their stored results and sessions.\n\n\
        The evals themselves are a Cargo test target (`cargo test --test evals`);\n\
        `run` wraps it, and the other commands read what it left in\n\
        target/scaffold/: the results JSON ({eval}.json) and the session\n\
        database (scaffold.db), which holds every session and every eval run\n\
        (with a CARGO_TARGET_DIR shared by several projects,\n\
        $CARGO_TARGET_DIR/scaffold/<package>-<hash>/ for the package of the\n\
        current directory).",
    after_help = "Exit status: 0 when everything passed, 1 when a run, a gate, a score or a\n\
        comparison failed, 2 when the input was wrong (a bad flag, a missing file).",
    disable_help_subcommand = true
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the eval suite (`cargo test --test evals`) with scaffold's settings as flags.
    #[command(
        long_about = "Run the eval suite: `cargo test --test evals` in the current directory, with\n\
            the flags below passed to the harness as SCAFFOLD_* environment variables.\n\
            Arguments after `--` go to the harness (libtest flags: a name filter,\n\
            --exact, --skip, --list, --nocapture). The exit status is cargo's.",
        after_help = "Examples:\n  \
            cargo scaffold run\n  \
            cargo scaffold run --filter 'gpt-*' --tags security --format table,json,markdown --output eval-results\n  \
            cargo scaffold run --parallel 4 --baseline main-results/ -- sql-injection\n  \
            cargo scaffold run --mode record      # call the real APIs and record them (needs API keys)"
    )]
    Run(RunArgs),
    /// Render stored results again, as a table or report files.
    #[command(
        long_about = "Render stored results again: the table on stdout, and with --output the\n\
            report files {eval}.json, {eval}.md, {eval}.junit.xml, {eval}.html.\n\
            Without --output every selected format is printed on stdout. The results\n\
            come from results JSON files (--results) or from an eval run of the session\n\
            database (--run, rebuilt from its recorded cells).",
        after_help = "Examples:\n  \
            cargo scaffold report\n  \
            cargo scaffold report --run latest --database shard-1.db\n  \
            cargo scaffold report --results eval-results/code-review.json --format markdown\n  \
            cargo scaffold report --format table,html --output site/ --baseline main-results/"
    )]
    Report(ReportArgs),
    /// Compare two runs' results: regressions, improvements, verdict.
    #[command(
        long_about = "Compare a candidate run with a baseline run, cell by cell (variant, case,\n\
            trial): pass → fail regressions, fail → pass improvements, latency, cost\n\
            and scorer changes past their thresholds, new and removed cells, and a\n\
            verdict. Exits with 1 when the comparison blocks (a critical regression,\n\
            or the pass rate dropped by 5 points or more).",
        after_help = "Examples:\n  \
            cargo scaffold compare main-results/code-review.json target/scaffold/code-review.json\n  \
            cargo scaffold compare main-results/ target/scaffold/ --format markdown >> \"$GITHUB_STEP_SUMMARY\""
    )]
    Compare(CompareArgs),
    /// Pass or fail stored results on a pass rate and a baseline (for CI).
    #[command(
        long_about = "Pass or fail stored results, one line per eval: the pass rate against the\n\
            minimum (each eval's own min_pass_rate unless --min-pass-rate is given),\n\
            and with --baseline the comparison with an earlier run. Exits with 1 when\n\
            any eval fails.",
        after_help = "Examples:\n  \
            cargo scaffold gate\n  \
            cargo scaffold gate --results merged/ --min-pass-rate 0.9\n  \
            cargo scaffold gate --run latest --database eval.db\n  \
            cargo scaffold gate --min-pass-rate 95% --baseline main-results/"
    )]
    Gate(GateArgs),
    /// List, show, export and import stored sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// List the eval runs of the session database.
    #[command(subcommand)]
    Runs(RunsCommand),
    /// Run the eval's variants again from a point of a stored session.
    #[command(
        long_about = "Fork every variant of the eval suite from a point of a stored session:\n\
            each variant starts from the parent's state at that point, with the\n\
            parent's input, so only what comes after differs. Only the cells of the\n\
            parent's case run (matched by its case: and dataset: tags, else by its\n\
            input). Runs the suite like `run` (same flags), with SCAFFOLD_FORK_FROM and\n\
            SCAFFOLD_FORK_AT set; snapshots are not checked.",
        after_help = "The fork point must be explicit: a signal index (index:47, or just 47), or a\n\
            phase with its occurrence (phase:fix:first, phase:fix:last, phase:fix:2),\n\
            since phases can repeat.\n\n\
            In playback, a forked variant's calls are answered from its own recordings\n\
            and must be the recorded requests: a fork at a later phase replays only for\n\
            the parent's own variant (--filter it); other variants need --mode record\n\
            or live, since their prompts now carry the parent's state.\n\n\
            Examples:\n  \
            cargo scaffold fork --from 3f2a9c1e --at phase:review:first\n  \
            cargo scaffold fork --from 3f2a9c1e --at phase:fix:first --filter gpt-4o\n  \
            cargo scaffold fork --from parent.json --at 47 --mode live --filter 'opus-*'"
    )]
    Fork(ForkArgs),
    /// Grade stored sessions with a dataset's assertions, running nothing.
    #[command(
        long_about = "Grade stored sessions with the assertions of a dataset: no workflow runs,\n\
            the sessions' signals are read from the database and checked. Each\n\
            session is matched to its case by its `case:<id>` tag (eval cells have\n\
            one), or graded against the case given with --case. Prints one line per\n\
            session and exits with 1 when any fails.",
        after_help = "Sessions: --sessions ID,ID (ids, unique prefixes or the ends `sessions list` shows), --tag TAG (repeat: all\n\
            of them), or --run RUN_ID|latest (the sessions of an eval run); the\n\
            newest eval run when none is given.\n\n\
            Scorers (--scorer, repeatable): output-valid, latency=MAX_MS,IDEAL_MS,\n\
            cost=MAX_USD,IDEAL_USD, tokens=MAX,IDEAL.\n\n\
            Examples:\n  \
            cargo scaffold score --dataset evals/code-review.yaml --tag eval:code-review --variant gpt-4o\n  \
            cargo scaffold score --dataset evals/code-review.yaml --run latest --scorer output-valid\n  \
            cargo scaffold score --dataset evals/code-review.yaml --sessions 3f2a9c1e --case sql-injection"
    )]
    Score(ScoreArgs),
    /// Check dataset files: every error and warning, with file, line and column.
    #[command(
        long_about = "Check dataset files (YAML or JSON, by extension) as the eval harness loads\n\
            them: every error and warning of each file, as `file:line:column: error: …`\n\
            with a did-you-mean where one fits, on stdout; a count on stderr. Exits\n\
            with 1 when any file has an error (warnings alone pass), 2 when a file\n\
            cannot be read.",
        after_help = "Examples:\n  \
            cargo scaffold validate evals/code-review.yaml\n  \
            cargo scaffold validate evals/*.yaml evals/*.json"
    )]
    Validate(ValidateArgs),
    /// How many cases a target difference between variants needs.
    #[command(
        long_about = "Plan the size of a comparison: for each pair of variants the stored results\n\
            compared (the recommended one against each other), the number of cases\n\
            needed to detect a difference of --effect in the deciding metric (pass\n\
            rate or the primary scorer) at the results' α with the given power,\n\
            from the spread of the per-case differences (0.5 assumed when the\n\
            results cannot estimate it). Trials do not count: cases are the unit.",
        after_help = "Examples:\n  \
            cargo scaffold plan --effect 0.05\n  \
            cargo scaffold plan --effect 10% --run latest --power 0.9"
    )]
    Plan(PlanArgs),
    /// Merge the results of shards (e.g. nextest partitions) into one run.
    #[command(
        long_about = "Merge the results of shards of one run (e.g. `cargo nextest run --partition\n\
            hash:k/n` on several CI runners, each writing its own database) into one\n\
            results document per eval, {eval}.json in --output, recomputing the\n\
            summaries, so that `report` and `gate` judge the whole run. A shard is a\n\
            session database (every eval run in it, or --run), a results JSON file, or\n\
            a directory of them. The shards must have run the same evals with the same\n\
            trials, variants, scorers and min_pass_rate, and no cell may be in two.",
        after_help = "Example:\n  \
            cargo scaffold merge shard-1.db shard-2.db --output merged/ && cargo scaffold gate --results merged/"
    )]
    Merge(MergeArgs),
    /// Browse the session database in a web browser: runs, a run's grid, two runs compared.
    #[command(
        long_about = "Serve the session database, read only, on a local web server and print its\n\
            URL: every eval run (origin, time, state, evals, cells passed), one run's\n\
            grid of cases × variants with each cell's verdict, scores and output\n\
            (filter by failing or passing cells, variant and text), and any two runs\n\
            compared eval by eval (regressions first). Binds 127.0.0.1 unless --host\n\
            says otherwise. Runs until stopped.",
        after_help = "Examples:\n  \
            cargo scaffold view\n  \
            cargo scaffold view --database shard-1.db --port 8080 --open"
    )]
    View(ViewArgs),
}

/// `cargo scaffold run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Trials per variant × case, overriding the evals' own count
    #[arg(long, value_name = "N")]
    pub trials: Option<u32>,
    /// Cells run at once (libtest's --test-threads)
    #[arg(long, value_name = "N")]
    pub parallel: Option<usize>,
    /// Only variants whose name matches one of these globs (`opus-*`; repeat or comma-separate)
    #[arg(long, value_name = "GLOB", value_delimiter = ',')]
    pub filter: Vec<String>,
    /// Only cases with one of these tags (repeat or comma-separate)
    #[arg(long, value_name = "TAG", value_delimiter = ',')]
    pub tags: Vec<String>,
    /// Report formats: table, json, markdown, junit, html (comma-separated) [default: table,json]
    #[arg(long, value_name = "LIST")]
    pub format: Option<String>,
    /// Directory for the report files [default: target/scaffold/]
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// How providers are reached: playback (recordings), record or live [default: playback; record with --fake]
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    /// Answer every provider call from this YAML file of fake-provider rules (e.g. evals/fake.yaml): record without a key
    #[arg(long, value_name = "FILE")]
    pub fake: Option<PathBuf>,
    /// Session database: a file or `:memory:` [default: target/scaffold/scaffold.db]
    #[arg(long, value_name = "PATH")]
    pub database: Option<String>,
    /// Results of an earlier run ({eval}.json or a directory of them): blocking regressions fail the run
    #[arg(long, value_name = "FILE|DIR")]
    pub baseline: Option<PathBuf>,
    /// Resume an interrupted run without redoing finished cells (the last run, or RUN_ID)
    #[arg(long, value_name = "RUN_ID", num_args = 0..=1, default_missing_value = "1")]
    pub resume: Option<String>,
    /// Package holding the eval test target (cargo's -p)
    #[arg(short = 'p', long, value_name = "SPEC")]
    pub package: Option<String>,
    /// Name of the eval test target
    #[arg(long = "test", value_name = "NAME", default_value = "evals")]
    pub test_target: String,
    /// Arguments for the harness (libtest flags), after `--`
    #[arg(last = true, value_name = "HARNESS ARGS")]
    pub harness_args: Vec<String>,
}

/// Where stored results come from: results JSON, or an eval run of a database.
#[derive(Debug, Args)]
pub struct ResultsArg {
    /// Results JSON ({eval}.json) or a directory of them [default: target/scaffold/]
    #[arg(long, value_name = "FILE|DIR", conflicts_with = "run")]
    pub results: Option<PathBuf>,
    /// Or the results of this eval run of the database (a run id, a unique prefix, or `latest`)
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
    /// The database of --run [default: $SCAFFOLD_DATABASE, else target/scaffold/scaffold.db]
    #[arg(long, value_name = "PATH", requires = "run")]
    pub database: Option<PathBuf>,
}

/// `cargo scaffold report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub source: ResultsArg,
    /// Formats: table, json, markdown, junit, html (comma-separated)
    #[arg(long, value_name = "LIST", default_value = "table")]
    pub format: String,
    /// Write the report files into this directory (the table still goes to stdout)
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Baseline results to compare with, shown in the Markdown and HTML reports
    #[arg(long, value_name = "FILE|DIR")]
    pub baseline: Option<PathBuf>,
}

/// `cargo scaffold plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub source: ResultsArg,
    /// The difference to detect, a fraction (0.05) or percentage points (5%)
    #[arg(long, value_name = "EFFECT")]
    pub effect: String,
    /// The chance of detecting it [default: 0.8]
    #[arg(long, value_name = "POWER", default_value = "0.8")]
    pub power: String,
}

/// `cargo scaffold compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: results JSON or a directory of {eval}.json
    #[arg(value_name = "BASELINE")]
    pub baseline: PathBuf,
    /// The candidate: results JSON or a directory of {eval}.json
    #[arg(value_name = "CANDIDATE")]
    pub candidate: PathBuf,
    /// Output: text, json or markdown
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub format: String,
    /// Block on latency, cost and scorer regressions too (by default they only warn)
    #[arg(long)]
    pub block_on_metrics: bool,
}

/// `cargo scaffold gate`.
#[derive(Debug, Args)]
pub struct GateArgs {
    #[command(flatten)]
    pub source: ResultsArg,
    /// Minimum pass rate, a fraction (0.9) or a percentage (90%) [default: each eval's own]
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub min_pass_rate: Option<String>,
    /// Judge the lower bound of the pass rate's Wilson interval, not the rate itself
    #[arg(long)]
    pub lower_bound: bool,
    /// Gate a run that is not finished on the cells it recorded (by default it fails)
    #[arg(long)]
    pub allow_partial: bool,
    /// Baseline results (file or directory): fail on blocking regressions against it
    #[arg(long, value_name = "FILE|DIR")]
    pub baseline: Option<PathBuf>,
    /// Block on latency, cost and scorer regressions against the baseline too
    #[arg(long)]
    pub block_on_metrics: bool,
}

/// Where the sessions are.
#[derive(Debug, Args)]
pub struct DatabaseArg {
    /// Session database file [default: $SCAFFOLD_DATABASE, else target/scaffold/scaffold.db]
    #[arg(long, value_name = "PATH")]
    pub database: Option<PathBuf>,
}

/// `cargo scaffold sessions …`.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List stored sessions, newest first
    #[command(after_help = "Examples:\n  \
        cargo scaffold sessions list\n  \
        cargo scaffold sessions list --tag eval:code-review --variant gpt-4o --status failed\n  \
        cargo scaffold sessions list --limit 0 --json")]
    List(SessionsListArgs),
    /// Show one session: metadata, lineage and signals
    #[command(
        after_help = "ID may be a unique prefix of the session id, or its end as `sessions list` shows it."
    )]
    Show(SessionsShowArgs),
    /// Write a session (metadata and signals) to a JSON file
    #[command(after_help = "Examples:\n  \
        cargo scaffold sessions export 3f2a9c1e -o evals/sessions/sql-injection.json\n  \
        cargo scaffold sessions export 3f2a9c1e --database shard-1.db > session.json")]
    Export(SessionsExportArgs),
    /// Load sessions exported with `sessions export` into the database
    #[command(
        after_help = "The database is created when missing. A session already in it is an error\n\
        (nothing of that file is imported).\n\n\
        Example:\n  \
        cargo scaffold sessions import evals/sessions/*.json --database review.db"
    )]
    Import(SessionsImportArgs),
}

/// `cargo scaffold runs …`.
#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// List the eval runs of the database, newest first
    #[command(
        after_help = "Each run of the harness is an eval run (a nextest run is one too, named by\n\
        NEXTEST_RUN_ID). Its id goes to `report --run`, `gate --run`, `score --run`,\n\
        `merge --run` and `run --resume`.\n\n\
        Example:\n  \
        cargo scaffold runs list --database shard-1.db"
    )]
    List(RunsListArgs),
}

/// `cargo scaffold view`.
#[derive(Debug, Args)]
pub struct ViewArgs {
    #[command(flatten)]
    pub db: DatabaseArg,
    /// The address to listen on (another than 127.0.0.1 shows the store to other machines)
    #[arg(long, value_name = "IP", default_value = "127.0.0.1")]
    pub host: String,
    /// The port (0: any free one)
    #[arg(long, value_name = "PORT", default_value_t = 7878)]
    pub port: u16,
    /// Open the page in the desktop's browser
    #[arg(long)]
    pub open: bool,
}

/// `cargo scaffold runs list`.
#[derive(Debug, Args)]
pub struct RunsListArgs {
    #[command(flatten)]
    pub db: DatabaseArg,
    /// At most this many, the newest (0: all)
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,
    /// Print JSON instead of the table
    #[arg(long)]
    pub json: bool,
}

/// `cargo scaffold sessions list`.
#[derive(Debug, Args)]
pub struct SessionsListArgs {
    #[command(flatten)]
    pub db: DatabaseArg,
    /// Only sessions with this tag (repeat: all of them), e.g. eval:code-review
    #[arg(long, value_name = "TAG")]
    pub tag: Vec<String>,
    /// Only sessions of this variant
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Only sessions with this status: running, completed, failed, terminated, interrupted
    #[arg(long, value_name = "STATUS")]
    pub status: Option<String>,
    /// Only sessions of this workflow
    #[arg(long, value_name = "NAME")]
    pub workflow: Option<String>,
    /// Only sessions forked from this one
    #[arg(long, value_name = "ID")]
    pub parent: Option<String>,
    /// At most this many, the newest (0: all)
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,
    /// Print JSON (one object per session) instead of the table
    #[arg(long)]
    pub json: bool,
}

/// `cargo scaffold sessions show`.
#[derive(Debug, Args)]
pub struct SessionsShowArgs {
    /// The session id, a unique prefix of it, or its end as `sessions list` shows it
    #[arg(value_name = "ID")]
    pub id: String,
    #[command(flatten)]
    pub db: DatabaseArg,
    /// Print JSON (session, lineage, children, signals) instead of text
    #[arg(long)]
    pub json: bool,
    /// Print signal payloads in full instead of cut to one line
    #[arg(long)]
    pub full: bool,
    /// Write the session's transcript as an HTML page to FILE (`-`: print it)
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-", conflicts_with = "json")]
    pub html: Option<PathBuf>,
}

/// `cargo scaffold sessions export`.
#[derive(Debug, Args)]
pub struct SessionsExportArgs {
    /// The session id, a unique prefix of it, or its end as `sessions list` shows it
    #[arg(value_name = "ID")]
    pub id: String,
    #[command(flatten)]
    pub db: DatabaseArg,
    /// The JSON file to write [default: stdout]
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `cargo scaffold sessions import`.
#[derive(Debug, Args)]
pub struct SessionsImportArgs {
    /// Files written by `sessions export`
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Session database file, created when missing [default: $SCAFFOLD_DATABASE, else target/scaffold/scaffold.db]
    #[arg(long, value_name = "PATH")]
    pub database: Option<PathBuf>,
}

/// `cargo scaffold fork`.
#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The parent session: an id (a unique prefix, or its end as `sessions list` shows it) of the database, or a file from `sessions export`
    #[arg(long, value_name = "ID|FILE.json")]
    pub from: String,
    /// Where to fork: index:N (or N), or phase:NAME:first|last|N
    #[arg(long, value_name = "POINT")]
    pub at: String,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `cargo scaffold score`.
#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// The dataset (YAML or JSON) whose assertions to apply
    #[arg(long, value_name = "FILE")]
    pub dataset: PathBuf,
    /// These sessions (ids, unique prefixes or ends as `sessions list` shows them; repeat or comma-separate)
    #[arg(long, value_name = "ID", value_delimiter = ',', conflicts_with_all = ["tag", "run"])]
    pub sessions: Vec<String>,
    /// Or the sessions with this tag (repeat: all of them)
    #[arg(long, value_name = "TAG", conflicts_with = "run")]
    pub tag: Vec<String>,
    /// Or the sessions of this eval run (an id, a unique prefix, or `latest`) [default: latest]
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
    /// Only sessions of this variant
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Grade every session with this case's assertions instead of its own case's
    #[arg(long, value_name = "ID")]
    pub case: Option<String>,
    /// Also grade with a built-in scorer (repeat): output-valid, latency=MAX,IDEAL, cost=MAX,IDEAL, tokens=MAX,IDEAL
    #[arg(long, value_name = "SCORER")]
    pub scorer: Vec<String>,
    #[command(flatten)]
    pub db: DatabaseArg,
    /// Print JSON (one report per session) instead of the table
    #[arg(long)]
    pub json: bool,
}

/// `cargo scaffold merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shards: session databases, results JSON files ({eval}.json) or directories of them
    #[arg(value_name = "SHARD", required = true)]
    pub shards: Vec<PathBuf>,
    /// Directory to write the merged {eval}.json (and the other formats) into
    #[arg(long, value_name = "DIR")]
    pub output: PathBuf,
    /// Of each database, only this eval run (an id or unique prefix) [default: every run in it]
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
    /// Formats: table (printed), json (always written), markdown, junit, html
    #[arg(long, value_name = "LIST", default_value = "table,json")]
    pub format: String,
}

/// `cargo scaffold validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Dataset files (YAML or JSON)
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
}
