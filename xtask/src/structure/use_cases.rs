//! Every use case goes through admission: each public method of a use-case facade of `service`
//! (a `pub struct X<'a>(&'a Service)`) takes a `&Permit<…>`, which only `Caller::may` makes (or,
//! for the SDK-facing ones, a `&SdkAccess`, which only opening an SDK key makes), except
//! the few listed in [`WITHOUT_PERMIT`], which are not done by a caller.

use std::collections::BTreeSet;

use anyhow::{bail, Context, Result};
use syn::visit::Visit;

use super::{production_part, relative, workspace_root};

/// Facade methods that take no permit, and why.
const WITHOUT_PERMIT: &[(&str, &str)] = &[
    (
        "Authentication",
        "makes the caller from a secret: nobody is admitted yet",
    ),
    (
        "ConsoleSessions",
        "opens and reads sessions from their secret ids: authentication",
    ),
    (
        "Sdk::open",
        "opens an environment with an SDK key: authentication of an application",
    ),
    (
        "Sdk::open_remembered",
        "opens an environment with an SDK key: authentication of an application",
    ),
    (
        "Webhooks::deliver_due",
        "the background job that sends queued deliveries acts for no caller",
    ),
];

/// The facades declared in `files` (`pub struct X<'a>(&'a Service)`).
fn facades(files: &[syn::File]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for file in files {
        for item in &file.items {
            if let syn::Item::Struct(item) = item {
                let fields = match &item.fields {
                    syn::Fields::Unnamed(fields) => &fields.unnamed,
                    _ => continue,
                };
                let is_service_ref = fields.len() == 1
                    && matches!(&fields[0].ty, syn::Type::Reference(r)
                        if matches!(&*r.elem, syn::Type::Path(p)
                            if p.path.segments.last().is_some_and(|s| s.ident == "Service")));
                if is_service_ref {
                    names.insert(item.ident.to_string());
                }
            }
        }
    }
    names
}

/// Whether `ty` is `&Permit<…>`, or `&SdkAccess` (what an SDK key opened: an application's
/// permit, for the SDK-facing use cases).
fn is_permit(ty: &syn::Type) -> bool {
    let syn::Type::Reference(reference) = ty else {
        return false;
    };
    let syn::Type::Path(path) = &*reference.elem else {
        return false;
    };
    path.path
        .segments
        .last()
        .is_some_and(|segment| segment.ident == "Permit" || segment.ident == "SdkAccess")
}

/// Public methods of facade impls that take no permit, as `Facade::method`.
struct Unadmitted<'f> {
    facades: &'f BTreeSet<String>,
    found: Vec<String>,
}

impl<'ast> Visit<'ast> for Unadmitted<'_> {
    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if item.trait_.is_some() {
            return;
        }
        let syn::Type::Path(path) = &*item.self_ty else {
            return;
        };
        let Some(facade) = path.path.segments.last().map(|s| s.ident.to_string()) else {
            return;
        };
        if !self.facades.contains(&facade) {
            return;
        }
        for inner in &item.items {
            let syn::ImplItem::Fn(method) = inner else {
                continue;
            };
            if !matches!(method.vis, syn::Visibility::Public(_)) {
                continue;
            }
            let takes_permit = method
                .sig
                .inputs
                .iter()
                .any(|input| matches!(input, syn::FnArg::Typed(typed) if is_permit(&typed.ty)));
            let name = format!("{facade}::{}", method.sig.ident);
            let excused = WITHOUT_PERMIT
                .iter()
                .any(|(listed, _)| *listed == facade || *listed == name);
            if !takes_permit && !excused {
                self.found.push(name);
            }
        }
    }
}

/// Fails, naming each, if a public use case of a facade takes no `&Permit`.
pub fn check_use_cases_take_permits() -> Result<()> {
    let root = workspace_root();
    let mut paths = Vec::new();
    super::collect_rust_files(&root.join("crates/service/src"), &mut paths)?;
    let mut files = Vec::new();
    for path in &paths {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file = syn::parse_file(production_part(&text))
            .with_context(|| format!("parsing {}", relative(&root, path)))?;
        files.push(file);
    }
    let facades = facades(&files);
    if facades.len() < 10 {
        bail!(
            "found only {} use-case facades in service: {facades:?}",
            facades.len()
        );
    }
    let mut unadmitted = Unadmitted {
        facades: &facades,
        found: Vec::new(),
    };
    for file in &files {
        unadmitted.visit_file(file);
    }
    if !unadmitted.found.is_empty() {
        bail!(
            "use cases that take no &Permit (admission, `Caller::may`, must be asked first):\n  {}",
            unadmitted.found.join("\n  ")
        );
    }
    println!(
        "check-deps: every use case of {} facades takes a permit",
        facades.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unadmitted(source: &str) -> Vec<String> {
        let file = syn::parse_file(source).unwrap();
        let facades = facades(std::slice::from_ref(&file));
        let mut visitor = Unadmitted {
            facades: &facades,
            found: Vec::new(),
        };
        visitor.visit_file(&file);
        visitor.found
    }

    #[test]
    fn a_public_use_case_without_a_permit_is_found() {
        let source = "pub struct Flags<'a>(&'a Service);
            impl Flags<'_> {
                pub fn get(&self, permit: &Permit<use_case::GetFlag>, key: &str) {}
                pub fn delete(&self, caller: &Caller, key: &str) {}
                fn helper(&self, caller: &Caller) {}
            }
            impl Service { pub fn other(&self, caller: &Caller) {} }
            impl Clone for Flags<'_> { fn clone(&self) -> Self { *self } }";
        assert_eq!(unadmitted(source), ["Flags::delete"]);
    }

    #[test]
    fn listed_facades_and_methods_are_excused() {
        let source = "pub struct Authentication<'a>(&'a Service);
            impl Authentication<'_> { pub fn authenticate(&self, secret: &str) {} }
            pub struct Webhooks<'a>(&'a Service);
            impl Webhooks<'_> {
                pub fn deliver_due(&self, limit: u32) {}
                pub fn list(&self, caller: &Caller) {}
            }";
        assert_eq!(unadmitted(source), ["Webhooks::list"]);
    }
}
