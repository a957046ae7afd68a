//! The module tree of one crate, read from its source with `syn`: which file each module is,
//! what each file defines, imports and re-exports, and which other files each file takes names
//! from.
//!
//! Written here because no maintained crate answers "which files of a crate import each other in
//! a loop" for Rust (cargo-modules needs rust-analyzer and a nightly-built toolchain). The
//! resolution is by name, as a reader would do it: a path is followed from `crate`, `self`,
//! `super`, a child module or an imported name, through child modules and re-exports, to the file
//! that defines its item. A `pub use` that only hands a name on is a module's face, not a use of
//! it: the files that name the item depend on the file that defines it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use syn::visit::Visit;

/// One file of a crate's module tree.
#[derive(Debug, Default)]
pub struct ModuleFile {
    pub path: PathBuf,
    parent: Option<usize>,
    children: BTreeMap<String, usize>,
    /// Names of the items the file defines.
    defs: BTreeSet<String>,
    /// `use` names: the name in scope, the path it stands for, and whether it is re-exported.
    uses: BTreeMap<String, (Vec<String>, bool)>,
    globs: Vec<Vec<String>>,
    /// Every path the file's code names (its private imports included), first segment first.
    refs: Vec<Vec<String>>,
}

/// The files of one crate (the tree under its `lib.rs` or `main.rs`), test modules left out.
#[derive(Debug)]
pub struct ModuleTree {
    pub files: Vec<ModuleFile>,
}

impl ModuleTree {
    /// Reads the tree rooted at `root` (a `lib.rs` or `main.rs`).
    pub fn read(root: &Path) -> Result<ModuleTree> {
        let mut tree = ModuleTree { files: Vec::new() };
        tree.add(root.to_path_buf(), None, true)?;
        Ok(tree)
    }

    fn add(&mut self, path: PathBuf, parent: Option<usize>, owns_dir: bool) -> Result<usize> {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let file = syn::parse_file(&text).with_context(|| format!("parsing {}", path.display()))?;
        let index = self.files.len();
        self.files.push(ModuleFile {
            path: path.clone(),
            parent,
            ..ModuleFile::default()
        });
        let dir = child_dir(&path, owns_dir);
        let mut collector = Collector::default();
        for item in &file.items {
            if is_test_only(item_attrs(item)) {
                continue;
            }
            match item {
                syn::Item::Mod(module) if module.content.is_none() => {
                    let name = module.ident.to_string();
                    let (child, owns) = child_file(&dir, &name)?;
                    let child_index = self.add(child, Some(index), owns)?;
                    self.files[index].children.insert(name, child_index);
                }
                syn::Item::Use(item_use) => {
                    let public = !matches!(item_use.vis, syn::Visibility::Inherited);
                    let mut flat = Vec::new();
                    flatten_use(&item_use.tree, Vec::new(), &mut flat);
                    for (name, target) in flat {
                        match name {
                            Some(name) => {
                                if !public {
                                    collector.refs.push(target.clone());
                                }
                                self.files[index].uses.insert(name, (target, public));
                            }
                            None => self.files[index].globs.push(target),
                        }
                    }
                }
                other => {
                    if let Some(name) = item_name(other) {
                        self.files[index].defs.insert(name);
                    }
                    collector.visit_item(other);
                }
            }
        }
        self.files[index].refs = collector.refs;
        Ok(index)
    }

    /// For each file, the files it takes names from, with the names.
    pub fn edges(&self) -> BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>> {
        let mut edges: BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>> = BTreeMap::new();
        for (from, file) in self.files.iter().enumerate() {
            for path in &file.refs {
                if let Some(to) = self.resolve(from, path, 0) {
                    if to != from {
                        let name = path.last().cloned().unwrap_or_default();
                        edges
                            .entry(from)
                            .or_default()
                            .entry(to)
                            .or_default()
                            .insert(name);
                    }
                }
            }
        }
        edges
    }

    /// The file that defines what `path`, named in file `from`, stands for; `None` for a name
    /// from outside the crate (another crate, the prelude, a local binding).
    fn resolve(&self, from: usize, path: &[String], depth: usize) -> Option<usize> {
        if depth > 16 {
            return None;
        }
        let (first, rest) = path.split_first()?;
        match first.as_str() {
            "crate" => self.walk(0, rest, depth),
            "self" => self.walk(from, rest, depth),
            "super" => {
                let mut at = self.files[from].parent?;
                let mut rest = rest;
                while rest.first().map(String::as_str) == Some("super") {
                    at = self.files[at].parent?;
                    rest = &rest[1..];
                }
                self.walk(at, rest, depth)
            }
            name => {
                let file = &self.files[from];
                if let Some(&child) = file.children.get(name) {
                    self.walk(child, rest, depth)
                } else if let Some((target, _)) = file.uses.get(name) {
                    let mut whole = target.clone();
                    whole.extend(rest.iter().cloned());
                    self.resolve(from, &whole, depth + 1)
                } else if file.defs.contains(name) {
                    Some(from)
                } else {
                    self.through_globs(from, path, depth)
                }
            }
        }
    }

    /// A name that file `from` has from one of its glob imports (`use super::*`): the file that
    /// defines it, when a glob's module has it.
    fn through_globs(&self, from: usize, path: &[String], depth: usize) -> Option<usize> {
        let name = path.first()?;
        self.files[from].globs.iter().find_map(|glob| {
            let module = self.resolve(from, glob, depth + 1)?;
            if module != from && self.defines(module, name) {
                self.walk(module, path, depth + 1)
            } else {
                None
            }
        })
    }

    /// Follows `rest` down from module file `at`: child modules, then the item, through
    /// re-exports to the file that defines it; `None` when it is another crate's.
    fn walk(&self, at: usize, rest: &[String], depth: usize) -> Option<usize> {
        let Some((name, after)) = rest.split_first() else {
            return Some(at);
        };
        let file = &self.files[at];
        if let Some(&child) = file.children.get(name) {
            return self.walk(child, after, depth);
        }
        if file.defs.contains(name) {
            return Some(at);
        }
        if let Some((target, _)) = file.uses.get(name) {
            let mut whole = target.clone();
            whole.extend(after.iter().cloned());
            return self.resolve(at, &whole, depth + 1);
        }
        for glob in &file.globs {
            let mut whole = glob.clone();
            whole.extend(rest.iter().cloned());
            if let Some(found) = self.resolve(at, &whole, depth + 1) {
                if found != at && self.defines(found, name) {
                    return Some(found);
                }
            }
        }
        // Not found by name (made by a macro, say): the module that was asked.
        Some(at)
    }

    fn defines(&self, file: usize, name: &str) -> bool {
        let file = &self.files[file];
        file.defs.contains(name) || file.uses.contains_key(name) || file.children.contains_key(name)
    }
}

/// Where the children of the module in `path` live.
fn child_dir(path: &Path, owns_dir: bool) -> PathBuf {
    let parent = path.parent().unwrap_or(Path::new("."));
    if owns_dir {
        parent.to_path_buf()
    } else {
        let stem = path.file_stem().unwrap_or_default();
        parent.join(stem)
    }
}

/// The file of child module `name`, and whether it is a `mod.rs` (whose children sit beside it).
fn child_file(dir: &Path, name: &str) -> Result<(PathBuf, bool)> {
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() {
        return Ok((flat, false));
    }
    let nested = dir.join(name).join("mod.rs");
    if nested.exists() {
        return Ok((nested, true));
    }
    anyhow::bail!("module `{name}` has no file in {}", dir.display())
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .meta
                .require_list()
                .map(|list| list.tokens.to_string() == "test")
                .unwrap_or(false)
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        syn::Item::Mod(i) => &i.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// Flattens a use tree into (name in scope, path); a glob has no name.
fn flatten_use(
    tree: &syn::UseTree,
    prefix: Vec<String>,
    out: &mut Vec<(Option<String>, Vec<String>)>,
) {
    match tree {
        syn::UseTree::Path(path) => {
            let mut prefix = prefix;
            prefix.push(path.ident.to_string());
            flatten_use(&path.tree, prefix, out);
        }
        syn::UseTree::Name(name) => {
            let ident = name.ident.to_string();
            let mut path = prefix.clone();
            if ident == "self" {
                let last = prefix.last().cloned();
                out.push((last, path));
            } else {
                path.push(ident.clone());
                out.push((Some(ident), path));
            }
        }
        syn::UseTree::Rename(rename) => {
            let mut path = prefix;
            path.push(rename.ident.to_string());
            out.push((Some(rename.rename.to_string()), path));
        }
        syn::UseTree::Glob(_) => out.push((None, prefix)),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                flatten_use(tree, prefix.clone(), out);
            }
        }
    }
}

/// Collects the paths a file's code names, leaving out test-only items and modules.
#[derive(Default)]
struct Collector {
    refs: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.refs.push(
            path.segments
                .iter()
                .map(|segment| segment.ident.to_string())
                .collect(),
        );
        syn::visit::visit_path(self, path);
    }

    /// `pub(crate)` and `pub(super)` name no item.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_only(item_attrs(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_test_only(&item.attrs) {
            syn::visit::visit_impl_item_fn(self, item);
        }
    }

    /// Macro bodies (`html!`, `json!`, `format!`) are tokens, not syntax: every `a::b::c` run
    /// of identifiers in them is taken as a path.
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        collect_token_paths(mac.tokens.clone(), &mut self.refs);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut flat = Vec::new();
        flatten_use(&item.tree, Vec::new(), &mut flat);
        self.refs.extend(flat.into_iter().map(|(_, path)| path));
    }
}

fn collect_token_paths(tokens: proc_macro2::TokenStream, out: &mut Vec<Vec<String>>) {
    use proc_macro2::TokenTree;
    let mut current: Vec<String> = Vec::new();
    let mut colons = 0;
    for token in tokens {
        match token {
            TokenTree::Ident(ident) => {
                if colons != 2 && !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                current.push(ident.to_string());
                colons = 0;
            }
            TokenTree::Punct(punct) if punct.as_char() == ':' && !current.is_empty() => {
                colons += 1;
            }
            TokenTree::Group(group) => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                colons = 0;
                collect_token_paths(group.stream(), out);
            }
            _ => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                colons = 0;
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
}
