//! The workflow runtime: phases, loops, guards, tools, typed output, bounds.

use scaffold::prelude::*;
use scaffold::provider::ToolCall;
use scaffold::signal::Signal;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Plan {
    goal: String,
    plan: String,
    reviews: u32,
    approved: bool,
}

fn names(signals: &[Signal]) -> Vec<&str> {
    signals.iter().map(|s| s.name.as_str()).collect()
}

fn activated(signals: &[Signal]) -> Vec<String> {
    signals
        .iter()
        .filter(|s| s.name == "agent:activated")
        .map(|s| s.payload["agent"].as_str().unwrap().to_string())
        .collect()
}

/// planning → review → planning → review → done, decided from state.
fn planning_loop(reviews_needed: u32) -> Workflow<Plan> {
    let planner = Agent::<Plan>::new("planner")
        .provider(ScriptedProvider::responder("gpt-4o", |req| {
            ScriptedReply::text(format!("plan for: {}", req.messages[0].text()))
        }))
        .prompt(|s| s.goal.clone())
        .update(|text, s| s.plan = text)
        .emits("plan:ready");
    let reviewer = Agent::<Plan>::new("reviewer")
        .provider(ScriptedProvider::responder("claude-sonnet-4-5", |_| {
            ScriptedReply::text("needs work")
        }))
        .prompt(|s| format!("review {}", s.plan))
        .update(move |_, s| {
            s.reviews += 1;
            s.approved = s.reviews >= reviews_needed;
        })
        .emits("review:complete");
    Workflow::new("planning", Plan::default())
        .start(|input, s| s.goal = input["goal"].as_str().unwrap_or_default().to_string())
        .phase("planning", Phase::run(planner).next("review"))
        .phase(
            "review",
            Phase::run(reviewer).next_with(|s: &Plan| if s.approved { "done" } else { "planning" }),
        )
        .terminal("done")
}

#[tokio::test]
async fn loops_follow_dynamic_next() {
    let result = run(&planning_loop(2), json!({"goal": "todo api"})).await;
    assert_eq!(result.error, None);
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(
        activated(&result.signals),
        ["planner", "reviewer", "planner", "reviewer"]
    );
    assert_eq!(result.state.reviews, 2);
    assert!(result.state.approved);
    assert_eq!(result.state.plan, "plan for: todo api");
    // The second planning phase is occurrence 2, and the terminal phase is entered.
    let entered: Vec<(String, u64)> = result
        .signals
        .iter()
        .filter(|s| s.name == "phase:entered")
        .map(|s| {
            (
                s.payload["phase"].as_str().unwrap().to_string(),
                s.payload["occurrence"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        entered,
        [
            ("planning".into(), 1),
            ("review".into(), 1),
            ("planning".into(), 2),
            ("review".into(), 2),
            ("done".into(), 1)
        ]
    );
    // Triggers: the first activation by phase entry, later ones by the previous agent's signal.
    let triggers: Vec<&str> = result
        .signals
        .iter()
        .filter(|s| s.name == "agent:activated")
        .map(|s| s.payload["trigger"].as_str().unwrap())
        .collect();
    assert_eq!(
        triggers,
        [
            "phase:entered",
            "plan:ready",
            "review:complete",
            "plan:ready"
        ]
    );
    // Indices are dense and times never go back.
    for (i, s) in result.signals.iter().enumerate() {
        assert_eq!(s.index, i as u64);
    }
    assert!(result.signals.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
    assert_eq!(names(&result.signals).first(), Some(&"harness:start"));
    assert_eq!(names(&result.signals).last(), Some(&"harness:end"));
    assert_eq!(result.metrics.activations, 4);
    assert_eq!(result.output, Some(json!("needs work")));
}

#[tokio::test]
async fn state_changes_are_signalled_per_top_level_key() {
    let result = run(&planning_loop(1), json!({"goal": "g"})).await;
    let changes: Vec<(&str, Option<&str>)> = result
        .signals
        .iter()
        .filter(|s| s.name.starts_with("state:"))
        .map(|s| (s.name.as_str(), s.agent.as_deref()))
        .collect();
    assert_eq!(
        changes,
        [
            ("state:goal:changed", None),
            ("state:plan:changed", Some("planner")),
            ("state:approved:changed", Some("reviewer")),
            ("state:reviews:changed", Some("reviewer")),
        ]
    );
    let plan = result
        .signals
        .iter()
        .find(|s| s.name == "state:plan:changed")
        .unwrap();
    assert_eq!(plan.payload["oldValue"], json!(""));
    assert_eq!(plan.payload["newValue"], json!("plan for: g"));
}

#[tokio::test]
async fn runaway_loop_is_terminated() {
    let wf = planning_loop(u32::MAX).max_activations(5);
    let result = run(&wf, json!({"goal": "g"})).await;
    assert_eq!(result.status, RunStatus::Terminated);
    assert!(matches!(
        result.error,
        Some(scaffold::workflow::RunError::MaxActivations { limit: 5, .. })
    ));
    assert_eq!(activated(&result.signals).len(), 5);
    let terminating = result
        .signals
        .iter()
        .find(|s| s.name == "harness:terminating")
        .expect("harness:terminating");
    assert!(
        terminating.payload["reason"]
            .as_str()
            .unwrap()
            .contains("max activations (5)")
    );
    assert_eq!(terminating.payload["agent"], json!("reviewer"));
    assert_eq!(
        terminating.payload["state"]["reviews"],
        json!(2),
        "state at termination"
    );
    assert_eq!(names(&result.signals).last(), Some(&"harness:end"));
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Review {
    code: String,
    severity: String,
    fixed: Option<String>,
}

fn review_workflow(reviewer_reply: ScriptedReply) -> Workflow<Review> {
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Finding {
        severity: String,
    }
    let reviewer = Agent::<Review>::new("reviewer")
        .provider(ScriptedProvider::new("gpt-4o").reply(reviewer_reply))
        .prompt(|s| format!("Review: {}", s.code))
        .output(|f: Finding, s: &mut Review| s.severity = f.severity)
        .emits_with("review:complete", |s| json!({"severity": s.severity}));
    let fixer = Agent::<Review>::new("fixer")
        .provider(ScriptedProvider::new("gpt-4o").reply(ScriptedReply::text("fixed code")))
        .when_because(|s| s.severity != "none", "nothing to fix")
        .prompt(|s| format!("Fix: {}", s.code))
        .update(|text, s| s.fixed = Some(text));
    Workflow::new("review", Review::default())
        .start(|input, s| s.code = input.as_str().unwrap_or_default().into())
        .phase("review", Phase::run(reviewer).next("fix"))
        .phase("fix", Phase::run(fixer).next("done"))
        .terminal("done")
}

#[tokio::test]
async fn structured_output_is_parsed_and_sent_as_schema() {
    let wf = review_workflow(ScriptedReply::json(json!({"severity": "high"})));
    let result = run(&wf, json!("x = eval(input)")).await;
    assert_eq!(result.error, None);
    assert_eq!(result.state.severity, "high");
    assert_eq!(result.state.fixed.as_deref(), Some("fixed code"));
    let emitted = result
        .signals
        .iter()
        .find(|s| s.name == "review:complete")
        .unwrap();
    assert_eq!(
        emitted.payload,
        json!({"agent": "reviewer", "severity": "high"})
    );
    assert_eq!(emitted.agent.as_deref(), Some("reviewer"));
    let reviewer = wf
        .agent("reviewer")
        .unwrap()
        .provider_ref()
        .unwrap()
        .clone();
    let _ = reviewer; // schema sent is checked through the scripted provider below
}

#[tokio::test]
async fn schema_is_sent_to_the_provider() {
    let provider =
        ScriptedProvider::new("gpt-4o").reply(ScriptedReply::json(json!({"severity": "low"})));
    let wf = review_workflow(ScriptedReply::text("unused"))
        .with_agent("reviewer", |a| a.provider(provider.clone()));
    run(&wf, json!("code")).await;
    let requests = provider.requests();
    let schema = requests[0].output_schema.as_ref().expect("schema sent");
    assert_eq!(schema.name, "Finding");
    assert_eq!(
        schema.schema["properties"]["severity"]["type"],
        json!("string")
    );
}

#[tokio::test]
async fn unparsable_output_is_an_output_error() {
    let wf = review_workflow(ScriptedReply::text("I think it is fine"));
    let result = run(&wf, json!("code")).await;
    assert_eq!(result.status, RunStatus::Failed);
    let err = result.error.expect("error");
    assert!(err.to_string().contains("reviewer"), "{err}");
    assert!(err.to_string().contains("not JSON"), "{err}");
    let error = result
        .signals
        .iter()
        .find(|s| s.name == "error:output")
        .expect("error:output signal");
    assert_eq!(error.payload["agent"], json!("reviewer"));
    assert!(!names(&result.signals).contains(&"agent:completed"));
    assert_eq!(names(&result.signals).last(), Some(&"harness:end"));
}

#[tokio::test]
async fn wrong_shape_json_is_an_output_error() {
    let wf = review_workflow(ScriptedReply::json(json!({"sev": 1})));
    let result = run(&wf, json!("code")).await;
    assert!(names(&result.signals).contains(&"error:output"));
    assert!(result.error.unwrap().to_string().contains("severity"));
}

/// An agent whose structured answer is a [`Tally`]; the state's severity
/// shows what was read.
fn tally_workflow(reply: Value) -> Workflow<Review> {
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Tally {
        lines: u32,
        #[schemars(range(min = 1, max = 5))]
        stars: u8,
        #[serde(default)]
        retries: u32,
        note: Option<String>,
    }
    let counter = Agent::<Review>::new("counter")
        .provider(ScriptedProvider::new("gpt-4o").reply(ScriptedReply::json(reply)))
        .prompt(|s| format!("Count: {}", s.code))
        .output(|t: Tally, s: &mut Review| {
            s.severity = format!("{} {} {} {:?}", t.lines, t.stars, t.retries, t.note);
        });
    Workflow::new("tally", Review::default())
        .phase("count", Phase::run(counter).next("done"))
        .terminal("done")
}

#[tokio::test]
async fn an_answer_breaking_a_constraint_left_to_the_description_is_an_output_error() {
    // The provider forms of the schema only describe `minimum`/`maximum`;
    // the answer is still checked against them, naming field and keyword.
    for (answer, expected) in [
        (
            json!({"lines": -1, "stars": 3}),
            "/lines (minimum): -1 is less than the minimum of 0",
        ),
        (
            json!({"lines": 1, "stars": 9}),
            "/stars (maximum): 9 is greater than the maximum of 5",
        ),
    ] {
        let result = run(&tally_workflow(answer), json!("x")).await;
        assert_eq!(result.status, RunStatus::Failed);
        let err = result.error.expect("error").to_string();
        assert!(err.contains("agent `counter`"), "{err}");
        assert!(err.contains(expected), "{err}");
        assert!(names(&result.signals).contains(&"error:output"));
    }
}

#[tokio::test]
async fn strict_mode_nulls_for_absent_fields_read_as_absent() {
    // OpenAI's strict form makes every optional field nullable: the answer
    // carries `null` where the field was left out.
    let answer = json!({"lines": 7, "stars": 2, "retries": null, "note": null});
    let result = run(&tally_workflow(answer), json!("x")).await;
    assert_eq!(result.error, None);
    assert_eq!(result.state.severity, "7 2 0 None");
}

#[tokio::test]
async fn guard_false_skips_with_reason() {
    let wf = review_workflow(ScriptedReply::json(json!({"severity": "none"})));
    let result = run(&wf, json!("fine code")).await;
    assert_eq!(result.error, None);
    let skipped = result
        .signals
        .iter()
        .find(|s| s.name == "agent:skipped")
        .expect("agent:skipped");
    assert_eq!(skipped.payload["agent"], json!("fixer"));
    assert_eq!(skipped.payload["reason"], json!("nothing to fix"));
    assert_eq!(skipped.payload["trigger"], json!("review:complete"));
    assert_eq!(activated(&result.signals), ["reviewer"]);
    assert_eq!(result.state.fixed, None);
}

#[tokio::test]
async fn provider_error_fails_the_run_without_panic() {
    let wf = review_workflow(ScriptedReply::error("upstream exploded"));
    let result = run(&wf, json!("code")).await;
    assert_eq!(result.status, RunStatus::Failed);
    let n = names(&result.signals);
    assert!(n.contains(&"provider:error"));
    assert!(n.contains(&"error:provider"));
    assert!(
        result
            .error
            .unwrap()
            .to_string()
            .contains("upstream exploded")
    );
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ReadFile {
    path: String,
}

fn tool_agent(replies: Vec<ScriptedReply>, rounds: u32) -> (Workflow<Review>, ScriptedProvider) {
    let mut provider = ScriptedProvider::new("claude-sonnet-4-5");
    for r in replies {
        provider = provider.reply(r);
    }
    let read = Tool::new("read_file", "Read a file", |a: ReadFile| {
        if a.path == "secret" {
            Err("permission denied".to_string())
        } else {
            Ok(json!({"contents": format!("contents of {}", a.path)}))
        }
    });
    let agent = Agent::<Review>::new("coder")
        .provider(provider.clone())
        .prompt(|_| "read main.rs".into())
        .tool(read)
        .max_tool_rounds(rounds)
        .update(|t, s| s.fixed = Some(t));
    let wf = Workflow::new("tools", Review::default()).phase("code", Phase::run(agent));
    (wf, provider)
}

#[tokio::test]
async fn tool_loop_calls_tools_and_feeds_results_back() {
    let (wf, provider) = tool_agent(
        vec![
            ScriptedReply::tool_call("toolu_1", "read_file", json!({"path": "main.rs"})),
            ScriptedReply::ToolCalls {
                calls: vec![
                    ToolCall {
                        id: "toolu_2".into(),
                        name: "read_file".into(),
                        arguments: json!({"path": "secret"}),
                    },
                    ToolCall {
                        id: "toolu_3".into(),
                        name: "delete_all".into(),
                        arguments: json!({}),
                    },
                ],
                usage: Default::default(),
            },
            ScriptedReply::text("done reading"),
        ],
        8,
    );
    let result = run(&wf, Value::Null).await;
    assert_eq!(result.error, None);
    assert_eq!(result.state.fixed.as_deref(), Some("done reading"));
    let tool_results: Vec<(String, bool)> = result
        .signals
        .iter()
        .filter(|s| s.name == "tool:result")
        .map(|s| {
            (
                s.payload["result"].to_string(),
                s.payload["isError"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(tool_results.len(), 3);
    assert!(tool_results[0].0.contains("contents of main.rs") && !tool_results[0].1);
    assert!(tool_results[1].0.contains("permission denied") && tool_results[1].1);
    assert!(tool_results[2].0.contains("unknown tool `delete_all`") && tool_results[2].1);
    // The model saw the tool schema and then the results.
    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].tools[0].name, "read_file");
    assert_eq!(requests[0].tools[0].parameters["required"], json!(["path"]));
    assert_eq!(requests[1].messages.len(), 3);
    assert_eq!(requests[2].messages.len(), 5);
    assert_eq!(result.metrics.provider_calls, 3);
    assert_eq!(result.metrics.activations, 1);
    // Each provider:start shows the prompt for the transcript: all of it on
    // the first call, then what is new since the model's latest answer.
    let prompts: Vec<&Value> = result
        .signals
        .iter()
        .filter(|s| s.name == "provider:start")
        .map(|s| &s.payload["request"])
        .collect();
    assert_eq!(prompts.len(), 3);
    assert_eq!(prompts[0]["earlier"], 0);
    assert_eq!(prompts[0]["messages"][0]["role"], "user");
    assert!(
        prompts[0]["messages"][0]
            .to_string()
            .contains("read main.rs")
    );
    assert_eq!(prompts[1]["earlier"], 2);
    assert_eq!(prompts[1]["messages"].as_array().map(Vec::len), Some(1));
    assert!(
        prompts[1]["messages"]
            .to_string()
            .contains("contents of main.rs")
    );
    assert_eq!(prompts[2]["earlier"], 4);
}

#[tokio::test]
async fn tool_loop_is_bounded() {
    let replies = (0..10)
        .map(|i| ScriptedReply::tool_call(format!("c{i}"), "read_file", json!({"path": "a"})))
        .collect();
    let (wf, _) = tool_agent(replies, 2);
    let result = run(&wf, Value::Null).await;
    assert_eq!(result.status, RunStatus::Failed);
    assert!(names(&result.signals).contains(&"error:tool"));
    assert!(result.error.unwrap().to_string().contains("after 2 rounds"));
    assert_eq!(result.metrics.provider_calls, 3);
}

#[tokio::test]
async fn with_agent_leaves_the_original_intact() {
    let original = planning_loop(1);
    let variant = original
        .with_agent("planner", |a| {
            a.provider(ScriptedProvider::responder("claude-opus-4-5", |_| {
                ScriptedReply::text("opus plan")
            }))
        })
        .with_agent("reviewer", |a| {
            a.prompt(|s: &Plan| format!("strict review {}", s.plan))
        });
    assert_eq!(
        original
            .agent("planner")
            .unwrap()
            .provider_ref()
            .unwrap()
            .model(),
        "gpt-4o"
    );
    assert_eq!(
        variant
            .agent("planner")
            .unwrap()
            .provider_ref()
            .unwrap()
            .model(),
        "claude-opus-4-5"
    );
    let a = run(&original, json!({"goal": "g"})).await;
    let b = run(&variant, json!({"goal": "g"})).await;
    assert_eq!(a.state.plan, "plan for: g");
    assert_eq!(b.state.plan, "opus plan");
    // Unknown agent: the variant fails with a clear workflow error.
    let broken = original.with_agent("nobody", |a| a);
    assert!(broken.validate().unwrap_err()[0].contains("no agent `nobody`"));
    let r = run(&broken, json!({})).await;
    assert!(names(&r.signals).contains(&"error:workflow"));
    assert!(r.error.unwrap().to_string().contains("planner, reviewer"));
}

#[tokio::test]
async fn unknown_next_phase_is_a_workflow_error() {
    let agent = Agent::<Plan>::new("a").provider(ScriptedProvider::responder("m", |_| {
        ScriptedReply::text("x")
    }));
    let wf = Workflow::new("w", Plan::default())
        .phase("one", Phase::run(agent).next_with(|_| "nowhere"));
    let result = run(&wf, Value::Null).await;
    let err = result.error.unwrap().to_string();
    assert!(
        err.contains("`nowhere`") && err.contains("phases: one"),
        "{err}"
    );
}

#[tokio::test]
async fn streaming_emits_deltas_and_metrics_price_calls() {
    let agent = Agent::<Plan>::new("writer")
        .provider(
            ScriptedProvider::new("gpt-4o")
                .reply(ScriptedReply::streamed(["Hel", "lo"]).with_usage(1_000_000, 100_000)),
        )
        .stream(true)
        .update(|t, s| s.plan = t);
    let wf = Workflow::new("w", Plan::default()).phase("write", Phase::run(agent));
    let result = run(&wf, Value::Null).await;
    let deltas: Vec<&str> = result
        .signals
        .iter()
        .filter(|s| s.name == "text:delta")
        .map(|s| s.payload["content"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["Hel", "lo"]);
    assert!(names(&result.signals).contains(&"text:complete"));
    assert_eq!(result.state.plan, "Hello");
    assert_eq!(result.metrics.input_tokens, 1_000_000);
    assert_eq!(result.metrics.total_tokens, 1_100_000);
    assert!(
        (result.metrics.cost_usd - 3.5).abs() < 1e-9,
        "{}",
        result.metrics.cost_usd
    );
    // Overridden pricing.
    let cheap =
        Pricing::empty().with_model("gpt-4o", scaffold::provider::ModelPrice::per_mtok(1.0, 0.0));
    let wf2 = wf.with_agent("writer", |a| {
        a.provider(
            ScriptedProvider::new("gpt-4o")
                .reply(ScriptedReply::text("x").with_usage(1_000_000, 0)),
        )
    });
    let r = run_with(&wf2, Value::Null, &RunOptions::new().pricing(cheap)).await;
    assert!((r.metrics.cost_usd - 1.0).abs() < 1e-9);
}

#[tokio::test]
async fn run_time_limit_is_a_timeout_error() {
    struct Slow;
    #[async_trait::async_trait]
    impl Provider for Slow {
        fn name(&self) -> &str {
            "slow"
        }
        fn model(&self) -> &str {
            "slow-1"
        }
        async fn complete(
            &self,
            _: &scaffold::provider::CompletionRequest,
            _: &mut dyn scaffold::provider::StreamSink,
        ) -> Result<scaffold::provider::CompletionResponse, ProviderError> {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            Err(ProviderError::Scripted("unreachable".into()))
        }
    }
    let agent = Agent::<Plan>::new("slowpoke").provider(Slow);
    let wf = Workflow::new("w", Plan::default()).phase("p", Phase::run(agent));
    let opts = RunOptions::new().timeout(std::time::Duration::from_millis(50));
    let result = run_with(&wf, Value::Null, &opts).await;
    assert!(names(&result.signals).contains(&"error:timeout"));
    assert!(result.duration < std::time::Duration::from_secs(5));
}

#[tokio::test]
async fn runs_are_stored_and_failed_runs_keep_signals_and_error() {
    let store = Store::in_memory().unwrap();
    let ok = run_with(
        &planning_loop(1),
        json!({"goal": "g"}),
        &RunOptions::new()
            .store(store.clone())
            .variant("base")
            .tag("smoke"),
    )
    .await;
    let failed = run_with(
        &review_workflow(ScriptedReply::error("boom")),
        json!("code"),
        &RunOptions::new().store(store.clone()).tag("smoke"),
    )
    .await;
    store.flush().unwrap();

    let stored = store.signals(&ok.session_id).unwrap();
    assert_eq!(stored, ok.signals);
    let last = ok.signals.len() as u64 - 1;
    let folded = store.state_at(&ok.session_id, last).unwrap();
    assert_eq!(folded, serde_json::to_value(&ok.state).unwrap());
    let record = store.session(&ok.session_id).unwrap().unwrap();
    assert_eq!(record.meta.variant.as_deref(), Some("base"));

    let record = store.session(&failed.session_id).unwrap().unwrap();
    assert_eq!(record.status, scaffold::store::SessionStatus::Failed);
    assert!(record.error.as_deref().unwrap().contains("boom"));
    assert_eq!(store.signals(&failed.session_id).unwrap(), failed.signals);
    let tagged = store
        .list(&scaffold::store::SessionFilter::default().tag("smoke"))
        .unwrap();
    assert_eq!(tagged.len(), 2);
}

// ------------------------------------------------------------------ tools
// Tools that act: async, stateful, recorded (issue 27).

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Code {
    task: String,
    files: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct WriteFile {
    path: String,
    content: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Command {
    command: String,
}

/// A fresh directory of this test process, `name` telling the tests apart.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("scaffold-workflow-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// `Write`: adds a file to the state.
fn write_tool() -> Tool<Code> {
    Tool::stateful(
        "Write",
        "Write a file",
        |w: WriteFile, ctx: ToolContext<Code>| async move {
            ctx.update(|s| {
                s.files.insert(w.path.clone(), w.content);
            });
            Ok::<_, String>(format!("wrote {}", w.path))
        },
    )
}

/// `Bash`: writes the state's files into a fresh temporary directory and
/// runs a shell command there, off the runtime's threads.
fn bash_tool(root: std::path::PathBuf) -> Tool<Code> {
    Tool::stateful(
        "Bash",
        "Run a shell command",
        move |c: Command, ctx: ToolContext<Code>| {
            let dir = root.join(ctx.call_id());
            let files = ctx.read(|s| s.files.clone());
            async move {
                tokio::task::spawn_blocking(move || {
                    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
                    for (path, content) in &files {
                        std::fs::write(dir.join(path), content).map_err(|e| e.to_string())?;
                    }
                    let out = std::process::Command::new("sh")
                        .arg("-c")
                        .arg(&c.command)
                        .current_dir(&dir)
                        .output()
                        .map_err(|e| e.to_string())?;
                    let text = String::from_utf8_lossy(&out.stdout).into_owned();
                    if out.status.success() {
                        Ok(text)
                    } else {
                        Err(format!(
                            "exit {}: {}",
                            out.status,
                            String::from_utf8_lossy(&out.stderr)
                        ))
                    }
                })
                .await
                .map_err(|e| e.to_string())?
            }
        },
    )
    .timeout(std::time::Duration::from_secs(30))
}

fn coder(replies: Vec<ScriptedReply>, tools: Vec<Tool<Code>>) -> Workflow<Code> {
    let mut provider = ScriptedProvider::new("claude-sonnet-4-5");
    for r in replies {
        provider = provider.reply(r);
    }
    let mut agent = Agent::<Code>::new("coder")
        .provider(provider)
        .prompt(|s| s.task.clone());
    for t in tools {
        agent = agent.tool(t);
    }
    Workflow::new("code", Code::default()).phase("code", Phase::run(agent))
}

/// A `Write` tool changes the state through its context: the change is a
/// `state:files:changed` signal of the agent with the tool call's id,
/// between the call and its result, and the store's `state_at` sees it.
/// A `Bash` tool reads that state and runs a real command over it.
#[tokio::test]
async fn stateful_tools_change_the_state_and_say_which_call_did() {
    let root = scratch("bash");
    let wf = coder(
        vec![
            ScriptedReply::tool_call(
                "call_write",
                "Write",
                json!({"path": "utils.ts", "content": "export const add = (a, b) => a + b;\n"}),
            ),
            ScriptedReply::tool_call(
                "call_bash",
                "Bash",
                json!({"command": "ls && cat utils.ts"}),
            ),
            ScriptedReply::text("done"),
        ],
        vec![write_tool(), bash_tool(root.clone())],
    );
    let store = Store::in_memory().unwrap();
    let result = run_with(&wf, Value::Null, &RunOptions::new().store(store.clone())).await;
    assert_eq!(result.error, None);
    assert!(result.state.files.contains_key("utils.ts"));
    let order: Vec<&str> = names(&result.signals)
        .into_iter()
        .filter(|n| n.starts_with("tool:") || n.starts_with("state:files"))
        .collect();
    assert_eq!(
        order,
        [
            "tool:call",
            "state:files:changed",
            "tool:result",
            "tool:call",
            "tool:result"
        ]
    );
    let change = result
        .signals
        .iter()
        .find(|s| s.name == "state:files:changed")
        .unwrap();
    assert_eq!(change.agent.as_deref(), Some("coder"));
    assert_eq!(change.payload["toolCallId"], "call_write");
    assert_eq!(change.payload["agent"], "coder");
    let before = store
        .state_at(&result.session_id, change.index - 1)
        .unwrap();
    let after = store.state_at(&result.session_id, change.index).unwrap();
    assert_eq!(before["files"], json!({}));
    assert!(after["files"]["utils.ts"].as_str().unwrap().contains("add"));
    // The dataset assertions see it: after the Write call, not before.
    use scaffold::assert::{Assertion, EvalContext, evaluate};
    let verdict = |a: Value| {
        let a: Assertion = serde_json::from_value(a).unwrap();
        evaluate(&a, &EvalContext::new(&result.signals)).passed
    };
    let at = |signal: &str| json!({"type": "snapshot.at", "afterSignal": signal, "path": "files", "value": {"contains": "utils.ts"}});
    assert!(verdict(at("tool:result")));
    assert!(!verdict(at("tool:call")));
    assert!(verdict(
        json!({"type": "snapshot.final", "path": "files", "value": {"contains": "utils.ts"}})
    ));
    let bash = result
        .signals
        .iter()
        .filter(|s| s.name == "tool:result")
        .nth(1)
        .unwrap();
    assert_eq!(bash.payload["isError"], false, "{}", bash.payload);
    let out = bash.payload["result"].as_str().unwrap();
    assert!(
        out.contains("utils.ts") && out.contains("export const add"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(root);
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// Async tools wait without holding the runtime's thread: on one thread,
/// one run's tool waits for what another run's tool sends (a blocking tool
/// would deadlock). A tool past its timeout is a tool error for the model.
#[tokio::test]
async fn async_tools_wait_without_blocking_and_time_out_as_tool_errors() {
    let (tx, rx) = tokio::sync::oneshot::channel::<String>();
    let rx = std::sync::Arc::new(tokio::sync::Mutex::new(Some(rx)));
    let tx = std::sync::Arc::new(std::sync::Mutex::new(Some(tx)));
    let wait = Tool::new_async("wait", "Waits for a message", move |_: Nothing| {
        let rx = rx.clone();
        async move {
            let rx = rx.lock().await.take().ok_or("no receiver")?;
            rx.await.map_err(|e| e.to_string())
        }
    });
    let send = Tool::new("send", "Sends a message", move |_: Nothing| {
        let tx = tx.lock().unwrap().take().ok_or("no sender")?;
        tx.send("hello from the other run".into())
            .map_err(|_| "receiver gone".to_string())
            .map(|()| "sent")
    });
    let hang = Tool::new_async("hang", "Never answers", |_: Nothing| {
        std::future::pending::<Result<String, String>>()
    })
    .timeout(std::time::Duration::from_millis(50));
    let waiter = coder(
        vec![
            ScriptedReply::tool_call("c1", "wait", json!({})),
            ScriptedReply::tool_call("c2", "hang", json!({})),
            ScriptedReply::text("done"),
        ],
        vec![wait, hang],
    );
    let sender = coder(
        vec![
            ScriptedReply::tool_call("c1", "send", json!({})),
            ScriptedReply::text("done"),
        ],
        vec![send],
    );
    let both = async { tokio::join!(run(&waiter, Value::Null), run(&sender, Value::Null)) };
    let (a, b) = tokio::time::timeout(std::time::Duration::from_secs(20), both)
        .await
        .expect("a tool blocked the runtime");
    assert_eq!((a.error, b.error), (None, None));
    let results: Vec<&Value> = a
        .signals
        .iter()
        .filter(|s| s.name == "tool:result")
        .map(|s| &s.payload)
        .collect();
    assert_eq!(results[0]["result"], "hello from the other run");
    assert_eq!(results[1]["isError"], true);
    assert_eq!(results[1]["result"], "tool `hang` timed out after 50ms");
}

/// A recorded tool: record mode runs it and keeps its result (scrubbed of
/// keys); playback answers from the recording without running it, on the
/// recorded time; other arguments or no recording fail the run saying how
/// to re-record. Live mode runs it and keeps nothing.
#[tokio::test]
async fn recorded_tools_play_back_without_running() {
    use scaffold::provider::RecordingId;
    use scaffold::provider::recorder::{ProviderRecorder, RecorderMode};
    use scaffold::workflow::RecordingScope;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let dir = scratch("recorded-tools");
    let runs = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let fetch = Tool::new_async("fetch", "Fetches a page", move |c: Command| {
        counted.fetch_add(1, Ordering::SeqCst);
        async move {
            tokio::time::sleep(std::time::Duration::from_millis(30)).await;
            Ok::<_, String>(format!(
                "page for {} (token sk-proj-abcdefghijklmnop1234567890)",
                c.command
            ))
        }
    })
    .recorded();
    let wf = |arg: &str| {
        coder(
            vec![
                ScriptedReply::tool_call("c1", "fetch", json!({"command": arg})),
                ScriptedReply::text("done"),
            ],
            vec![fetch.clone()],
        )
    };
    let options = |mode, case: &str| {
        RunOptions::new()
            .recording(RecordingScope {
                dataset: "ds".into(),
                case: case.into(),
                variant: "v".into(),
                trial: None,
            })
            .virtual_time(mode == RecorderMode::Playback)
            .tool_recorder(ProviderRecorder::new(&dir, mode).tools())
    };
    let tool_result = |r: &RunResult<Code>| {
        r.signals
            .iter()
            .find(|s| s.name == "tool:result")
            .map(|s| (s.payload["result"].clone(), s.at_ms))
            .unwrap()
    };

    let recorded = run_with(
        &wf("docs"),
        Value::Null,
        &options(RecorderMode::Record, "c"),
    )
    .await;
    assert_eq!(recorded.error, None);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let id = RecordingId::new("ds", "c", "v", "coder.tool.fetch", 0);
    let file = dir.join(format!("{id}.json"));
    let text = std::fs::read_to_string(&file).expect("the tool's recording");
    assert!(!text.contains("sk-proj-abcdefghijklmnop"), "{text}");
    let kept: Value = serde_json::from_str(&text).unwrap();
    assert!(kept["durationMs"].as_u64().unwrap() >= 30);

    let played = run_with(
        &wf("docs"),
        Value::Null,
        &options(RecorderMode::Playback, "c"),
    )
    .await;
    assert_eq!(played.error, None);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "playback ran the tool");
    let (result, at_ms) = tool_result(&played);
    assert_eq!(result, kept["result"]);
    assert_eq!(at_ms, kept["durationMs"].as_u64().unwrap(), "recorded time");

    let stale = run_with(
        &wf("api"),
        Value::Null,
        &options(RecorderMode::Playback, "c"),
    )
    .await;
    let message = stale.error.expect("stale").to_string();
    assert!(
        message.contains(&format!("differs from recording `{id}`"))
            && message.contains("docs")
            && message.contains("api")
            && message.contains("SCAFFOLD_MODE=record"),
        "{message}"
    );
    let missing = run_with(
        &wf("docs"),
        Value::Null,
        &options(RecorderMode::Playback, "other"),
    )
    .await;
    let message = missing.error.expect("missing").to_string();
    assert!(
        message.contains("no recording") && message.contains("other"),
        "{message}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let live = run_with(
        &wf("docs"),
        Value::Null,
        &options(RecorderMode::Live, "live"),
    )
    .await;
    assert_eq!(live.error, None);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(
        !dir.join(format!(
            "{}.json",
            RecordingId::new("ds", "live", "v", "coder.tool.fetch", 0)
        ))
        .exists()
    );
    let _ = std::fs::remove_dir_all(dir);
}
