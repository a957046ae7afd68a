//! Globs and specifier patterns: `*` in names, parts split once, for every decision.

/// `*` matches any run of characters (including none); everything else matches itself.
///
/// ```
/// use domain::policy::glob;
/// assert!(glob("update*", "updateOn"));
/// assert!(glob("*On", "updateOn") && glob("u*d*e*On", "updateOn") && glob("*", ""));
/// assert!(!glob("update*", "createFlag") && !glob("a*a", "a"));
/// ```
pub fn glob(pattern: &str, text: &str) -> bool {
    // Without allocating: it runs for every statement a request is decided against.
    let Some(star) = pattern.find('*') else {
        return pattern == text;
    };
    let Some(mut rest) = text.strip_prefix(&pattern[..star]) else {
        return false;
    };
    let mut pieces = &pattern[star + 1..];
    loop {
        match pieces.find('*') {
            // A middle piece: its leftmost occurrence leaves the most text for the others.
            Some(next) => {
                let piece = &pieces[..next];
                match rest.find(piece) {
                    Some(at) => rest = &rest[at + piece.len()..],
                    None => return false,
                }
                pieces = &pieces[next + 1..];
            }
            // The last piece ends the text, after what the others used.
            None => return rest.len() >= pieces.len() && rest.ends_with(pieces),
        }
    }
}

/// A glob, with the common case (no `*`) told apart once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Glob {
    Exact(String),
    Wild(String),
}

impl Glob {
    pub(crate) fn of(pattern: &str) -> Self {
        if pattern.contains('*') {
            Glob::Wild(pattern.to_owned())
        } else {
            Glob::Exact(pattern.to_owned())
        }
    }

    pub(crate) fn matches(&self, text: &str) -> bool {
        match self {
            Glob::Exact(exact) => exact == text,
            Glob::Wild(pattern) => glob(pattern, text),
        }
    }
}

/// One part of a specifier: its `kind/name` glob and the tags it asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CompiledPart {
    pub(crate) kind_name: Glob,
    pub(crate) tags: Vec<String>,
}

/// Whether a specifier's parts are of `kinds` (`proj`, `env`, ...), whatever their names.
pub(crate) fn of_kinds(spec: &[CompiledPart], kinds: &[&str]) -> bool {
    spec.len() == kinds.len()
        && spec.iter().zip(kinds).all(|(part, kind)| {
            let text = match &part.kind_name {
                Glob::Exact(text) | Glob::Wild(text) => text,
            };
            text.split('/').next() == Some(*kind)
        })
}

/// A specifier split into its parts (`kind/name` glob, `;tags`).
pub(crate) fn compile_specifier(spec: &str) -> Vec<CompiledPart> {
    spec.split(':')
        .map(|part| match part.split_once(';') {
            Some((kind_name, tags)) => CompiledPart {
                kind_name: Glob::of(kind_name),
                tags: tags.split(',').map(str::to_owned).collect(),
            },
            None => CompiledPart {
                kind_name: Glob::of(part),
                tags: Vec::new(),
            },
        })
        .collect()
}
