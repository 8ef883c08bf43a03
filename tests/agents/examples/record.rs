//! Re-records the framework agents' cassettes from scaffold's fake provider.
//!
//! `cargo run --manifest-path tests/agents/Cargo.toml --example record`
//!
//! Serves answers by rules (the case by its question, the turn by the tool
//! results the request sends back, the variant by its model) on the
//! Responses API for the rig agent and on chat completions for the
//! async-openai one, then runs `cargo test --test evals` in record mode
//! with the bridge's upstream pointed at the fake server. No key, no cost;
//! the fake keys set here never reach a file.

use std::process::Command;

use scaffold::testing::{Answer, Api, FakeProvider, FakeProviderServer, Rule};
use serde_json::{Value, json};

/// The weather assistant's answers: per case, the turns' rules, the last
/// answer per variant (terse gpt-4o-mini, friendly gpt-4.1-mini).
fn weather_rules() -> Vec<Rule> {
    let responses = || Rule::when().api(Api::Responses);
    let said = |terse: &str, friendly: &str, question: &str, result: &str| {
        [
            responses()
                .prompt_contains(question)
                .tool_result_contains(result)
                .model("gpt-4.1-mini")
                .then(Answer::text(friendly)),
            responses()
                .prompt_contains(question)
                .tool_result_contains(result)
                .then(Answer::text(terse)),
        ]
    };
    let look_up = |question: &str, city: &str| {
        responses()
            .prompt_contains(question)
            .then(Answer::tool_call("get_weather", json!({"city": city})))
    };
    let mut rules = Vec::new();
    rules.extend(said(
        "Sunny in Tokyo: 71.6°F.",
        "It's a sunny 71.6°F in Tokyo today, so a T-shirt will do.",
        "Tokyo",
        "71.6",
    ));
    rules.push(
        responses()
            .prompt_contains("Tokyo")
            .tool_result_contains("sunny")
            .then(Answer::tool_call("to_fahrenheit", json!({"celsius": 22}))),
    );
    rules.push(look_up("Tokyo", "Tokyo"));
    rules.extend(said(
        "Light rain in Paris, 14°C.",
        "It's 14°C with light rain in Paris: take an umbrella and a light jacket.",
        "Paris",
        "light rain",
    ));
    rules.push(look_up("Paris", "Paris"));
    rules.extend(said(
        "I have no weather data for Atlantis.",
        "Sorry, I have no weather data for Atlantis; try a real city!",
        "Atlantis",
        "",
    ));
    rules.push(look_up("Atlantis", "Atlantis"));
    rules
}

/// The trip planner's answers, the same for both models.
fn trip_rules() -> Vec<Rule> {
    let chat = || Rule::when().api(Api::OpenAi);
    vec![
        chat()
            .prompt_contains("week in Paris")
            .tool_result_contains("1369.57")
            .then(Answer::text(
                "A week in Paris costs about 1369.57 USD (7 days at 180 EUR, 1260 EUR).",
            )),
        chat()
            .prompt_contains("week in Paris")
            .tool_result_contains("eur_per_day")
            .then(Answer::tool_call(
                "convert_currency",
                json!({"amount": 1260, "from": "EUR", "to": "USD"}),
            )),
        chat()
            .prompt_contains("week in Paris")
            .then(Answer::tool_call("daily_cost", json!({"city": "Paris"}))),
        chat()
            .prompt_contains("Lisbon")
            .tool_result_contains("eur_per_day")
            .then(Answer::text(
                "Two days in Lisbon cost about 220 EUR (110 EUR a day).",
            )),
        chat()
            .prompt_contains("Lisbon")
            .then(Answer::tool_call("daily_cost", json!({"city": "Lisbon"}))),
    ]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = env!("CARGO_MANIFEST_DIR");
    let server = FakeProvider::builder()
        .rules(weather_rules())
        .rules(trip_rules())
        .start()
        .await?;
    let recordings = format!("{root}/evals/recordings");
    let _ = std::fs::remove_dir_all(&recordings);
    record(root, &server, "evals")?;
    // The Python agent needs the `openai` package (python/requirements.txt).
    record(root, &server, "python")?;
    println!("recorded into {recordings}");
    Ok(())
}

/// Run the test target `target` in record mode against `server`, and fail
/// on any cell that errored.
fn record(
    root: &str,
    server: &FakeProviderServer,
    target: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let output =
        std::env::temp_dir().join(format!("record-agents-{}-{target}", std::process::id()));
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["test", "--test", target])
        .env("SCAFFOLD_MODE", "record")
        .env("SCAFFOLD_OUTPUT", &output)
        .env("SCAFFOLD_FORMAT", "json")
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "sk-proj-recording-canary-0000")
        .env("INSTA_UPDATE", "always")
        .env("INSTA_FORCE_PASS", "1")
        .status()?;
    let written = std::fs::read_dir(&output)
        .map_err(|e| format!("recording {target} failed ({status}): no results: {e}"))?;
    for entry in written {
        let results: Value = serde_json::from_str(&std::fs::read_to_string(entry?.path())?)?;
        let cells = results["results"].as_array().cloned().unwrap_or_default();
        if let Some(cell) = cells.iter().find(|c| c["error"].is_string()) {
            return Err(format!(
                "recording failed: {}::{}::{} errored: {}",
                results["eval"], cell["variant"], cell["case"], cell["error"]
            )
            .into());
        }
    }
    let _ = std::fs::remove_dir_all(&output);
    println!("recorded {target} ({status})");
    Ok(())
}
