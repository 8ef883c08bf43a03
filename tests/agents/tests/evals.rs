//! Agents built on other frameworks, evaluated through scaffold's agent
//! bridge: `cargo test --manifest-path tests/agents/Cargo.toml --test evals`.
//!
//! Each eval runs the team's own agent function (see `src/lib.rs`): the
//! only change the agent needed is its client's base URL and key, taken
//! from its `AgentCx`. Variants are data (model, prompt, temperature).
//! Calls are played back from `evals/recordings/`; re-record them from the
//! fake provider with
//! `cargo run --manifest-path tests/agents/Cargo.toml --example record`.

use scaffold::prelude::*;
use scaffold_agent_examples::prompts;

const RERECORD: &str = "cargo run --manifest-path tests/agents/Cargo.toml --example record";

/// rig's agent with two tools, on the OpenAI Responses API.
#[scaffold::eval(name = "weather-rig")]
fn weather_rig() -> Eval<AgentState> {
    Eval::new()
        .agent(scaffold_agent_examples::weather_rig)
        .rerecord_command(RERECORD)
        .scorer(scorer::cost(0.01, 0.001))
}

/// gpt-4o-mini, terse.
#[scaffold::variant(eval = "weather_rig", name = "terse")]
fn weather_terse() -> Variant {
    Variant::new()
        .model("gpt-4o-mini")
        .prompt(prompts::WEATHER_TERSE)
}

/// gpt-4.1-mini, friendly, a little warmer.
#[scaffold::variant(eval = "weather_rig", name = "friendly")]
fn weather_friendly() -> Variant {
    Variant::new()
        .model("gpt-4.1-mini")
        .prompt(prompts::WEATHER_FRIENDLY)
        .setting("temperature", 0.3)
}

#[scaffold::dataset(eval = "weather_rig")]
fn weather_cases() -> Result<Dataset, DatasetError> {
    dataset::load("evals/weather.yaml")
}

/// async-openai, chat completions, a tool loop written by hand.
#[scaffold::eval(name = "trip-async-openai")]
fn trip_async_openai() -> Eval<AgentState> {
    Eval::new()
        .agent(scaffold_agent_examples::trip_async_openai)
        .rerecord_command(RERECORD)
        .scorer(scorer::cost(0.01, 0.001))
}

#[scaffold::variant(eval = "trip_async_openai", name = "gpt-4o-mini")]
fn trip_mini() -> Variant {
    Variant::new().model("gpt-4o-mini").prompt(prompts::TRIP)
}

#[scaffold::variant(eval = "trip_async_openai", name = "gpt-4.1")]
fn trip_large() -> Variant {
    Variant::new().model("gpt-4.1").prompt(prompts::TRIP)
}

#[scaffold::dataset(eval = "trip_async_openai")]
fn trip_cases() -> Result<Dataset, DatasetError> {
    dataset::load("evals/trip.yaml")
}

scaffold::main!();
