//! Agents as teams already have them, on other frameworks, and the one
//! line each changes to be evaluated with scaffold: where its client
//! sends (`cx.openai_base_url(..)`, `cx.openai_api_key()`).
//!
//! - [`weather_rig`]: a weather assistant on rig (`rig-core` and
//!   `rig-agent`), its OpenAI client on the Responses API (rig's default),
//!   with two tools (`get_weather`, `to_fahrenheit`) and rig's own tool loop.
//! - [`trip_async_openai`]: a trip budget assistant on `async-openai`,
//!   chat completions with a tool loop written by hand (`convert_currency`,
//!   `daily_cost`).
//!
//! Both read their model, system prompt and temperature from the
//! variant's data, so the evals' variants are data, not code.

use scaffold::prelude::AgentCx;

pub mod prompts {
    //! The variants' system prompts.

    /// The weather assistant, terse.
    pub const WEATHER_TERSE: &str = "You are a weather assistant. Look the weather up with get_weather; answer in one sentence.";
    /// The weather assistant, friendly and thorough.
    pub const WEATHER_FRIENDLY: &str = "You are a friendly weather assistant. Always look the weather up with get_weather, \
         convert with to_fahrenheit when asked for Fahrenheit, and say what to wear.";
    /// The trip planner.
    pub const TRIP: &str = "You plan trip budgets. Use daily_cost for a city's daily cost in EUR and \
         convert_currency for other currencies. Give the total.";
}

pub mod trip {
    //! The trip budget assistant on async-openai.

    use async_openai::Client;
    use async_openai::config::OpenAIConfig;
    use async_openai::types::chat::{
        ChatCompletionMessageToolCalls, ChatCompletionRequestAssistantMessageArgs,
        ChatCompletionRequestMessage, ChatCompletionRequestSystemMessageArgs,
        ChatCompletionRequestToolMessageArgs, ChatCompletionRequestUserMessageArgs,
        ChatCompletionTool, ChatCompletionTools, CreateChatCompletionRequestArgs,
        FunctionObjectArgs,
    };
    use serde_json::{Value, json};

    use super::AgentCx;

    /// Rounds of tool calls before the agent gives up.
    const MAX_ROUNDS: usize = 6;

    /// Euros per unit of each currency the tool knows (a fixed table: the
    /// agent's tools are deterministic, as its recordings are).
    const RATES: &[(&str, f64)] = &[("EUR", 1.0), ("USD", 0.92), ("JPY", 0.0061), ("GBP", 1.17)];

    /// Average daily cost of a stay, in euros.
    const DAILY: &[(&str, f64)] = &[("Paris", 180.0), ("Tokyo", 150.0), ("Lisbon", 110.0)];

    fn tools() -> Result<Vec<ChatCompletionTools>, async_openai::error::OpenAIError> {
        let convert = FunctionObjectArgs::default()
            .name("convert_currency")
            .description("Convert an amount between currencies (EUR, USD, JPY, GBP)")
            .parameters(json!({
                "type": "object",
                "properties": {
                    "amount": {"type": "number"},
                    "from": {"type": "string"},
                    "to": {"type": "string"}
                },
                "required": ["amount", "from", "to"]
            }))
            .build()?;
        let daily = FunctionObjectArgs::default()
            .name("daily_cost")
            .description("The average daily cost of a stay in a city, in EUR")
            .parameters(json!({
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"]
            }))
            .build()?;
        Ok(vec![
            ChatCompletionTools::Function(ChatCompletionTool { function: convert }),
            ChatCompletionTools::Function(ChatCompletionTool { function: daily }),
        ])
    }

    /// Run one of the agent's tools.
    pub fn run_tool(name: &str, arguments: &str) -> Value {
        let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let rate = |code: &Value| {
            let code = code.as_str().unwrap_or_default().to_ascii_uppercase();
            RATES.iter().find(|(c, _)| *c == code).map(|(_, r)| *r)
        };
        match name {
            "convert_currency" => match (
                args["amount"].as_f64(),
                rate(&args["from"]),
                rate(&args["to"]),
            ) {
                (Some(amount), Some(from), Some(to)) => {
                    json!({"amount": (amount * from / to * 100.0).round() / 100.0, "currency": args["to"]})
                }
                _ => json!({"error": format!("cannot convert {args}")}),
            },
            "daily_cost" => {
                let city = args["city"].as_str().unwrap_or_default();
                match DAILY.iter().find(|(c, _)| c.eq_ignore_ascii_case(city)) {
                    Some((_, cost)) => json!({"city": city, "eur_per_day": cost}),
                    None => json!({"error": format!("no data for {city}")}),
                }
            }
            other => json!({"error": format!("unknown tool {other}")}),
        }
    }

    /// The agent: the question, answered with its tools. The one change
    /// for scaffold is the client's config (base URL and key from `cx`).
    pub async fn trip_async_openai(
        cx: AgentCx,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        let config = OpenAIConfig::new()
            .with_api_base(cx.openai_base_url("planner"))
            .with_api_key(cx.openai_api_key());
        let client = Client::with_config(config);
        let variant = cx.variant();
        let model = variant
            .model
            .clone()
            .unwrap_or_else(|| "gpt-4o-mini".into());
        let temperature = variant
            .get("temperature")
            .and_then(Value::as_f64)
            .unwrap_or(0.0) as f32;
        let mut messages: Vec<ChatCompletionRequestMessage> = vec![
            ChatCompletionRequestSystemMessageArgs::default()
                .content(variant.prompt.clone().unwrap_or_default())
                .build()?
                .into(),
            ChatCompletionRequestUserMessageArgs::default()
                .content(cx.input_text())
                .build()?
                .into(),
        ];
        let tools = tools()?;
        for _ in 0..MAX_ROUNDS {
            let request = CreateChatCompletionRequestArgs::default()
                .model(&model)
                .temperature(temperature)
                .messages(messages.clone())
                .tools(tools.clone())
                .build()?;
            let response = client.chat().create(request).await?;
            let message = response
                .choices
                .into_iter()
                .next()
                .ok_or("the model gave no choice")?
                .message;
            let calls = message.tool_calls.unwrap_or_default();
            if calls.is_empty() {
                return Ok(message.content.unwrap_or_default());
            }
            let mut assistant = ChatCompletionRequestAssistantMessageArgs::default();
            assistant.tool_calls(calls.clone());
            if let Some(content) = message.content {
                assistant.content(content);
            }
            messages.push(assistant.build()?.into());
            for call in calls {
                if let ChatCompletionMessageToolCalls::Function(call) = call {
                    let result = run_tool(&call.function.name, &call.function.arguments);
                    messages.push(
                        ChatCompletionRequestToolMessageArgs::default()
                            .tool_call_id(call.id)
                            .content(result.to_string())
                            .build()?
                            .into(),
                    );
                }
            }
        }
        Err(format!("still calling tools after {MAX_ROUNDS} rounds").into())
    }
}

pub mod weather {
    //! The weather assistant on rig.

    use rig_agent::prelude::*;
    use rig_core::providers::openai::OpenAIConfig;
    use rig_core::tool::ToolContext;
    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::AgentCx;

    /// Today's weather per city (the tool is deterministic).
    const WEATHER: &[(&str, &str, f64)] = &[
        ("Paris", "light rain", 14.0),
        ("Tokyo", "sunny", 22.0),
        ("Oslo", "snow", -3.0),
    ];

    #[derive(Deserialize)]
    pub struct CityArgs {
        city: String,
    }

    /// Today's weather in a city, in degrees Celsius.
    pub struct GetWeather;

    #[derive(Debug)]
    pub struct UnknownCity(String);

    impl std::fmt::Display for UnknownCity {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "no weather data for {}", self.0)
        }
    }

    impl std::error::Error for UnknownCity {}

    impl Tool for GetWeather {
        const NAME: &'static str = "get_weather";
        type Args = CityArgs;
        type Output = Value;
        type Error = UnknownCity;

        fn description(&self) -> String {
            "Today's weather in a city: conditions and temperature in degrees Celsius".into()
        }

        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
        }

        async fn call(&self, _cx: &mut ToolContext, args: CityArgs) -> Result<Value, UnknownCity> {
            WEATHER
                .iter()
                .find(|(city, _, _)| city.eq_ignore_ascii_case(&args.city))
                .map(|(city, sky, celsius)| json!({"city": city, "sky": sky, "celsius": celsius}))
                .ok_or(UnknownCity(args.city))
        }
    }

    #[derive(Deserialize)]
    pub struct CelsiusArgs {
        celsius: f64,
    }

    /// Degrees Celsius to Fahrenheit.
    pub struct ToFahrenheit;

    impl Tool for ToFahrenheit {
        const NAME: &'static str = "to_fahrenheit";
        type Args = CelsiusArgs;
        type Output = f64;
        type Error = std::convert::Infallible;

        fn description(&self) -> String {
            "Convert degrees Celsius to degrees Fahrenheit".into()
        }

        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]})
        }

        async fn call(
            &self,
            _cx: &mut ToolContext,
            args: CelsiusArgs,
        ) -> Result<f64, std::convert::Infallible> {
            Ok(((args.celsius * 9.0 / 5.0 + 32.0) * 10.0).round() / 10.0)
        }
    }

    /// The agent: rig's agent with two tools. The one change for scaffold
    /// is the client's base URL and key (from `cx`).
    pub async fn weather_rig(
        cx: AgentCx,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        let variant = cx.variant();
        let model = variant
            .model
            .clone()
            .unwrap_or_else(|| "gpt-4o-mini".into());
        let completion = OpenAIConfig::new(cx.openai_api_key())
            .with_base_url(cx.openai_base_url("forecaster"))
            .client()
            .completion(model);
        let agent = AgentBuilder::new(completion)
            .preamble(variant.prompt.as_deref().unwrap_or_default())
            .temperature(
                variant
                    .get("temperature")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0),
            )
            .tool(GetWeather)
            .tool(ToFahrenheit)
            .build();
        let response = agent.prompt(cx.input_text()).max_turns(5).await?;
        Ok(response.output().to_string())
    }
}

pub use trip::trip_async_openai;
pub use weather::weather_rig;
