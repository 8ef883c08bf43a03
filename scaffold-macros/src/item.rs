//! The annotated item: it must be a plain function with no parameters that
//! returns something.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{GenericArgument, Item, ItemFn, PathArguments, ReturnType, Type};

use crate::kind::Kind;

/// The function the attribute is on, or an error at the item's head when it
/// is on something else.
pub(crate) fn parse(kind: Kind, tokens: TokenStream) -> syn::Result<ItemFn> {
    let item: Item = syn::parse2(tokens)?;
    match item {
        Item::Fn(f) => Ok(f),
        other => Err(syn::Error::new_spanned(
            head(&other),
            format!(
                "{} goes on a function: `{}`",
                kind.attr(),
                kind.example(None)
            ),
        )),
    }
}

/// The first words of an item (`struct Foo`, `impl Foo`, `mod m`), so the
/// error does not underline a whole block.
fn head(item: &Item) -> TokenStream {
    match item {
        Item::Struct(i) => {
            let (token, ident) = (&i.struct_token, &i.ident);
            quote!(#token #ident)
        }
        Item::Enum(i) => {
            let (token, ident) = (&i.enum_token, &i.ident);
            quote!(#token #ident)
        }
        Item::Union(i) => {
            let (token, ident) = (&i.union_token, &i.ident);
            quote!(#token #ident)
        }
        Item::Trait(i) => {
            let (token, ident) = (&i.trait_token, &i.ident);
            quote!(#token #ident)
        }
        Item::Impl(i) => {
            let (token, ty) = (&i.impl_token, &i.self_ty);
            quote!(#token #ty)
        }
        Item::Mod(i) => {
            let (token, ident) = (&i.mod_token, &i.ident);
            quote!(#token #ident)
        }
        Item::Const(i) => {
            let (token, ident) = (&i.const_token, &i.ident);
            quote!(#token #ident)
        }
        Item::Static(i) => {
            let (token, ident) = (&i.static_token, &i.ident);
            quote!(#token #ident)
        }
        Item::Type(i) => {
            let (token, ident) = (&i.type_token, &i.ident);
            quote!(#token #ident)
        }
        other => other.to_token_stream(),
    }
}

/// Everything wrong with the function's signature, each at its own tokens.
pub(crate) fn check_signature(kind: Kind, f: &ItemFn) -> Vec<syn::Error> {
    let sig = &f.sig;
    let name = sig.ident.to_string();
    let example = kind.example(Some(&name));
    let attr = kind.attr();
    let mut errors = Vec::new();
    if let Some(token) = &sig.asyncness {
        errors.push(syn::Error::new_spanned(
            token,
            format!(
                "{attr} functions cannot be async: `{example}`; the harness runs what it returns"
            ),
        ));
    }
    if let Some(token) = &sig.unsafety {
        errors.push(syn::Error::new_spanned(
            token,
            format!("{attr} functions cannot be unsafe: `{example}`"),
        ));
    }
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            format!("{attr} functions cannot be generic: `{example}`"),
        ));
    } else if let Some(clause) = &sig.generics.where_clause {
        errors.push(syn::Error::new_spanned(
            clause,
            format!("{attr} functions cannot have a where clause: `{example}`"),
        ));
    }
    if !sig.inputs.is_empty() {
        errors.push(syn::Error::new_spanned(
            &sig.inputs,
            format!("{attr} functions take no arguments: `{example}`"),
        ));
    } else if let Some(dots) = &sig.variadic {
        errors.push(syn::Error::new_spanned(
            dots,
            format!("{attr} functions take no arguments: `{example}`"),
        ));
    }
    if let ReturnType::Default = sig.output {
        let (fn_token, ident) = (&sig.fn_token, &sig.ident);
        errors.push(syn::Error::new_spanned(
            quote!(#fn_token #ident),
            format!(
                "{attr} functions must return {}: `{example}`",
                kind.returns()
            ),
        ));
    }
    errors
}

/// The return type of an `#[eval]` function: `Eval<S>` under any path, or a
/// plain name (a type alias; the `EvalOutput` projection checks it).
/// Anything else is an error at the return type.
pub(crate) fn eval_return_type(f: &ItemFn) -> syn::Result<&Type> {
    let ReturnType::Type(_, ty) = &f.sig.output else {
        // Reported by `check_signature`.
        return Err(syn::Error::new_spanned(&f.sig.ident, "missing return type"));
    };
    let mut inner: &Type = ty;
    while let Type::Paren(p) = inner {
        inner = &p.elem;
    }
    if let Type::Group(g) = inner {
        inner = &g.elem;
    }
    let acceptable = match inner {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last();
            match last {
                Some(seg) if seg.ident == "Eval" => match &seg.arguments {
                    PathArguments::AngleBracketed(a) => {
                        a.args.len() == 1 && matches!(a.args[0], GenericArgument::Type(_))
                    }
                    _ => false,
                },
                Some(seg) => seg.arguments.is_none(),
                None => false,
            }
        }
        _ => false,
    };
    if acceptable {
        Ok(ty)
    } else {
        Err(syn::Error::new_spanned(
            ty,
            format!(
                "#[eval] functions return `Eval<State>`, the eval's builder: `{}`",
                Kind::Eval.example(Some(&f.sig.ident.to_string()))
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_fn(tokens: TokenStream) -> ItemFn {
        syn::parse2(tokens).unwrap()
    }

    fn messages(errors: Vec<syn::Error>) -> Vec<String> {
        errors.into_iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn a_plain_function_passes() {
        let f = parse_fn(quote!(
            pub fn gpt_4o() -> Workflow<State> {
                base()
            }
        ));
        assert!(check_signature(Kind::Variant, &f).is_empty());
        let f = parse_fn(quote!(
            const fn cases() -> Dataset {
                todo!()
            }
        ));
        assert!(check_signature(Kind::Dataset, &f).is_empty());
    }

    #[test]
    fn non_functions_are_rejected() {
        let e = match parse(
            Kind::Eval,
            quote!(
                struct CodeReview;
            ),
        ) {
            Ok(_) => panic!("a struct is not a function"),
            Err(e) => e,
        };
        assert_eq!(
            e.to_string(),
            "#[eval] goes on a function: `fn code_review() -> Eval<State>`"
        );
        for item in [
            quote!(
                enum E {}
            ),
            quote!(impl X {}),
            quote!(
                mod m {}
            ),
            quote!(
                static X: u8 = 0;
            ),
            quote!(
                const X: u8 = 0;
            ),
            quote!(
                type X = u8;
            ),
            quote!(
                trait T {}
            ),
            quote!(
                use a::b;
            ),
        ] {
            assert!(parse(Kind::Scorer, item).is_err());
        }
    }

    #[test]
    fn each_signature_mistake_is_reported() {
        let f = parse_fn(quote!(
            async fn gpt_4o(model: &str) -> Workflow<State> {
                todo!()
            }
        ));
        assert_eq!(
            messages(check_signature(Kind::Variant, &f)),
            [
                "#[variant] functions cannot be async: `fn gpt_4o() -> Workflow<State>`; \
                 the harness runs what it returns",
                "#[variant] functions take no arguments: `fn gpt_4o() -> Workflow<State>`",
            ]
        );
        let f = parse_fn(quote!(
            unsafe fn quality<S>() {}
        ));
        assert_eq!(
            messages(check_signature(Kind::Scorer, &f)),
            [
                "#[scorer] functions cannot be unsafe: `fn quality() -> impl Scorer<State>`",
                "#[scorer] functions cannot be generic: `fn quality() -> impl Scorer<State>`",
                "#[scorer] functions must return the scorer: `fn quality() -> impl Scorer<State>`",
            ]
        );
        let f = parse_fn(quote!(
            fn cases() -> Dataset
            where
                u8: Copy,
            {
                todo!()
            }
        ));
        assert_eq!(
            messages(check_signature(Kind::Dataset, &f)),
            ["#[dataset] functions cannot have a where clause: `fn cases() -> Dataset`"]
        );
        let f = parse_fn(quote!(
            fn with_self(&self) -> Eval<S> {
                todo!()
            }
        ));
        assert_eq!(
            messages(check_signature(Kind::Eval, &f)),
            ["#[eval] functions take no arguments: `fn with_self() -> Eval<State>`"]
        );
    }

    #[test]
    fn eval_return_types() {
        for ok in [
            quote!(
                fn e() -> Eval<State> {}
            ),
            quote!(
                fn e() -> scaffold::eval::Eval<crate::State> {}
            ),
            quote!(
                fn e() -> ::scaffold::eval::Eval<(u8, String)> {}
            ),
            quote!(
                fn e() -> (Eval<State>) {}
            ),
            quote!(
                fn e() -> ReviewEval {}
            ),
        ] {
            let f = parse_fn(ok);
            assert!(eval_return_type(&f).is_ok(), "{}", f.to_token_stream());
        }
        for bad in [
            quote!(
                fn code_review() -> Workflow<State> {}
            ),
            quote!(
                fn code_review() -> Result<Eval<State>, String> {}
            ),
            quote!(
                fn code_review() -> Eval {}
            ),
            quote!(
                fn code_review() -> Eval<'static, State> {}
            ),
            quote!(
                fn code_review() -> impl Into<Eval<State>> {}
            ),
            quote!(
                fn code_review() -> &'static Eval<State> {}
            ),
            quote!(
                fn code_review() -> <X as Y>::Eval {}
            ),
        ] {
            let f = parse_fn(bad);
            let e = match eval_return_type(&f) {
                Ok(_) => panic!("accepted {}", f.to_token_stream()),
                Err(e) => e,
            };
            assert_eq!(
                e.to_string(),
                "#[eval] functions return `Eval<State>`, the eval's builder: \
                 `fn code_review() -> Eval<State>`"
            );
        }
    }
}
