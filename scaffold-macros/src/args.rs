//! The attribute's arguments: `eval = "path::to::eval_fn"` and `name = "..."`.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{Ident, LitStr, Path, Token};

use crate::kind::Kind;

/// What the attribute said.
pub(crate) struct Args {
    /// `eval = "..."`: the path to the `#[eval]` function (its marker type),
    /// with the string literal's span on every token.
    pub(crate) eval: Option<Path>,
    /// `name = "..."`.
    pub(crate) name: Option<LitStr>,
}

/// Parses the tokens inside `#[kind(...)]`.
pub(crate) fn parse(kind: Kind, tokens: TokenStream) -> syn::Result<Args> {
    let parser = |input: ParseStream| parse_stream(kind, input);
    parser.parse2(tokens)
}

fn parse_stream(kind: Kind, input: ParseStream) -> syn::Result<Args> {
    let mut eval: Option<Path> = None;
    let mut name: Option<LitStr> = None;
    let mut errors: Vec<syn::Error> = Vec::new();

    while !input.is_empty() {
        let mut entry = || -> syn::Result<()> {
            if !input.peek(Ident::peek_any) {
                let tt: TokenTree = input.parse()?;
                return Err(syn::Error::new(
                    tt.span(),
                    format!(
                        "expected `key = \"value\"` with key {}, e.g. `{}`",
                        kind.expected_keys(),
                        kind.attr_example()
                    ),
                ));
            }
            let key = input.call(Ident::parse_any)?;
            let key_str = key.unraw().to_string();
            let known = match key_str.as_str() {
                "name" => true,
                "eval" => kind.needs_eval(),
                _ => false,
            };
            if !input.peek(Token![=]) {
                let message = if known {
                    format!("expected `=` after `{key_str}`: `{key_str} = \"...\"`")
                } else {
                    unknown_key_message(kind, &key_str)
                };
                return Err(syn::Error::new(key.span(), message));
            }
            input.parse::<Token![=]>()?;
            let value = parse_value(input, &key_str);
            if !known {
                errors.push(syn::Error::new(
                    key.span(),
                    unknown_key_message(kind, &key_str),
                ));
            } else {
                match value {
                    Err(e) => errors.push(e),
                    Ok(None) => errors.push(syn::Error::new(
                        key.span(),
                        format!("missing value: `{key_str} = \"...\"`"),
                    )),
                    Ok(Some(_)) if key_str == "name" && name.is_some() => {
                        errors.push(duplicate(&key));
                    }
                    Ok(Some(_)) if key_str == "eval" && eval.is_some() => {
                        errors.push(duplicate(&key));
                    }
                    Ok(Some(value)) if key_str == "name" => {
                        if value.value().trim().is_empty() {
                            errors
                                .push(syn::Error::new(value.span(), "the name must not be empty"));
                        }
                        name = Some(value);
                    }
                    Ok(Some(value)) => match eval_path(&value) {
                        Ok(path) => eval = Some(path),
                        Err(e) => errors.push(e),
                    },
                }
            }
            if !input.is_empty() && !input.peek(Token![,]) {
                let tt: TokenTree = input.parse()?;
                return Err(syn::Error::new(
                    tt.span(),
                    "expected `,` between keys, e.g. `eval = \"code_review\", name = \"gpt-4o\"`",
                ));
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
            Ok(())
        };
        if let Err(e) = entry() {
            // No sensible way on from here: report what we have.
            errors.push(e);
            input.parse::<TokenStream>()?;
            break;
        }
    }

    if kind.needs_eval() && eval.is_none() && errors.is_empty() {
        errors.push(syn::Error::new(
            Span::call_site(),
            format!(
                "{} needs the eval it belongs to: `{}`",
                kind.attr(),
                kind.attr_example()
            ),
        ));
    }
    let mut errors = errors.into_iter();
    match errors.next() {
        Some(mut first) => {
            for e in errors {
                first.combine(e);
            }
            Err(first)
        }
        None => Ok(Args { eval, name }),
    }
}

fn unknown_key_message(kind: Kind, key: &str) -> String {
    let mut message = format!("unknown key `{key}`; expected {}", kind.expected_keys());
    if kind == Kind::Eval && key == "eval" {
        message.push_str(
            " (`eval = ...` belongs on #[variant], #[dataset] and #[scorer]; \
             #[eval] defines the eval)",
        );
    }
    message
}

fn duplicate(key: &Ident) -> syn::Error {
    syn::Error::new(key.span(), format!("`{}` is given twice", key.unraw()))
}

/// The value after `key =`: a string literal, `None` when there is nothing,
/// or an error that shows the string the user probably meant.
fn parse_value(input: ParseStream, key: &str) -> syn::Result<Option<LitStr>> {
    if input.peek(LitStr) {
        return input.parse().map(Some);
    }
    let mut tokens = TokenStream::new();
    while !input.is_empty() && !input.peek(Token![,]) {
        tokens.extend([input.parse::<TokenTree>()?]);
    }
    if tokens.is_empty() {
        return Ok(None);
    }
    let text: String = tokens
        .to_string()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let text = text.trim_matches('"');
    let example = if text.is_empty() || text.contains('"') {
        match key {
            "eval" => "code_review",
            _ => "gpt-4o",
        }
    } else {
        text
    };
    Err(syn::Error::new_spanned(
        tokens,
        format!("`{key}` takes a string literal: `{key} = \"{example}\"`"),
    ))
}

/// Parses `eval = "crate::evals::code_review"` as a path whose tokens carry
/// the literal's span, so "cannot find type" points at the user's string.
fn eval_path(lit: &LitStr) -> syn::Result<Path> {
    lit.parse_with(Path::parse_mod_style).map_err(|_| {
        let value = lit.value();
        let message = if value.trim().is_empty() {
            "`eval` is empty; it takes the path of the #[eval] function, e.g. \
             `eval = \"code_review\"` or `eval = \"crate::evals::code_review\"`"
                .to_string()
        } else if value.contains('-') {
            format!(
                "`{value}` is not a Rust path; `eval` takes the path of the #[eval] function, \
                 not the eval's name: `eval = \"{}\"`",
                value.trim().replace('-', "_")
            )
        } else {
            format!(
                "`{value}` is not a Rust path; `eval` takes the path of the #[eval] function, \
                 e.g. `eval = \"code_review\"` or `eval = \"crate::evals::code_review\"`"
            )
        };
        syn::Error::new(lit.span(), message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::{ToTokens, quote};

    fn ok(kind: Kind, tokens: TokenStream) -> Args {
        match parse(kind, tokens) {
            Ok(args) => args,
            Err(e) => panic!("unexpected error: {e}"),
        }
    }

    fn err(kind: Kind, tokens: TokenStream) -> String {
        match parse(kind, tokens) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e
                .into_iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    fn path_string(path: &Path) -> String {
        path.to_token_stream().to_string().replace(' ', "")
    }

    #[test]
    fn eval_takes_an_optional_name() {
        let args = ok(Kind::Eval, quote!());
        assert!(args.name.is_none() && args.eval.is_none());
        let args = ok(Kind::Eval, quote!(name = "code-review"));
        assert_eq!(args.name.unwrap().value(), "code-review");
        let args = ok(Kind::Eval, quote!(name = "code-review",));
        assert_eq!(args.name.unwrap().value(), "code-review");
    }

    #[test]
    fn variant_takes_eval_and_name_in_any_order() {
        let args = ok(Kind::Variant, quote!(eval = "code_review"));
        assert_eq!(path_string(&args.eval.unwrap()), "code_review");
        assert!(args.name.is_none());
        let args = ok(
            Kind::Variant,
            quote!(name = "gpt-4o", eval = "crate::evals::code_review"),
        );
        assert_eq!(
            path_string(&args.eval.unwrap()),
            "crate::evals::code_review"
        );
        assert_eq!(args.name.unwrap().value(), "gpt-4o");
        let args = ok(
            Kind::Scorer,
            quote!(eval = "super::code_review", name = "q"),
        );
        assert_eq!(path_string(&args.eval.unwrap()), "super::code_review");
        let args = ok(Kind::Dataset, quote!(r#eval = "::x::code_review"));
        assert_eq!(path_string(&args.eval.unwrap()), "::x::code_review");
    }

    #[test]
    fn unknown_keys_say_what_is_expected() {
        assert_eq!(
            err(Kind::Variant, quote!(evl = "code_review")),
            "unknown key `evl`; expected `eval` or `name`"
        );
        assert_eq!(
            err(Kind::Eval, quote!(title = "x")),
            "unknown key `title`; expected `name`"
        );
        assert!(
            err(Kind::Eval, quote!(eval = "x"))
                .starts_with("unknown key `eval`; expected `name` (`eval = ...` belongs on")
        );
        assert_eq!(
            err(Kind::Variant, quote!(type = "x", eval = "e")),
            "unknown key `type`; expected `eval` or `name`"
        );
        assert_eq!(
            err(Kind::Variant, quote!(evl)),
            "unknown key `evl`; expected `eval` or `name`"
        );
    }

    #[test]
    fn eval_is_required_except_on_eval() {
        for kind in [Kind::Variant, Kind::Dataset, Kind::Scorer] {
            let message = err(kind, quote!());
            assert!(
                message.starts_with(&format!("{} needs the eval it belongs to", kind.attr())),
                "{message}"
            );
            let message = err(kind, quote!(name = "x"));
            assert!(
                message.contains("needs the eval it belongs to"),
                "{message}"
            );
        }
        assert_eq!(
            err(Kind::Dataset, quote!()),
            "#[dataset] needs the eval it belongs to: `#[dataset(eval = \"code_review\")]`"
        );
    }

    #[test]
    fn values_must_be_string_literals() {
        assert_eq!(
            err(Kind::Variant, quote!(eval = code_review)),
            "`eval` takes a string literal: `eval = \"code_review\"`"
        );
        assert_eq!(
            err(Kind::Variant, quote!(eval = crate::evals::code_review)),
            "`eval` takes a string literal: `eval = \"crate::evals::code_review\"`"
        );
        assert_eq!(
            err(Kind::Eval, quote!(name = 42)),
            "`name` takes a string literal: `name = \"42\"`"
        );
        assert_eq!(
            err(Kind::Eval, quote!(name =)),
            "missing value: `name = \"...\"`"
        );
        assert_eq!(
            err(Kind::Eval, quote!(name)),
            "expected `=` after `name`: `name = \"...\"`"
        );
        assert_eq!(
            err(Kind::Variant, quote!(eval("code_review"))),
            "expected `=` after `eval`: `eval = \"...\"`"
        );
    }

    #[test]
    fn eval_must_be_a_path() {
        let message = err(Kind::Variant, quote!(eval = "code-review"));
        assert_eq!(
            message,
            "`code-review` is not a Rust path; `eval` takes the path of the #[eval] \
             function, not the eval's name: `eval = \"code_review\"`"
        );
        let message = err(Kind::Variant, quote!(eval = ""));
        assert!(
            message.starts_with("`eval` is empty; it takes the path of the #[eval] function, e.g."),
            "{message}"
        );
        let message = err(Kind::Variant, quote!(eval = "Vec<u8>"));
        assert!(
            message.starts_with("`Vec<u8>` is not a Rust path"),
            "{message}"
        );
    }

    #[test]
    fn other_mistakes() {
        assert_eq!(
            err(Kind::Eval, quote!(name = "")),
            "the name must not be empty"
        );
        assert_eq!(
            err(Kind::Eval, quote!(name = "a", name = "b")),
            "`name` is given twice"
        );
        assert_eq!(
            err(Kind::Variant, quote!(eval = "a" name = "b")),
            "expected `,` between keys, e.g. `eval = \"code_review\", name = \"gpt-4o\"`"
        );
        assert_eq!(
            err(Kind::Eval, quote!("code-review")),
            "expected `key = \"value\"` with key `name`, e.g. `#[eval(name = \"code-review\")]`"
        );
        // Several mistakes are reported together, also after a bad value.
        let message = err(Kind::Variant, quote!(eval = "a-b", name = gpt4, x = "y"));
        assert_eq!(message.lines().count(), 3, "{message}");
        assert!(
            message.contains("`name` takes a string literal"),
            "{message}"
        );
        assert!(message.contains("unknown key `x`"), "{message}");
        let message = err(Kind::Variant, quote!(evl = "a", nme = "b"));
        assert_eq!(
            message,
            "unknown key `evl`; expected `eval` or `name`\n\
             unknown key `nme`; expected `eval` or `name`"
        );
    }

    #[test]
    fn eval_paths_have_no_generic_arguments() {
        let lit = LitStr::new("a::b", Span::call_site());
        assert_eq!(eval_path(&lit).unwrap().segments.len(), 2);
        let lit = LitStr::new("a::<T>::b", Span::call_site());
        assert!(eval_path(&lit).is_err());
    }
}
