//! The root package's tests that can share one process, as modules of one
//! test binary (each binary links scaffold and the example suite: one link
//! instead of five). `evals` stays its own `harness = false` target.

mod cell_index;
mod ci_story;
mod code_generation;
#[path = "../common/mod.rs"]
mod common;
mod example_columns;
mod file_tools;
mod first_suite;
mod fixture;
mod graded;
mod harness;
mod resume;
mod schemas;
mod sharding;
