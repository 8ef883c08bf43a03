//! Reports of eval results.

pub mod table;
