//! Agents in any language: a program run once per case.

/// A program run as a bridged agent (placeholder; built next).
#[derive(Debug, Clone)]
pub struct AgentCommand;
