//! The example workflows of the scaffold repository, used by its own eval suite.

pub mod code_generation;
pub mod code_review;
pub mod debugging;
mod file_tools;
pub mod refactoring;
