//! Simulated answer times: what a fake server says its answers took,
//! without taking that long.

use std::time::Duration;

use serde_json::Value;

/// The response header in which the fake server states the timing it
/// simulated for an answer: `first-byte-ms=…; duration-ms=…`. Record mode
/// writes these times in the cassette in place of the measured ones (see
/// `scaffold::provider::recorder::SIMULATED_TIMING_HEADER`, the same
/// name). Real APIs never send it.
pub const SIMULATED_TIMING_HEADER: &str = "x-scaffold-simulated-timing";

/// Body fields that vary per run or per user (the recorder's default match
/// rules ignore them), left out of the seed.
const UNSEEDED_FIELDS: &[&str] = &["user", "metadata", "prompt_cache_key", "safety_identifier"];

/// How fast a model answers: its time to first byte and its time per
/// output token, before the seeded variation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSpeed {
    /// Time to first byte (the prompt read, the first token made).
    pub first_byte: Duration,
    /// Time per output token after the first byte.
    pub per_token: Duration,
}

impl ModelSpeed {
    /// A model that answers after `first_byte`, then takes `per_token` a
    /// token.
    pub const fn new(first_byte: Duration, per_token: Duration) -> ModelSpeed {
        ModelSpeed {
            first_byte,
            per_token,
        }
    }
}

/// A seeded model of answer times for [`FakeServerBuilder::simulated_timing`](super::FakeServerBuilder::simulated_timing).
///
/// Each answer's time to first byte and time per output token are its
/// model's [`ModelSpeed`] (found by the longest prefix of the model name),
/// each varied by a factor drawn from a seed made of the model and the
/// request body: the same request always gets the same times, another
/// request other times near its model's. A streamed answer's first byte
/// comes after the first-byte time and its end after the output tokens'
/// time more; a whole answer arrives, first byte and all, at the end.
/// The server does not wait: it states the times in
/// [`SIMULATED_TIMING_HEADER`], and record mode records them.
///
/// ```
/// use std::time::Duration;
/// use scaffold::testing::{ModelSpeed, SimulatedTiming};
///
/// let timing = SimulatedTiming::realistic().speed(
///     "my-model",
///     ModelSpeed::new(Duration::from_millis(300), Duration::from_millis(10)),
/// );
/// let body = br#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}"#;
/// let (first_byte, duration) = timing.timing("gpt-4o", body, 100, true);
/// assert_eq!(timing.timing("gpt-4o", body, 100, true), (first_byte, duration));
/// assert!(first_byte < duration);
/// let mini = timing.timing("gpt-4o-mini", body, 100, true);
/// assert!(mini.1 < duration, "gpt-4o-mini answers faster than gpt-4o");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimulatedTiming {
    /// Model name prefixes and their speeds.
    speeds: Vec<(String, ModelSpeed)>,
    /// The speed of a model no prefix names.
    fallback: ModelSpeed,
}

impl Default for SimulatedTiming {
    fn default() -> Self {
        SimulatedTiming::realistic()
    }
}

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

const fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

impl SimulatedTiming {
    /// Speeds near what the APIs' models show: the small models faster
    /// than the large, Claude's first byte later than GPT's.
    pub fn realistic() -> SimulatedTiming {
        let speeds = [
            ("gpt-4o-mini", ModelSpeed::new(ms(380), us(9_000))),
            ("gpt-4o", ModelSpeed::new(ms(520), us(14_000))),
            ("gpt-4.1-nano", ModelSpeed::new(ms(300), us(6_000))),
            ("gpt-4.1-mini", ModelSpeed::new(ms(400), us(10_000))),
            ("gpt-4.1", ModelSpeed::new(ms(560), us(15_000))),
            ("gpt-5-mini", ModelSpeed::new(ms(1_400), us(9_000))),
            ("gpt-5", ModelSpeed::new(ms(2_200), us(13_000))),
            ("o4-mini", ModelSpeed::new(ms(1_900), us(8_000))),
            ("o3", ModelSpeed::new(ms(3_000), us(14_000))),
            ("claude-haiku", ModelSpeed::new(ms(600), us(8_000))),
            ("claude-3-5-haiku", ModelSpeed::new(ms(650), us(9_000))),
            ("claude-sonnet", ModelSpeed::new(ms(1_100), us(17_000))),
            ("claude-3-7-sonnet", ModelSpeed::new(ms(1_200), us(18_000))),
            ("claude-opus", ModelSpeed::new(ms(1_800), us(30_000))),
            ("text-embedding", ModelSpeed::new(ms(120), us(0))),
        ];
        SimulatedTiming {
            speeds: speeds
                .into_iter()
                .map(|(prefix, speed)| (prefix.to_string(), speed))
                .collect(),
            fallback: ModelSpeed::new(ms(700), us(15_000)),
        }
    }

    /// Models whose name starts with `prefix` answer at `speed` (a longer
    /// prefix wins over a shorter one).
    pub fn speed(mut self, prefix: impl Into<String>, speed: ModelSpeed) -> SimulatedTiming {
        let prefix = prefix.into();
        self.speeds.retain(|(p, _)| *p != prefix);
        self.speeds.push((prefix, speed));
        self
    }

    /// Models no prefix names answer at `speed`.
    pub fn fallback(mut self, speed: ModelSpeed) -> SimulatedTiming {
        self.fallback = speed;
        self
    }

    /// The speed of `model`: the longest prefix's, else the fallback.
    fn speed_of(&self, model: &str) -> ModelSpeed {
        self.speeds
            .iter()
            .filter(|(prefix, _)| model.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map_or(self.fallback, |(_, speed)| *speed)
    }

    /// The simulated (first byte, duration) in ms of an answer of
    /// `output_tokens` tokens by `model` to the request `body`, `streamed`
    /// or whole.
    pub fn timing(
        &self,
        model: &str,
        body: &[u8],
        output_tokens: u64,
        streamed: bool,
    ) -> (u64, u64) {
        let speed = self.speed_of(model);
        let mut seed = fnv1a(model.as_bytes()) ^ fnv1a(seed_text(body).as_bytes());
        // The first byte varies more (queueing, prompt length) than the
        // pace of tokens once they flow.
        let first_factor = 750 + splitmix(&mut seed) % 601; // 0.75–1.35
        let token_factor = 900 + splitmix(&mut seed) % 251; // 0.90–1.15
        let first_us = micros(speed.first_byte) * first_factor / 1000;
        let tokens_us = micros(speed.per_token) * token_factor / 1000 * output_tokens;
        let first_byte = first_us.div_ceil(1000);
        let duration = (first_us + tokens_us).div_ceil(1000).max(first_byte);
        if streamed {
            (first_byte, duration)
        } else {
            (duration, duration)
        }
    }

    /// The [`SIMULATED_TIMING_HEADER`] of such an answer.
    pub(crate) fn header(
        &self,
        model: &str,
        body: &[u8],
        output_tokens: u64,
        streamed: bool,
    ) -> (String, String) {
        let (first_byte, duration) = self.timing(model, body, output_tokens, streamed);
        (
            SIMULATED_TIMING_HEADER.to_string(),
            format!("first-byte-ms={first_byte}; duration-ms={duration}"),
        )
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The request as seeded: its JSON without the fields that vary per run
/// (the raw bytes when it is not JSON).
fn seed_text(body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(mut fields)) => {
            for field in UNSEEDED_FIELDS {
                fields.remove(*field);
            }
            Value::Object(fields).to_string()
        }
        _ => String::from_utf8_lossy(body).into_owned(),
    }
}

/// FNV-1a, 64 bits: stable across runs, platforms and Rust versions.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The next number of a SplitMix64 sequence.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_seeded_by_model_and_request_and_ignore_per_run_fields() {
        let timing = SimulatedTiming::realistic();
        let a = br#"{"model":"gpt-4o","messages":[{"role":"user","content":"a"}]}"#;
        let a_user =
            br#"{"model":"gpt-4o","user":"run-7","messages":[{"role":"user","content":"a"}]}"#;
        let b = br#"{"model":"gpt-4o","messages":[{"role":"user","content":"b"}]}"#;
        assert_eq!(
            timing.timing("gpt-4o", a, 50, true),
            timing.timing("gpt-4o", a_user, 50, true)
        );
        assert_ne!(
            timing.timing("gpt-4o", a, 50, true),
            timing.timing("gpt-4o", b, 50, true)
        );
        let (first, duration) = timing.timing("gpt-4o", a, 50, true);
        // 520 ms ±, 14 ms a token ±.
        assert!((390..=702).contains(&first), "{first}");
        assert!(
            (first + 630..=first + 805).contains(&duration),
            "{duration}"
        );
        assert_eq!(timing.timing("gpt-4o", a, 50, false), (duration, duration));
    }

    #[test]
    fn the_longest_prefix_names_the_speed() {
        let timing = SimulatedTiming::realistic();
        assert_eq!(
            timing.speed_of("gpt-4o-mini-2024-07-18").first_byte,
            ms(380)
        );
        assert_eq!(timing.speed_of("gpt-4o-2024-08-06").first_byte, ms(520));
        assert_eq!(timing.speed_of("claude-sonnet-4-5").first_byte, ms(1_100));
        assert_eq!(timing.speed_of("llama3").first_byte, ms(700));
        let custom = timing.speed("llama", ModelSpeed::new(ms(90), us(1_000)));
        assert_eq!(custom.speed_of("llama3").first_byte, ms(90));
    }
}
