//! What the attributes expand to.
//!
//! Every expansion keeps the function as written and adds an
//! `inventory::submit!` of a registration from `scaffold::__private`. Paths
//! are absolute (`::scaffold::...`, `::core::...`, `::std::...`); the only
//! name added to the user's scope is `#[eval]`'s marker type, which has the
//! function's name and lives in the type namespace only.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{Ident, ItemFn, LitStr, Path, Type};

use crate::args::{self, Args};
use crate::item;
use crate::kind::Kind;

/// Expands `#[kind(args)] item`. Errors come back as `compile_error!`s next
/// to the unchanged item, so one mistake does not cascade into "cannot find
/// function" elsewhere.
pub(crate) fn expand(kind: Kind, args: TokenStream, item: TokenStream) -> TokenStream {
    let func = match item::parse(kind, item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let mut errors = e;
            if let Err(args_error) = args::parse(kind, args) {
                errors.combine(args_error);
            }
            let errors = errors.to_compile_error();
            return quote!(#item #errors);
        }
    };
    let mut errors: Vec<syn::Error> = Vec::new();
    let Args { eval, name } = args::parse(kind, args).unwrap_or_else(|e| {
        errors.push(e);
        Args {
            eval: None,
            name: None,
        }
    });
    errors.extend(item::check_signature(kind, &func));
    let name = name.unwrap_or_else(|| default_name(&func.sig.ident));

    let mut out = quote!(#func);
    match kind {
        Kind::Eval => {
            // The marker goes out even when something else is wrong, so the
            // variants naming this eval do not add "cannot find type" errors.
            match item::eval_return_type(&func) {
                // With generics the return type may name parameters the
                // marker does not have; the error about generics suffices.
                Ok(_) if !func.sig.generics.params.is_empty() => {}
                Ok(ty) => out.extend(eval_marker(&func, ty, &name)),
                Err(e) => {
                    if !matches!(func.sig.output, syn::ReturnType::Default) {
                        errors.push(e);
                    }
                }
            }
            if errors.is_empty() {
                out.extend(eval_submit(&func, &name));
            }
        }
        _ => {
            if let (true, Some(path)) = (errors.is_empty(), &eval) {
                out.extend(match kind {
                    Kind::Variant => variant_submit(&func, path, &name),
                    Kind::Dataset => dataset_submit(&func, path, &name),
                    _ => scorer_submit(&func, path, &name),
                });
            }
        }
    }
    for e in errors {
        out.extend(e.to_compile_error());
    }
    out
}

/// The function's name as a string, `r#` removed, at the function's name.
fn default_name(ident: &Ident) -> LitStr {
    LitStr::new(&ident.unraw().to_string(), ident.span())
}

/// `file!()` and `line!()` of the registration.
fn location(func: &ItemFn) -> TokenStream {
    let span = func.sig.ident.span();
    quote_spanned! {span=>
        file: ::core::file!(),
        line: ::core::line!(),
    }
}

/// The marker type beside an `#[eval]` function, and its `EvalDef` impl.
///
/// The marker is generic over the eval's type with the function's return
/// type as the default, so `code_review` in a type position means
/// `code_review<Eval<State>>`. The `EvalDef` impl is generic and never names
/// the state: an associated type of a trait impl may not be less visible
/// than the impl (E0446, a hard error), and the marker has the function's
/// visibility while the state is often private to the crate root.
fn eval_marker(func: &ItemFn, ty: &Type, name: &LitStr) -> TokenStream {
    let vis = &func.vis;
    let ident = &func.sig.ident;
    let param = Ident::new("__ScaffoldEval", Span::mixed_site());
    quote! {
        #[doc(hidden)]
        #[allow(
            non_camel_case_types,
            dead_code,
            missing_docs,
            unreachable_pub,
            private_interfaces,
            private_bounds,
            clippy::exhaustive_structs
        )]
        #vis struct #ident<#param = #ty> {
            __scaffold_eval: ::core::marker::PhantomData<fn() -> #param>,
        }

        impl<#param: ::scaffold::__private::EvalOutput> ::scaffold::__private::EvalDef
            for #ident<#param>
        {
            type State = <#param as ::scaffold::__private::EvalOutput>::State;
            const NAME: &'static ::core::primitive::str = #name;
        }
    }
}

fn eval_submit(func: &ItemFn, name: &LitStr) -> TokenStream {
    let ident = &func.sig.ident;
    let location = location(func);
    let build = quote_spanned! {ident.span()=>
        ::scaffold::__private::erase(#ident())
    };
    quote! {
        ::scaffold::__private::inventory::submit! {
            ::scaffold::__private::EvalRegistration {
                name: #name,
                #location
                build: || #build,
            }
        }
    }
}

/// `<path as EvalDef>`, spanned at the user's `eval = "..."` string.
fn eval_def(path: &Path) -> TokenStream {
    let span = path
        .segments
        .first()
        .map(|s| s.ident.span())
        .unwrap_or_else(Span::call_site);
    quote_spanned! {span=> <#path as ::scaffold::__private::EvalDef> }
}

fn variant_submit(func: &ItemFn, path: &Path, name: &LitStr) -> TokenStream {
    let ident = &func.sig.ident;
    let def = eval_def(path);
    let location = location(func);
    let workflow = Ident::new("workflow", Span::mixed_site());
    let call = quote_spanned! {ident.span()=>
        ::scaffold::__private::IntoVariant::<#def::State>::into_workflow(#ident())
    };
    quote! {
        ::scaffold::__private::inventory::submit! {
            ::scaffold::__private::VariantRegistration {
                eval: #def::NAME,
                name: #name,
                #location
                build: || {
                    let #workflow: ::scaffold::workflow::Workflow<#def::State> = #call;
                    ::std::boxed::Box::new(#workflow)
                },
            }
        }
    }
}

fn dataset_submit(func: &ItemFn, path: &Path, name: &LitStr) -> TokenStream {
    let ident = &func.sig.ident;
    let def = eval_def(path);
    let location = location(func);
    let build = quote_spanned! {ident.span()=>
        ::scaffold::__private::IntoDatasets::into_datasets(#ident())
    };
    quote! {
        ::scaffold::__private::inventory::submit! {
            ::scaffold::__private::DatasetRegistration {
                eval: #def::NAME,
                name: #name,
                #location
                build: || #build,
            }
        }
    }
}

fn scorer_submit(func: &ItemFn, path: &Path, name: &LitStr) -> TokenStream {
    let ident = &func.sig.ident;
    let def = eval_def(path);
    let location = location(func);
    let scorer = Ident::new("scorer", Span::mixed_site());
    let call = quote_spanned! {ident.span()=> ::std::sync::Arc::new(#ident()) };
    quote! {
        ::scaffold::__private::inventory::submit! {
            ::scaffold::__private::ScorerRegistration {
                eval: #def::NAME,
                name: #name,
                #location
                build: || {
                    let #scorer: ::std::sync::Arc<dyn ::scaffold::scorer::Scorer<#def::State>> =
                        #call;
                    ::std::boxed::Box::new(#scorer)
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(kind: Kind, args: TokenStream, item: TokenStream) -> String {
        expand(kind, args, item).to_string()
    }

    fn squash(s: &str) -> String {
        s.chars().filter(|c| !c.is_whitespace()).collect()
    }

    #[test]
    fn eval_expansion() {
        let out = expand_str(
            Kind::Eval,
            quote!(name = "code-review"),
            quote!(
                pub(crate) fn code_review() -> Eval<State> {
                    Eval::new()
                }
            ),
        );
        let out = squash(&out);
        assert!(
            out.starts_with("pub(crate)fncode_review()->Eval<State>{Eval::new()}"),
            "{out}"
        );
        assert!(
            out.contains("pub(crate)structcode_review<__ScaffoldEval=Eval<State>>{__scaffold_eval:::core::marker::PhantomData<fn()->__ScaffoldEval>,}"),
            "{out}"
        );
        assert!(out.contains(
            "impl<__ScaffoldEval:::scaffold::__private::EvalOutput>::scaffold::__private::EvalDefforcode_review<__ScaffoldEval>{typeState=<__ScaffoldEvalas::scaffold::__private::EvalOutput>::State;constNAME:&'static::core::primitive::str=\"code-review\";}"
        ), "{out}");
        assert!(out.contains("::scaffold::__private::inventory::submit!{::scaffold::__private::EvalRegistration{name:\"code-review\",file:::core::file!(),line:::core::line!(),build:||::scaffold::__private::erase(code_review()),}}"), "{out}");
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn eval_name_defaults_to_the_function_name_without_raw_prefix() {
        let out = squash(&expand_str(
            Kind::Eval,
            quote!(),
            quote!(
                fn r#match() -> Eval<State> {
                    todo!()
                }
            ),
        ));
        assert!(out.contains("name:\"match\""), "{out}");
        assert!(out.contains("structr#match<"), "{out}");
    }

    #[test]
    fn variant_expansion() {
        let out = squash(&expand_str(
            Kind::Variant,
            quote!(eval = "crate::evals::code_review"),
            quote!(
                fn gpt_4o() -> Workflow<State> {
                    base()
                }
            ),
        ));
        assert!(
            out.starts_with("fngpt_4o()->Workflow<State>{base()}"),
            "{out}"
        );
        assert!(out.contains("eval:<crate::evals::code_reviewas::scaffold::__private::EvalDef>::NAME,name:\"gpt_4o\","), "{out}");
        // A workflow or a bridged agent's `Variant` data, made one.
        assert!(out.contains("letworkflow:::scaffold::workflow::Workflow<<crate::evals::code_reviewas::scaffold::__private::EvalDef>::State>=::scaffold::__private::IntoVariant::<<crate::evals::code_reviewas::scaffold::__private::EvalDef>::State>::into_workflow(gpt_4o());::std::boxed::Box::new(workflow)"), "{out}");
    }

    #[test]
    fn dataset_and_scorer_expansions() {
        let out = squash(&expand_str(
            Kind::Dataset,
            quote!(eval = "code_review", name = "smoke"),
            quote!(
                fn cases() -> Dataset {
                    todo!()
                }
            ),
        ));
        assert!(out.contains("::scaffold::__private::DatasetRegistration{eval:<code_reviewas::scaffold::__private::EvalDef>::NAME,name:\"smoke\","), "{out}");
        assert!(
            out.contains("build:||::scaffold::__private::IntoDatasets::into_datasets(cases()),"),
            "{out}"
        );

        let out = squash(&expand_str(
            Kind::Scorer,
            quote!(eval = "code_review"),
            quote!(
                fn quality() -> impl Scorer<State> {
                    todo!()
                }
            ),
        ));
        assert!(out.contains("letscorer:::std::sync::Arc<dyn::scaffold::scorer::Scorer<<code_reviewas::scaffold::__private::EvalDef>::State>>=::std::sync::Arc::new(quality());::std::boxed::Box::new(scorer)"), "{out}");
    }

    #[test]
    fn errors_keep_the_item_and_register_nothing() {
        let out = expand_str(
            Kind::Variant,
            quote!(evl = "code_review"),
            quote!(
                fn gpt_4o(x: u8) -> Workflow<State> {
                    base()
                }
            ),
        );
        assert!(out.contains("fn gpt_4o"), "{out}");
        assert!(!out.contains("submit"), "{out}");
        assert!(out.contains("unknown key `evl`"), "{out}");
        assert!(out.contains("take no arguments"), "{out}");
        assert_eq!(out.matches("compile_error").count(), 2, "{out}");
    }

    #[test]
    fn a_broken_eval_still_gets_its_marker() {
        let out = expand_str(
            Kind::Eval,
            quote!(),
            quote!(
                async fn code_review() -> Eval<State> {
                    todo!()
                }
            ),
        );
        assert!(out.contains("struct code_review"), "{out}");
        assert!(!out.contains("submit"), "{out}");
        assert!(out.contains("cannot be async"), "{out}");
    }

    #[test]
    fn a_generic_eval_gets_no_marker() {
        let out = expand_str(
            Kind::Eval,
            quote!(),
            quote!(
                fn code_review<S>() -> Eval<S> {
                    todo!()
                }
            ),
        );
        assert!(!out.contains("struct"), "{out}");
        assert!(out.contains("cannot be generic"), "{out}");
    }

    #[test]
    fn attribute_on_a_struct() {
        let out = expand_str(
            Kind::Eval,
            quote!(),
            quote!(
                struct CodeReview;
            ),
        );
        assert!(out.starts_with("struct CodeReview ;"), "{out}");
        assert!(out.contains("#[eval] goes on a function"), "{out}");
    }
}
