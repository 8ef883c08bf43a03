//! A Python agent on the official `openai` package, run as a program per
//! cell through scaffold's agent bridge (`python/weather.py`: it changed
//! nothing to be evaluated; `OpenAI()` reads the bridge's URL and key from
//! its environment).
//!
//! `pip install -r tests/agents/python/requirements.txt`, then
//! `cargo test --manifest-path tests/agents/Cargo.toml --test python`
//! (not part of a plain `cargo test`: it needs the package).

use scaffold::prelude::*;
use scaffold_agent_examples::prompts;

/// The Python interpreter: `SCAFFOLD_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("SCAFFOLD_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

#[scaffold::eval(name = "weather-python")]
fn weather_python() -> Eval<AgentState> {
    Eval::new()
        .command(AgentCommand::new(python()).arg("python/weather.py"))
        .rerecord_command("cargo run --manifest-path tests/agents/Cargo.toml --example record")
}

#[scaffold::variant(eval = "weather_python", name = "terse")]
fn terse() -> Variant {
    Variant::new()
        .model("gpt-4o-mini")
        .prompt(prompts::WEATHER_TERSE)
}

#[scaffold::variant(eval = "weather_python", name = "friendly")]
fn friendly() -> Variant {
    Variant::new()
        .model("gpt-4.1-mini")
        .prompt(prompts::WEATHER_FRIENDLY)
}

#[scaffold::dataset(eval = "weather_python")]
fn cases() -> Result<Dataset, DatasetError> {
    dataset::load("evals/python-weather.yaml")
}

scaffold::main!();
