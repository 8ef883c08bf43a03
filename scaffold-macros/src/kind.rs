//! The four attributes and the words their error messages use.

/// Which attribute is being expanded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Eval,
    Variant,
    Dataset,
    Scorer,
}

impl Kind {
    /// `#[eval]`, as the user writes it.
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Kind::Eval => "#[eval]",
            Kind::Variant => "#[variant]",
            Kind::Dataset => "#[dataset]",
            Kind::Scorer => "#[scorer]",
        }
    }

    /// Whether the attribute needs `eval = "..."`.
    pub(crate) fn needs_eval(self) -> bool {
        self != Kind::Eval
    }

    /// The keys the attribute takes, for "expected ..." in messages.
    pub(crate) fn expected_keys(self) -> &'static str {
        match self {
            Kind::Eval => "`name`",
            _ => "`eval` or `name`",
        }
    }

    /// What the function returns, in words.
    pub(crate) fn returns(self) -> &'static str {
        match self {
            Kind::Eval => "the eval",
            Kind::Variant => "the variant's workflow",
            Kind::Dataset => "the dataset(s)",
            Kind::Scorer => "the scorer",
        }
    }

    /// The signature the attribute expects, with the user's function name
    /// when there is one.
    pub(crate) fn example(self, name: Option<&str>) -> String {
        match self {
            Kind::Eval => format!("fn {}() -> Eval<State>", name.unwrap_or("code_review")),
            Kind::Variant => format!("fn {}() -> Workflow<State>", name.unwrap_or("gpt_4o")),
            Kind::Dataset => format!("fn {}() -> Dataset", name.unwrap_or("cases")),
            Kind::Scorer => format!("fn {}() -> impl Scorer<State>", name.unwrap_or("quality")),
        }
    }

    /// A complete attribute as an example, e.g. `#[variant(eval = "code_review")]`.
    pub(crate) fn attr_example(self) -> String {
        match self {
            Kind::Eval => "#[eval(name = \"code-review\")]".to_string(),
            _ => format!(
                "#[{}(eval = \"code_review\")]",
                self.attr().trim_start_matches("#[").trim_end_matches(']')
            ),
        }
    }
}
